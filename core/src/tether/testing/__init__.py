"""Test helpers for applications and plugin authors.

- :class:`ScriptedProvider` plays back queued replies (text, thinking, tool calls, usage)
  and failures (rate limits with ``retry_after``, server errors, mid-stream drops,
  authentication failures, context overflow), and records every request.
- :class:`SessionStoreContract` is the test suite every session store must pass
  (subclass it in the store's tests); :class:`KnowledgeBackendContract` the one every
  knowledge-base backend must pass, with :class:`HashingEmbedder` for vectors.
- :class:`FakeServer` is a real HTTP server on loopback (:class:`FakeModelServer` also
  lists models); :mod:`tether.testing.wire`
  builds the streamed responses of OpenAI-compatible (:func:`chat_reply`), OpenAI
  Responses (:func:`responses_reply`), Anthropic
  (:func:`anthropic_reply`) and Gemini (:func:`gemini_reply`) APIs for it, so a provider
  plugin, an application or the ``tether`` command runs end to end with no key.
  :class:`FakeGoogleOAuth` is a Google OAuth token endpoint for Google Cloud credentials.
  :func:`tether.testing.cli.run_tether` runs the installed ``tether`` command against them.
- :func:`assert_invariant` checks a history against the tool-call/result invariant.
- :class:`RecordingSleep` is a retry policy's sleep that records the delays instead of
  waiting; :func:`go_offline` hides the machine's keys, gateways, configuration and
  plugins from a test.
- The pytest plugin (:mod:`tether.testing.pytest_plugin`, loaded automatically once tether
  is installed) provides the ``scripted_provider``, ``make_agent``, ``tool_context``,
  ``call_tool``, ``offline``, ``google_oauth`` and ``google_adc`` fixtures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .google_oauth import FakeGoogleOAuth
from .http import FakeResponse, FakeServer
from .invariant import InvariantViolation, assert_invariant, invariant_violations
from .offline import go_offline
from .scripted import (
    Failure,
    Reply,
    ScriptedProvider,
    ScriptExhausted,
    auth_failed,
    call,
    connection_dropped,
    context_overflow,
    overloaded,
    rate_limited,
    server_error,
)
from .sleep import RecordingSleep
from .tools import call_tool, make_tool_context
from .wire import (
    FakeModelServer,
    anthropic_redacted_thinking,
    anthropic_reply,
    anthropic_text,
    anthropic_thinking,
    anthropic_tool_use,
    chat_reply,
    gemini_part,
    gemini_reply,
    responses_reply,
)

if TYPE_CHECKING:
    from .kb_backend import HashingEmbedder, KnowledgeBackendContract
    from .session_store import SessionStoreContract

__all__ = [
    "Failure",
    "FakeGoogleOAuth",
    "FakeModelServer",
    "FakeResponse",
    "FakeServer",
    "HashingEmbedder",
    "InvariantViolation",
    "KnowledgeBackendContract",
    "RecordingSleep",
    "Reply",
    "ScriptExhausted",
    "ScriptedProvider",
    "SessionStoreContract",
    "anthropic_redacted_thinking",
    "anthropic_reply",
    "anthropic_text",
    "anthropic_thinking",
    "anthropic_tool_use",
    "assert_invariant",
    "auth_failed",
    "call",
    "call_tool",
    "chat_reply",
    "connection_dropped",
    "context_overflow",
    "gemini_part",
    "gemini_reply",
    "go_offline",
    "invariant_violations",
    "make_tool_context",
    "overloaded",
    "rate_limited",
    "responses_reply",
    "server_error",
]


def __getattr__(name: str) -> Any:
    # The contract suite imports pytest; load it only when asked for.
    if name == "SessionStoreContract":
        from .session_store import SessionStoreContract

        return SessionStoreContract
    if name in ("HashingEmbedder", "KnowledgeBackendContract"):
        from . import kb_backend

        return getattr(kb_backend, name)
    raise AttributeError(f"module 'tether.testing' has no attribute {name!r}")
