"""Sessions refuse what would corrupt them: a second concurrent run, a second writer
through a symlink, silent loss of damaged lines, leftovers of interrupted rewrites, and
unwritable places (a typed error saying what to do, not a traceback)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tether.errors import SessionBusyError, SessionError, SessionLockedError, TetherError
from tether.events import SessionRepaired
from tether.messages import Message, TextBlock, ToolCallBlock, ToolResultBlock
from tether.sessions import InMemorySession, JsonlSession, SessionStore, load_session_file
from tether.testing import Reply, assert_invariant

GOOD = Message.user("before the damage").to_json().encode()
LATER = Message.user("after the damage").to_json().encode()
HEADER = b'{"tether_session": 1, "id": "s1", "created_at": 1.0}\n'


# -- one run per session at a time -----------------------------------------------------------
async def test_a_second_concurrent_run_on_one_session_is_refused(make_agent) -> None:  # type: ignore[no-untyped-def]
    gate = asyncio.Event()
    running = asyncio.Event()

    async def wait_for_gate() -> str:
        """Waits until the test opens the gate."""
        running.set()
        await gate.wait()
        return "opened"

    from tether.testing import call
    from tether.tools import tool

    slow = tool(wait_for_gate)
    agent, provider = make_agent(
        [Reply(tool_calls=[call("wait_for_gate")]), Reply(text="first done")],
        tools=[slow],
        session=InMemorySession(),
    )
    first = asyncio.create_task(agent.run("first"))
    await running.wait()
    with pytest.raises(SessionBusyError, match="already in use by another run"):
        await agent.run("second")
    gate.set()
    result = await first
    assert result.output == "first done"
    history = list(agent.session.messages)
    assert_invariant(history)
    assert [m.text for m in history if m.role == "user"] == ["first"]
    # Once the first run is over, the session takes the next one.
    provider.queue(Reply(text="second done"))
    assert (await agent.run("second")).output == "second done"


# -- one writer per real file ---------------------------------------------------------------
def test_a_symlink_to_an_open_session_is_not_a_second_writer(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    link = tmp_path / "link.jsonl"
    with JsonlSession(real) as session:
        session.append(Message.user("one"))
        link.symlink_to(real)
        with pytest.raises(SessionLockedError):
            JsonlSession(link)


def test_a_rewrite_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    link = tmp_path / "link.jsonl"
    JsonlSession(real).close()
    link.symlink_to(real)
    with JsonlSession(link) as session:
        session.append(Message.user("one"))
        session.replace([Message.user("compacted")])
        session.append(Message.user("two"))
    assert link.is_symlink()
    assert [m.text for m in load_session_file(real).messages] == ["compacted", "two"]


# -- damage is kept, a torn tail is not ---------------------------------------------------------
def test_damage_in_the_middle_is_kept_beside_the_file_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    damaged = HEADER + GOOD + b"\n{not json at all}\n" + LATER + b"\n"
    path.write_bytes(damaged)
    with JsonlSession(path) as session:
        assert [m.text for m in session.messages] == ["before the damage", "after the damage"]
        summary = session.repair_report.summary()
    copies = list(tmp_path.glob("s.jsonl.corrupt-*"))
    assert len(copies) == 1 and copies[0].read_bytes() == damaged
    assert f"the damaged file was kept unchanged as {copies[0].name}" in summary
    assert b"not json" not in path.read_bytes()


def test_a_torn_last_line_is_repaired_silently_without_a_copy(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(HEADER + GOOD + b"\n" + LATER[:25])
    with JsonlSession(path) as session:
        assert [m.text for m in session.messages] == ["before the damage"]
        assert session.repair_report.counts() == {"unparseable_line": 1}
    assert not list(tmp_path.glob("*.corrupt-*"))


def test_the_run_and_the_cli_say_where_the_damaged_original_is(
    tmp_path: Path, make_agent, monkeypatch: pytest.MonkeyPatch
) -> None:  # type: ignore[no-untyped-def]
    from tether_cli import cli

    monkeypatch.setenv("TETHER_DATA_DIR", str(tmp_path))
    store = SessionStore(tmp_path / "sessions")
    store.root.mkdir()
    store.path("work").write_bytes(HEADER + GOOD + b"\n\xff\xfe garbage\n" + LATER + b"\n")
    result = CliRunner().invoke(cli, ["sessions", "repair", "work"])
    assert result.exit_code == 0, result.output
    assert "kept unchanged as work.jsonl.corrupt-" in result.output

    store.path("other").write_bytes(HEADER + GOOD + b"\n{broken\n" + LATER + b"\n")
    session = store.open("other")
    agent, _ = make_agent([Reply(text="hi")], session=session)

    async def events() -> list[object]:
        return [event async for event in agent.stream("hello")]

    repaired = [e for e in asyncio.run(events()) if isinstance(e, SessionRepaired)]
    session.close()
    assert "kept unchanged as other.jsonl.corrupt-" in repaired[0].report.summary()


# -- temporary files and unwritable places --------------------------------------------------
def test_temporaries_of_an_interrupted_rewrite_are_removed_on_open(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    JsonlSession(path).close()
    leftover = tmp_path / ".s.jsonl.12345.deadbeef.tmp"
    leftover.write_bytes(b"half a rewrite")
    unrelated = tmp_path / ".other.jsonl.12345.deadbeef.tmp"
    unrelated.write_bytes(b"another session's")
    JsonlSession(path).close()
    assert not leftover.exists()
    assert unrelated.exists()


needs_permissions = pytest.mark.skipif(
    os.name != "posix" or os.geteuid() == 0, reason="root ignores file permissions"
)


def _read_only(path: Path) -> None:
    path.chmod(0o500 if path.is_dir() else 0o400)


@needs_permissions
def test_a_read_only_directory_gives_a_typed_error_saying_what_to_do(tmp_path: Path) -> None:
    directory = tmp_path / "ro"
    directory.mkdir()
    _read_only(directory)
    try:
        with pytest.raises(SessionError, match="read_only=True"):
            JsonlSession(directory / "s.jsonl")
    finally:
        directory.chmod(0o700)


@needs_permissions
def test_a_read_only_file_gives_a_typed_error_saying_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    JsonlSession(path).close()
    _read_only(path)
    with pytest.raises(SessionError, match=r"Permission denied.*read_only=True"):
        JsonlSession(path)
    with JsonlSession(path, read_only=True) as session:
        assert session.messages == []


def test_unwritable_places_give_a_typed_error_even_as_root(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where a directory should be")
    with pytest.raises(SessionError, match="Cannot create the directory"):
        JsonlSession(blocker / "sub" / "s.jsonl")
    with pytest.raises(SessionError, match="is a directory"):
        load_session_file(tmp_path)


# -- the loader never fails untyped --------------------------------------------------------------
def _line(message: Message) -> bytes:
    return message.to_json().encode() + b"\n"


FRAGMENTS = [
    HEADER,
    b'{"tether_session": 9}\n',
    b'{"tether_session": 1, "id": 5, "created_at": 1e400}\n',
    b'{"tether_session": [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n',
    b'{"tether_session": ' + b"[" * 5000 + b"\n",
    b'{"role": "user", "content": ' + b"[" * 5000 + b"\n",
    _line(Message.user("hello")),
    _line(
        Message(
            role="assistant",
            content=[TextBlock(text="x"), ToolCallBlock(id="c1", name="f", arguments={"a": 1})],
        )
    ),
    _line(Message.tool([ToolResultBlock(call_id="c1", content="r")])),
    b'{"role": "tool", "content": [{"type": "tool_result", "call_id": "zz"}]}\n',
    b'{"role": "wizard", "content": []}\n',
    b'{"role": "user", "content": [{"type": "image", "mime_type": 5}]}\n',
    b"\xef\xbb\xbf",
    b"\x00\x00\x00\n",
    b"\xff\xfe\xfd\n",
    b"\n",
    b'{"role":',
]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.binary(max_size=64)), max_size=12))
def test_loading_any_bytes_gives_a_history_or_a_typed_error(chunks: list[bytes]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "s.jsonl"
        path.write_bytes(b"".join(chunks))
        try:
            loaded = load_session_file(path)
        except SessionError:
            return
        except TetherError as exc:  # pragma: no cover - a typed error of the wrong kind
            raise AssertionError(f"unexpected error type {type(exc).__name__}: {exc}") from exc
        assert_invariant(loaded.messages)
        # A writer opens the same bytes, stores the repair, and reads it back unchanged.
        try:
            with JsonlSession(path, durable=False) as session:
                again = [m.id for m in session.messages]
        except SessionError:
            return
        assert [m.id for m in load_session_file(path).messages] == again
        assert not load_session_file(path).report
