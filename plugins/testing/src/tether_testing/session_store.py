"""The session-store contract: one suite that every session store must pass.

Subclass :class:`SessionStoreContract` in your store's tests and give it a
``store_factory`` fixture returning a function that makes a fresh store object (called
inside the test's own event loop, so connect lazily)::

    import pytest
    from tether_testing import SessionStoreContract

    class TestMyStore(SessionStoreContract):
        @pytest.fixture
        def store_factory(self, tmp_path):
            return lambda: MyStore(path=str(tmp_path / "sessions.db"))

Every test uses session names of its own and removes them at the end. A store whose
second writer is refused when it opens a session (the JSONL store's file lock, the
writer lease of the shared stores) sets ``exclusive_open = True``; such a store must
never answer a live writer's tool call in flight when another writer or a reader opens
the session; the others must refuse the later of two conflicting writes
with :class:`~tether.errors.SessionConflictError`. A store that can store a damaged line
(to check repair on load) implements :meth:`SessionStoreContract.store_raw_line`.

The tests are plain functions that run their own event loop, so the suite needs no
asyncio plugin for pytest.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import pytest

from tether.errors import SessionConflictError, SessionError, SessionLockedError
from tether.messages import (
    Message,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    new_id,
)
from tether.sessions.backend import SessionBackend
from tether.sessions.base import append_message, close_session, replace_messages
from tether.testing.invariant import assert_invariant

__all__ = ["SessionStoreContract"]

StoreFactory = Callable[[], SessionBackend]


def _name(label: str) -> str:
    return f"contract-{label}-{new_id()[:10]}"


def _assistant_with_calls(*call_ids: str) -> Message:
    return Message(
        role="assistant",
        content=[
            TextBlock(text="Let me look."),
            *(ToolCallBlock(id=c, name="lookup", arguments={"q": c}) for c in call_ids),
        ],
    )


def _results(*call_ids: str) -> Message:
    return Message.tool([ToolResultBlock(call_id=c, content=f"result {c}") for c in call_ids])


def _texts(messages: Any) -> list[str]:
    return [m.text for m in messages]


class SessionStoreContract:
    """Behaviour every session store promises; see the module docstring for use."""

    exclusive_open = False
    """True if a second writer is refused at ``open`` (``SessionLockedError``)."""

    async def store_raw_line(self, store: Any, name: str, line: str) -> bool:
        """Append ``line`` verbatim to session ``name`` behind the store's back (a damaged
        record). Return ``False`` (the default) if the store cannot hold such a line."""
        return False

    # -- harness --------------------------------------------------------------------------
    def _run(
        self,
        factory: StoreFactory,
        scenario: Callable[[SessionBackend, list[str]], Awaitable[None]],
    ) -> None:
        async def main() -> None:
            store = factory()
            names: list[str] = []
            try:
                await scenario(store, names)
            finally:
                for name in names:
                    try:
                        if await store.exists(name):
                            await store.remove(name)
                    except SessionError:
                        pass
                await store.aclose()

        _run_coroutine(main())

    # -- tests ----------------------------------------------------------------------------
    def test_open_creates_an_empty_session_with_a_stable_id(
        self, store_factory: StoreFactory
    ) -> None:
        async def scenario(store: SessionBackend, names: list[str]) -> None:
            name = _name("new")
            names.append(name)
            assert not await store.exists(name)
            session = await store.open(name)
            assert list(session.messages) == []
            first_id = session.id
            await close_session(session)
            assert await store.exists(name)
            again = await store.open(name)
            assert again.id == first_id
            await close_session(again)

        self._run(store_factory, scenario)

    def test_appended_messages_survive_reopening_in_order(
        self, store_factory: StoreFactory
    ) -> None:
        async def scenario(store: SessionBackend, names: list[str]) -> None:
            name = _name("append")
            names.append(name)
            session = await store.open(name)
            written = [
                Message.user("Hello ✓ — 你好 \U0001f600"),
                Message(
                    role="assistant",
                    content=[
                        ThinkingBlock(text="thinking...", signature="sig"),
                        ToolCallBlock(id="c1", name="lookup", arguments={"q": "x" * 5000}),
                    ],
                ),
                _results("c1"),
                Message(role="assistant", content=[TextBlock(text="Done.")]),
            ]
            for message in written:
                await append_message(session, message)
            assert list(session.messages) == written
            await close_session(session)
            reopened = await store.open(name, read_only=True)
            assert [m.to_json() for m in reopened.messages] == [m.to_json() for m in written]
            assert_invariant(reopened.messages)
            await close_session(reopened)

        self._run(store_factory, scenario)

    def test_replace_swaps_the_whole_history(self, store_factory: StoreFactory) -> None:
        async def scenario(store: SessionBackend, names: list[str]) -> None:
            name = _name("replace")
            names.append(name)
            session = await store.open(name)
            for text in ("one", "two", "three"):
                await append_message(session, Message.user(text))
            summary = Message(role="assistant", content=[TextBlock(text="summary of one, two")])
            await replace_messages(session, [summary, session.messages[-1]])
            await append_message(session, Message.user("four"))
            await close_session(session)
            reopened = await store.open(name, read_only=True)
            assert _texts(reopened.messages) == ["summary of one, two", "three", "four"]
            await close_session(reopened)

        self._run(store_factory, scenario)

    def test_unanswered_tool_calls_are_repaired_on_load(self, store_factory: StoreFactory) -> None:
        async def scenario(store: SessionBackend, names: list[str]) -> None:
            name = _name("repair")
            names.append(name)
            session = await store.open(name)
            await append_message(session, Message.user("look it up"))
            await append_message(session, _assistant_with_calls("a", "b"))  # then a crash
            await close_session(session)
            reopened = await store.open(name)
            assert_invariant(reopened.messages)
            results = reopened.messages[-1].tool_results
            assert [r.call_id for r in results] == ["a", "b"]
            assert all(r.is_error and "nterrupted" in r.text for r in results)
            assert getattr(reopened, "repair_report", True)
            await append_message(reopened, Message.user("go on"))
            await close_session(reopened)
            # The writer stored the repair: a reader finds the history intact as stored.
            reader = await store.open(name, read_only=True)
            assert_invariant(reader.messages)
            assert _texts(reader.messages)[-1] == "go on"
            assert not getattr(reader, "repair_report", None)
            await close_session(reader)

        self._run(store_factory, scenario)

    def test_damaged_records_are_set_aside_on_load(self, store_factory: StoreFactory) -> None:
        async def scenario(store: SessionBackend, names: list[str]) -> None:
            name = _name("damaged")
            names.append(name)
            session = await store.open(name)
            await append_message(session, Message.user("kept"))
            await close_session(session)
            if not await self.store_raw_line(store, name, '{"role": "assistant", "cont'):
                pytest.skip("this store cannot hold a damaged record")
            reopened = await store.open(name)
            assert _texts(reopened.messages) == ["kept"]
            quarantined = getattr(store, "quarantined", None)
            if quarantined is not None:  # moved aside, never just deleted
                assert await quarantined(name) == ['{"role": "assistant", "cont']
            await append_message(reopened, Message.user("after"))
            await close_session(reopened)
            reader = await store.open(name, read_only=True)
            assert _texts(reader.messages) == ["kept", "after"]
            await close_session(reader)

        self._run(store_factory, scenario)

    def test_two_writers_never_interleave(self, store_factory: StoreFactory) -> None:
        async def scenario(store: SessionBackend, names: list[str]) -> None:
            name = _name("conflict")
            names.append(name)
            first = await store.open(name)
            await append_message(first, Message.user("base"))
            if self.exclusive_open:
                with pytest.raises(SessionLockedError):
                    await store.open(name)
                await close_session(first)
                return
            second = await store.open(name)
            assert _texts(second.messages) == ["base"]
            await append_message(first, Message.user("from the first writer"))
            with pytest.raises(SessionConflictError) as caught:
                await append_message(second, Message.user("from the second writer"))
            assert caught.value.session == name
            with pytest.raises(SessionConflictError):
                await replace_messages(second, [])
            assert _texts(second.messages) == ["base"]  # the loser's view is unchanged
            await close_session(first)
            await close_session(second)
            reader = await store.open(name, read_only=True)
            assert _texts(reader.messages) == ["base", "from the first writer"]
            await close_session(reader)

        self._run(store_factory, scenario)

    def test_a_live_writers_call_in_flight_is_never_answered_by_another_opener(
        self, store_factory: StoreFactory
    ) -> None:
        if not self.exclusive_open:
            pytest.skip("the store lets two writers open a session")

        async def scenario(store: SessionBackend, names: list[str]) -> None:
            name = _name("inflight")
            names.append(name)
            live = await store.open(name)
            await append_message(live, Message.user("look it up"))
            await append_message(live, _assistant_with_calls("slow"))  # the tool is running
            for _ in range(2):
                with pytest.raises(SessionLockedError):
                    await store.open(name)
            # The live writer finishes its call: nobody answered it in the meantime.
            await append_message(live, _results("slow"))
            await append_message(live, Message(role="assistant", content=[TextBlock(text="ok")]))
            await close_session(live)
            reader = await store.open(name, read_only=True)
            assert _texts(reader.messages)[-1] == "ok"
            results = [r for m in reader.messages for r in m.tool_results]
            assert [(r.call_id, r.is_error, r.text) for r in results] == [
                ("slow", False, "result slow")
            ]
            assert_invariant(reader.messages)
            await close_session(reader)
            # Once the writer closed, the next writer gets the session at once.
            after = await store.open(name)
            await append_message(after, Message.user("next"))
            await close_session(after)

        self._run(store_factory, scenario)

    def test_concurrent_writers_that_retry_lose_nothing(self, store_factory: StoreFactory) -> None:
        if self.exclusive_open:
            pytest.skip("one writer at a time by construction")

        async def scenario(store: SessionBackend, names: list[str]) -> None:
            name = _name("race")
            names.append(name)
            await close_session(await store.open(name))

            async def writer(label: str) -> int:
                conflicts = 0
                session = await store.open(name)
                for index in range(8):
                    while True:
                        try:
                            await append_message(session, Message.user(f"{label}{index}"))
                            break
                        except SessionConflictError:
                            conflicts += 1
                            await close_session(session)
                            session = await store.open(name)
                    await asyncio.sleep(0)
                await close_session(session)
                return conflicts

            await asyncio.gather(writer("a"), writer("b"), writer("c"))
            reader = await store.open(name, read_only=True)
            texts = _texts(reader.messages)
            assert sorted(texts) == sorted(f"{x}{i}" for x in "abc" for i in range(8))
            for label in "abc":  # each writer's messages in its own order
                assert [t for t in texts if t[0] == label] == [f"{label}{i}" for i in range(8)]
            await close_session(reader)

        self._run(store_factory, scenario)

    def test_read_only_sessions_refuse_writes(self, store_factory: StoreFactory) -> None:
        async def scenario(store: SessionBackend, names: list[str]) -> None:
            name = _name("readonly")
            with pytest.raises(SessionError):
                await store.open(name, read_only=True)  # missing
            names.append(name)
            writer = await store.open(name)
            await append_message(writer, Message.user("x"))
            await close_session(writer)
            reader = await store.open(name, read_only=True)
            with pytest.raises(SessionError):
                await append_message(reader, Message.user("y"))
            await close_session(reader)
            check = await store.open(name, read_only=True)
            assert _texts(check.messages) == ["x"]
            await close_session(check)

        self._run(store_factory, scenario)

    def test_list_and_remove(self, store_factory: StoreFactory) -> None:
        async def scenario(store: SessionBackend, names: list[str]) -> None:
            a, b = _name("list-a"), _name("list-b")
            names.extend([a, b])
            for name, count in ((a, 1), (b, 2)):
                session = await store.open(name)
                for index in range(count):
                    await append_message(session, Message.user(str(index)))
                await close_session(session)
            listed = {s.name: s.messages for s in await store.list()}
            assert listed[a] == 1 and listed[b] == 2
            await store.remove(a)
            assert not await store.exists(a)
            assert a not in {s.name for s in await store.list()}
            with pytest.raises(SessionError):
                await store.remove(a)

        self._run(store_factory, scenario)

    def test_names_that_are_not_names_are_refused(self, store_factory: StoreFactory) -> None:
        async def scenario(store: SessionBackend, names: list[str]) -> None:
            for bad in ("../escape", "a/b", "", ".hidden", "x" * 200):
                with pytest.raises(SessionError):
                    await store.open(bad)

        self._run(store_factory, scenario)


def _run_coroutine(coroutine: Coroutine[Any, Any, None]) -> None:
    asyncio.run(coroutine)
