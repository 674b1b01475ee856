"""tether agents behind HTTP.

``create_app({"default": agent})`` is an ASGI app (Starlette) streaming runs as
tether's own events, AG-UI, or the AI SDK's UI message stream, with sessions and runs as
resources, approvals over HTTP, API keys mapped to tenants, and a chat page at ``/``.
``tether serve`` runs it with uvicorn from the ``[serve]`` table of ``tether.toml``.
"""

from __future__ import annotations

from .app import agents_from_settings, create_app, session_is_valid
from .settings import AgentSpec, ApiKey, ServeSettings, settings_from_table

__all__ = [
    "AgentSpec",
    "ApiKey",
    "ServeSettings",
    "agents_from_settings",
    "create_app",
    "session_is_valid",
    "settings_from_table",
]
