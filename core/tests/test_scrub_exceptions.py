"""A key in a provider's or a tool's error never survives anywhere in the exception the
Python API hands out: not in ``str``/``repr``/``args`` of any exception chained or
grouped with it, not in ``traceback.format_exception`` of the whole chain."""

from __future__ import annotations

import traceback
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tether
from tether.errors import AuthenticationError, NeedsHuman, ServerError
from tether.events import Retry
from tether.retry import RetryPolicy
from tether.scrub_exceptions import RedactedException, scrub_exception
from tether.testing import Reply, ScriptedProvider, call
from tether.testing.scripted import Failure

CANARY = "canary" + uuid.uuid4().hex


@pytest.fixture(autouse=True)
def canary_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """The canary is the value of a key variable, as a provider's API key is."""
    monkeypatch.setenv("CANARY_API_KEY", CANARY)


class VendorError(Exception):
    """An SDK's exception: a message, and the response body as an attribute."""

    def __init__(self, message: str, body: Any = None) -> None:
        super().__init__(message)
        self.body = body

    def __str__(self) -> str:
        return f"{self.args[0]} (body: {self.body})"


class Opaque:
    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    __repr__ = __str__


class ReprLeak(Exception):
    def __init__(self, secret: Opaque) -> None:
        super().__init__("opaque failure")
        self.secret = secret

    def __repr__(self) -> str:
        return f"ReprLeak({self.secret!r})"


async def no_sleep(seconds: float) -> None:
    return None


def _with_note(error: BaseException) -> BaseException:
    error.add_note(f"request headers: x-api-key={CANARY}")
    return error


SHAPES: list[Callable[[], BaseException]] = [
    lambda: VendorError(f"Invalid API key: {CANARY}"),
    lambda: VendorError("Request failed", body={"error": {"message": f"key {CANARY} revoked"}}),
    lambda: VendorError("Request failed", body=[b"raw " + CANARY.encode()]),
    lambda: RuntimeError({"headers": ("x-api-key", CANARY)}),
    lambda: ValueError(CANARY.encode()),
    lambda: KeyError(CANARY),
    lambda: OSError(2, "No such file", f"/keys/{CANARY}"),
    lambda: VendorError("Opaque body", body=Opaque(f"key={CANARY}")),
    lambda: ReprLeak(Opaque(CANARY)),
    lambda: _with_note(RuntimeError("connection reset")),
    lambda: RuntimeError("nothing secret here"),
]

Plan = Any
plans: st.SearchStrategy[Plan] = st.recursive(
    st.integers(0, len(SHAPES) - 1),
    lambda children: st.one_of(
        st.tuples(st.just("cause"), children, children),
        st.tuples(st.just("context"), children, children),
        st.tuples(st.just("group"), st.booleans(), st.lists(children, min_size=1, max_size=3)),
    ),
    max_leaves=8,
)


def build(plan: Plan) -> BaseException:
    """A fresh exception structure following ``plan``, raised for real (tracebacks)."""
    if isinstance(plan, int):
        error = SHAPES[plan]()
    elif plan[0] == "group":
        _, secret_message, members = plan
        message = f"several failures for key {CANARY}" if secret_message else "several failures"
        error = ExceptionGroup(message, [build(m) for m in members])
    else:
        kind, outer, inner = plan
        error = build(outer)
        chained = build(inner)
        if kind == "cause":
            error.__cause__ = chained
        else:
            error.__context__ = chained
    try:
        raise error
    except BaseException as raised:
        return raised


def chain(error: BaseException, seen: set[int] | None = None) -> Iterator[BaseException]:
    seen = set() if seen is None else seen
    if id(error) in seen:
        return
    seen.add(id(error))
    yield error
    for linked in (error.__cause__, error.__context__):
        if linked is not None:
            yield from chain(linked, seen)
    if isinstance(error, BaseExceptionGroup):
        for member in error.exceptions:
            yield from chain(member, seen)


def assert_no_canary(error: BaseException) -> None:
    assert CANARY not in "".join(traceback.format_exception(error))
    for linked in chain(error):
        assert CANARY not in str(linked), repr(type(linked))
        assert CANARY not in repr(linked), repr(type(linked))
        assert CANARY not in repr(linked.args)
        assert CANARY not in repr(getattr(linked, "__notes__", ""))


def test_every_shape_leaks_the_canary_before_scrubbing() -> None:
    """The test's own premise: each shape shows the key somewhere unscrubbed."""
    for shape in SHAPES[:-1]:
        error = shape()
        text = "".join(traceback.format_exception(error)) + repr(error) + repr(error.args)
        assert CANARY in text, shape


@given(plans)
@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_scrub_exception_removes_the_key_from_the_whole_chain(plan: Plan) -> None:
    root = AuthenticationError("The provider rejected the request.", provider="vendor")
    root.__cause__ = build(plan)
    assert scrub_exception(root) is root
    assert_no_canary(root)
    assert isinstance(root, AuthenticationError) and root.provider == "vendor"


def test_what_can_be_scrubbed_in_place_stays_itself() -> None:
    body = VendorError("Request failed", body={"error": {"message": f"key {CANARY} revoked"}})
    opaque = VendorError("Opaque body", body=Opaque(CANARY))
    body.__cause__ = opaque
    assert scrub_exception(body) is body
    assert body.body == {"error": {"message": "key *** revoked"}}
    stand_in = body.__cause__
    assert isinstance(stand_in, RedactedException)
    assert stand_in.original_type.endswith("VendorError") and "Opaque body" in str(stand_in)


@given(plans)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_a_provider_error_raised_from_a_run_carries_no_key(plan: Plan) -> None:
    error = AuthenticationError("The API key was rejected.", provider="vendor", status_code=401)
    error.__cause__ = build(plan)
    agent = tether.Agent(ScriptedProvider([Failure(error)]))
    with pytest.raises(AuthenticationError) as raised:
        await agent.run("hello")
    assert_no_canary(raised.value)


@given(plans)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
async def test_result_error_and_retry_events_carry_no_key(plan: Plan) -> None:
    @tether.tool
    def deploy() -> str:
        """Deploy."""
        try:
            raise build(plan)
        except BaseException as exc:
            raise NeedsHuman("Approve the deployment in the console.") from exc

    retryable = ServerError("Server error 500.", provider="vendor", status_code=500)
    retryable.__cause__ = build(plan)
    model = ScriptedProvider([Failure(retryable), Reply(tool_calls=[call("deploy")])])
    agent = tether.Agent(model, tools=[deploy], retry=RetryPolicy(sleep=no_sleep))
    retries = []
    result = None
    async for event in agent.stream("ship it"):
        if isinstance(event, Retry):
            retries.append(event.error)
        if isinstance(event, tether.Done):
            result = event.result
    assert result is not None and isinstance(result.error, NeedsHuman)
    assert_no_canary(result.error)
    assert retries and all(assert_no_canary(e) is None for e in retries)
