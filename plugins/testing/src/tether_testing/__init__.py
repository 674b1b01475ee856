"""The heavy half of tether's test kit: real servers on loopback and the pytest plugin.

- :class:`FakeServer` is a real HTTP server on loopback (:class:`FakeModelServer` also
  lists models); :mod:`tether_testing.wire` builds the streamed responses of
  OpenAI-compatible (:func:`chat_reply`), OpenAI Responses (:func:`responses_reply`),
  Anthropic (:func:`anthropic_reply`) and Gemini (:func:`gemini_reply`) APIs for it, so a
  provider plugin, an application or the ``tether`` command runs end to end with no key.
- :class:`FakeGoogleOAuth` is a Google OAuth token endpoint for Google Cloud credentials.
- :class:`SessionStoreContract` is the test suite every session store must pass (subclass
  it in the store's tests); :class:`KnowledgeBackendContract` the one every knowledge-base
  backend must pass (it needs ``tether-knowledge``), with :class:`HashingEmbedder`.
- :func:`tether_testing.cli.run_tether` runs the installed ``tether`` command.
- The pytest plugin (:mod:`tether_testing.pytest_plugin`, registered through ``pytest11``
  when this distribution is installed) provides the ``scripted_provider``, ``make_agent``,
  ``tool_context``, ``call_tool``, ``offline``, ``sandbox``, ``fake_server``,
  ``google_oauth`` and ``google_adc`` fixtures.

The light half (:class:`~tether.testing.ScriptedProvider`, :class:`~tether.testing.Reply`,
:func:`~tether.testing.call`, :class:`~tether.testing.RecordingSleep`, ...) stays in the
kernel's :mod:`tether.testing`, usable without pytest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .google_oauth import FakeGoogleOAuth
from .http import FakeResponse, FakeServer
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
    "FakeGoogleOAuth",
    "FakeModelServer",
    "FakeResponse",
    "FakeServer",
    "HashingEmbedder",
    "KnowledgeBackendContract",
    "SessionStoreContract",
    "anthropic_redacted_thinking",
    "anthropic_reply",
    "anthropic_text",
    "anthropic_thinking",
    "anthropic_tool_use",
    "chat_reply",
    "gemini_part",
    "gemini_reply",
    "responses_reply",
]


def __getattr__(name: str) -> Any:
    # The contract suites import pytest (and the knowledge base); load them when asked for.
    if name == "SessionStoreContract":
        from .session_store import SessionStoreContract

        return SessionStoreContract
    if name in ("HashingEmbedder", "KnowledgeBackendContract"):
        from . import kb_backend

        return getattr(kb_backend, name)
    raise AttributeError(f"module 'tether_testing' has no attribute {name!r}")
