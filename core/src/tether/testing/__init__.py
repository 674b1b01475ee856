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

import warnings
from importlib import import_module
from typing import Any

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

#: Names of the heavy half of the test kit, now in the ``tether-testing`` distribution:
#: name -> its module in ``tether_testing``.
_MOVED = {
    "FakeGoogleOAuth": "google_oauth",
    "FakeResponse": "http",
    "FakeServer": "http",
    "FakeModelServer": "wire",
    "anthropic_redacted_thinking": "wire",
    "anthropic_reply": "wire",
    "anthropic_text": "wire",
    "anthropic_thinking": "wire",
    "anthropic_tool_use": "wire",
    "chat_reply": "wire",
    "gemini_part": "wire",
    "gemini_reply": "wire",
    "responses_reply": "wire",
    "SessionStoreContract": "session_store",
    "HashingEmbedder": "kb_backend",
    "KnowledgeBackendContract": "kb_backend",
}

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
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module 'tether.testing' has no attribute {name!r}")
    try:
        found = import_module(f"tether_testing.{module}")
    except ModuleNotFoundError as exc:
        if exc.name != "tether_testing":
            raise
        raise ImportError(
            f"tether.testing.{name} is in the tether-testing distribution now, which is not "
            "installed. Install it: uv pip install ./plugins/testing",
            name=f"tether.testing.{name}",
        ) from exc
    warnings.warn(
        f"tether.testing.{name} is deprecated: import it from tether_testing "
        "(distribution tether-testing); the old path goes in tether 1.0.",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(found, name)
