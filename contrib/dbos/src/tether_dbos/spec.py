"""What a submitted run is: :class:`RunSpec`, the durable workflow's one input."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RunSpec"]


class RunSpec(BaseModel):
    """One run, as enqueued. Plain data, so any worker can pick it up.

    ``agent`` is an import path ``"module:function"``; the function receives the worker's
    :class:`~tether.config.Config` and returns the :class:`~tether.Agent` to run (tools
    and all). Without it the worker builds an agent from its configuration, with
    ``model``, ``system`` and ``tools`` overriding it. ``prompt`` is a message in the
    session format. ``wait_for_reply_s`` keeps the run open after it ends, waiting that
    long (durably: the wait survives restarts) for the next user message sent with
    :meth:`tether_dbos.RunHandle.reply`. A run suspended for approval (a permission rule
    says ``ask``) waits up to ``approval_timeout_s`` (a week) for
    :meth:`tether_dbos.RunHandle.approve`, then ends suspended.
    """

    model_config = ConfigDict(extra="forbid")

    session: str
    prompt: str
    agent: str | None = None
    model: str | None = None
    system: str | None = None
    tools: list[str] | None = None
    limits: dict[str, Any] = Field(default_factory=dict)
    wait_for_reply_s: float | None = None
    approval_timeout_s: float = 7 * 24 * 3600.0
