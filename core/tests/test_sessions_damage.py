"""Every kind of damage a crash (or a bug) can leave, and the history it repairs to."""

from __future__ import annotations

import json
from pathlib import Path

from tether.messages import (
    Message,
    MessageMeta,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    UnknownBlock,
)
from tether.sessions import JsonlSession, load_session_file, repair_messages
from tether.sessions.repair import INTERRUPTED_ON_LOAD
from tether.testing import assert_invariant

HEADER = b'{"tether_session": 1, "id": "s1", "created_at": 1.0}\n'


def user(text: str, id: str) -> Message:
    return Message(role="user", content=[TextBlock(text=text)], meta=MessageMeta(id=id))


def asks(id: str, *call_ids: str) -> Message:
    return Message(
        role="assistant",
        content=[
            TextBlock(text="on it"),
            *(ToolCallBlock(id=c, name="read", arguments={"c": c}) for c in call_ids),
        ],
        meta=MessageMeta(id=id),
    )


def answers(id: str, *call_ids: str) -> Message:
    return Message.tool(
        [ToolResultBlock(call_id=c, content=f"result {c}") for c in call_ids]
    ).model_copy(update={"meta": MessageMeta(id=id)})


def shape(messages: list[Message] | tuple[Message, ...]) -> list[tuple[str, list[str]]]:
    """Role and a compact view of each message: text, call ids, result ids (+error mark)."""
    out = []
    for m in messages:
        items = []
        for b in m.content:
            if isinstance(b, TextBlock):
                items.append(b.text)
            elif isinstance(b, ToolCallBlock):
                items.append(f"call:{b.id}")
            elif isinstance(b, ToolResultBlock):
                items.append(f"result:{b.call_id}{'!' if b.is_error else ''}")
        out.append((m.role, items))
    return out


def lines(*messages: Message) -> bytes:
    return b"".join(m.to_json().encode() + b"\n" for m in messages)


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    return path


# -- file damage ------------------------------------------------------------------------------
def test_empty_file_is_an_empty_session(tmp_path: Path) -> None:
    loaded = load_session_file(write(tmp_path, b""))
    assert loaded.messages == [] and not loaded.report


def test_missing_file_is_an_empty_session(tmp_path: Path) -> None:
    assert load_session_file(tmp_path / "nope.jsonl").messages == []


def test_truncated_last_line_is_dropped(tmp_path: Path) -> None:
    full = lines(user("one", "u1"), user("two", "u2"))
    path = write(tmp_path, HEADER + full[:-25])  # the second line was cut mid-write
    loaded = load_session_file(path)
    assert shape(loaded.messages) == [("user", ["one"])]
    assert loaded.report.counts() == {"unparseable_line": 1}
    assert loaded.report.actions[0].line == 3


def test_complete_last_line_without_newline_is_kept(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + lines(user("one", "u1"))[:-1])
    loaded = load_session_file(path)
    assert shape(loaded.messages) == [("user", ["one"])]
    assert not loaded.clean  # the next append must not be glued to this line: rewrite first
    with JsonlSession(path) as session:
        session.append(user("two", "u2"))
    assert shape(load_session_file(path).messages) == [("user", ["one"]), ("user", ["two"])]


def test_torn_line_followed_by_a_message_on_the_same_line(tmp_path: Path) -> None:
    torn = lines(user("lost", "u0"))[:30]
    path = write(tmp_path, HEADER + torn + lines(user("kept", "u1")))
    loaded = load_session_file(path)
    assert shape(loaded.messages) == [("user", ["kept"])]
    assert loaded.report.counts() == {"unparseable_line": 1}


def test_bytes_that_are_not_utf8(tmp_path: Path) -> None:
    good = lines(user("before", "u1"))
    bad = lines(user("caf\u00e9", "u2")).replace("\u00e9".encode(), b"\xe9")  # latin-1 inside
    garbage = b"\xff\xfe\x00garbage\x80\x81\n"
    path = write(tmp_path, HEADER + good + bad + garbage + lines(user("after", "u3")))
    loaded = load_session_file(path)
    assert shape(loaded.messages) == [
        ("user", ["before"]),
        ("user", ["caf\ufffd"]),
        ("user", ["after"]),
    ]
    assert loaded.report.counts() == {"invalid_utf8": 1, "unparseable_line": 1}


def test_byte_order_mark_and_missing_header(tmp_path: Path) -> None:
    path = write(tmp_path, b"\xef\xbb\xbf" + lines(user("hi", "u1")))
    loaded = load_session_file(path)
    assert shape(loaded.messages) == [("user", ["hi"])]
    assert loaded.report.counts() == {"bom": 1, "missing_header": 1}
    with JsonlSession(path):
        pass
    data = path.read_bytes()
    assert data.startswith(b'{"tether_session": 1')
    assert not load_session_file(path).report


def test_nul_padding_after_power_loss(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + lines(user("hi", "u1")) + b"\x00" * 4096)
    loaded = load_session_file(path)
    assert shape(loaded.messages) == [("user", ["hi"])]


def test_json_that_is_not_a_message(tmp_path: Path) -> None:
    path = write(tmp_path, HEADER + b'{"hello": "world"}\n[1, 2]\n' + lines(user("hi", "u1")))
    loaded = load_session_file(path)
    assert shape(loaded.messages) == [("user", ["hi"])]
    assert loaded.report.counts() == {"unparseable_line": 2}


# -- history damage ---------------------------------------------------------------------------
def test_call_without_result_gets_an_interrupted_error_result() -> None:
    repaired, report = repair_messages([user("go", "u1"), asks("a1", "c1", "c2")])
    assert shape(repaired) == [
        ("user", ["go"]),
        ("assistant", ["on it", "call:c1", "call:c2"]),
        ("tool", ["result:c1!", "result:c2!"]),
    ]
    assert repaired[2].tool_results[0].text == INTERRUPTED_ON_LOAD
    assert report.counts() == {"interrupted_call": 2}


def test_partial_results_are_completed_in_call_order() -> None:
    repaired, report = repair_messages([asks("a1", "c1", "c2", "c3"), answers("t1", "c3", "c1")])
    assert shape(repaired)[1] == ("tool", ["result:c1", "result:c2!", "result:c3"])
    assert report.counts() == {"interrupted_call": 1, "moved_result": 1}
    assert repaired[1].id == "t1"  # the tool message keeps its identity


def test_results_are_moved_to_directly_after_their_call() -> None:
    history = [asks("a1", "c1"), user("meanwhile", "u1"), answers("t1", "c1")]
    repaired, report = repair_messages(history)
    assert shape(repaired) == [
        ("assistant", ["on it", "call:c1"]),
        ("tool", ["result:c1"]),
        ("user", ["meanwhile"]),
    ]
    assert report.counts() == {"moved_result": 1}


def test_results_without_a_call_are_dropped() -> None:
    history = [
        user("hi", "u1"),
        answers("t1", "ghost"),
        asks("a1", "c1"),
        answers("t2", "c1", "other"),
    ]
    repaired, report = repair_messages(history)
    assert shape(repaired) == [
        ("user", ["hi"]),
        ("assistant", ["on it", "call:c1"]),
        ("tool", ["result:c1"]),
    ]
    assert report.counts() == {"orphan_result": 2}


def test_duplicate_messages_are_kept_once() -> None:
    message = user("hi", "u1")
    repaired, report = repair_messages(
        [message, message.model_copy(), asks("a1", "c1"), answers("t1", "c1"), answers("t1", "c1")]
    )
    assert shape(repaired) == [
        ("user", ["hi"]),
        ("assistant", ["on it", "call:c1"]),
        ("tool", ["result:c1"]),
    ]
    assert report.counts() == {"duplicate_message": 2}


def test_different_messages_sharing_an_id_both_survive() -> None:
    repaired, report = repair_messages([user("one", "same"), user("two", "same")])
    assert shape(repaired) == [("user", ["one"]), ("user", ["two"])]
    assert repaired[0].id == "same" and repaired[1].id != "same"
    assert report.counts() == {"renamed_message_id": 1}


def test_a_call_id_reused_by_a_later_turn_is_valid_and_left_alone() -> None:
    history = [asks("a1", "c1"), answers("t1", "c1"), asks("a2", "c1"), answers("t2", "c1")]
    repaired, report = repair_messages(history)
    assert not report
    assert all(a is b for a, b in zip(repaired, history, strict=True))
    assert_invariant(repaired)


def test_a_session_reusing_call_ids_across_turns_loads_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with JsonlSession(path) as session:
        for message in [
            asks("a1", "c1"),
            answers("t1", "c1"),
            asks("a2", "c1"),
            answers("t2", "c1"),
        ]:
            session.append(message)
    before = path.read_bytes()
    with JsonlSession(path) as session:
        assert not session.repair_report
        assert [m.id for m in session.messages] == ["a1", "t1", "a2", "t2"]
    assert path.read_bytes() == before


def test_a_result_after_a_reused_id_answers_the_latest_call() -> None:
    # The second turn's result is missing: it must not borrow the first turn's.
    history = [asks("a1", "c1"), answers("t1", "c1"), asks("a2", "c1")]
    repaired, report = repair_messages(history)
    assert_invariant(repaired)
    assert repaired[1].tool_results[0].text == "result c1"
    assert repaired[3].tool_results[0].is_error
    assert report.counts() == {"interrupted_call": 1}


def test_a_byte_identical_repeated_call_collapses_into_one() -> None:
    call = ToolCallBlock(id="c1", name="read", arguments={"path": "a"})
    doubled = Message(
        role="assistant", content=[call, call.model_copy()], meta=MessageMeta(id="a1")
    )
    repaired, report = repair_messages([doubled, answers("t1", "c1", "c1")])
    assert shape(repaired) == [("assistant", ["call:c1"]), ("tool", ["result:c1"])]
    assert report.counts() == {"duplicate_call": 1, "duplicate_result": 1}
    assert_invariant(repaired)


def test_a_different_call_reusing_an_id_in_one_message_is_renamed_with_its_result() -> None:
    first = ToolCallBlock(id="c1", name="read", arguments={"path": "a"})
    second = ToolCallBlock(id="c1", name="read", arguments={"path": "b"})
    message = Message(role="assistant", content=[first, second], meta=MessageMeta(id="a1"))
    results = Message.tool(
        [ToolResultBlock(call_id="c1", content="A"), ToolResultBlock(call_id="c1", content="B")]
    )
    repaired, report = repair_messages([message, results])
    assert_invariant(repaired)
    renamed = repaired[0].tool_calls[1].id
    assert renamed != "c1"
    assert [(r.call_id, r.text) for r in repaired[1].tool_results] == [("c1", "A"), (renamed, "B")]
    assert report.counts() == {"renamed_call_id": 1}


def test_intact_history_is_returned_unchanged() -> None:
    history = [
        user("go", "u1"),
        asks("a1", "c1", "c2"),
        answers("t1", "c1", "c2"),
        user("next", "u2"),
    ]
    repaired, report = repair_messages(history)
    assert not report and report.summary() == "nothing to repair"
    assert all(a is b for a, b in zip(repaired, history, strict=True))


def test_repair_is_idempotent_on_every_kind_of_damage() -> None:
    message = user("hi", "u1")
    history = [
        message,
        message,
        answers("t0", "ghost"),
        asks("a1", "c1", "c2"),
        answers("t1", "c2"),
        user("other", "u1"),
        asks("a2", "c1"),
        answers("t2", "c1"),
        asks("a3", "c9"),
    ]
    once, first = repair_messages(history)
    assert first
    assert_invariant(once)
    twice, second = repair_messages(once)
    assert not second, second.actions
    assert [m.model_dump() for m in twice] == [m.model_dump() for m in once]
    # ... and through the file: loading a repaired file repairs nothing.
    _, third = repair_messages([Message.from_json(m.to_json()) for m in once])
    assert not third


def test_repair_is_written_back_atomically_and_reported(tmp_path: Path) -> None:
    path = write(
        tmp_path, HEADER + lines(user("go", "u1"), asks("a1", "c1")) + b'{"role": "tool", "con'
    )
    with JsonlSession(path) as session:
        assert session.repair_report.counts() == {"unparseable_line": 1, "interrupted_call": 1}
        assert session.id == "s1"
    rows = [json.loads(line) for line in path.read_bytes().splitlines()]
    assert rows[0] == {"tether_session": 1, "id": "s1", "created_at": 1.0}
    assert [r["role"] for r in rows[1:]] == ["user", "assistant", "tool"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]  # no temporary file left


def test_read_only_load_does_not_write(tmp_path: Path) -> None:
    data = HEADER + lines(asks("a1", "c1"))
    path = write(tmp_path, data)
    with JsonlSession(path, read_only=True) as session:
        assert session.repair_report.counts() == {"interrupted_call": 1}
    assert path.read_bytes() == data


def test_near_intact_histories_are_still_repaired() -> None:
    """Histories one small step from intact: each is reported and repaired."""
    reordered = [user("go", "u1"), asks("a1", "c1", "c2"), answers("t1", "c2", "c1")]
    leading_tool = [answers("t0", "c0"), user("go", "u1")]
    trailing_call = [user("go", "u1"), asks("a1", "c1")]
    for history in (reordered, leading_tool, trailing_call):
        repaired, report = repair_messages(history)
        assert report, shape(history)
        assert_invariant(repaired)
    assert shape(repair_messages(reordered)[0])[2] == ("tool", ["result:c1", "result:c2"])


def test_blocks_of_unknown_type_load_and_broken_known_blocks_do_not(tmp_path: Path) -> None:
    unknown = (
        '{"role":"assistant","content":[{"type":"citation","source":"d7"}],"meta":{"id":"a1"}}'
    )
    broken = '{"role":"user","content":[{"type":"text"}],"meta":{"id":"u1"}}'
    path = write(tmp_path, HEADER + f"{unknown}\n{broken}\n".encode())
    loaded = load_session_file(path)
    assert len(loaded.messages) == 1
    (block,) = loaded.messages[0].content
    assert isinstance(block, UnknownBlock) and block.model_dump() == {
        "type": "citation",
        "source": "d7",
    }
    assert loaded.report.counts() == {"unparseable_line": 1}
    assert loaded.report.actions[0].line == 3


def test_damage_deep_in_a_long_file_is_reported_at_its_line(tmp_path: Path) -> None:
    history = [user(f"message {n}", f"u{n}") for n in range(9_000)]
    rows = [m.to_json().encode() for m in history]
    rows[6_000] = rows[6_000][:25]  # torn in the middle of the file, on line 6002
    path = write(tmp_path, HEADER + b"\n".join(rows) + b"\n")
    loaded = load_session_file(path)
    assert [m.text for m in loaded.messages] == [
        m.text for i, m in enumerate(history) if i != 6_000
    ]
    assert [(a.kind, a.line) for a in loaded.report.actions] == [("unparseable_line", 6_002)]
