"""The hook tether-evals adds to tether's plugin surface: ``register_evaluators``.

A plugin (any module named by an entry point in the ``tether`` group) implements it with
:data:`tether.hookimpl`, like tether's own hooks::

    @tether.hookimpl
    def register_evaluators(evaluators):
        evaluators.add("polite", Polite)   # Polite(**settings).evaluate(trial, case)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from .registry import EvaluatorRegistrar

hookspec = pluggy.HookspecMarker("tether")


@hookspec
def register_evaluators(evaluators: EvaluatorRegistrar) -> None:
    """Register evaluators: the checks a dataset names by ``type``.

    Called once per :func:`tether_evals.load_evaluators` (once per eval run), before any
    case runs.

    :param evaluators: call ``evaluators.add(name, factory, description=...)``.
        ``factory(**settings)`` receives a check's settings (everything but ``type`` and
        ``name``) and returns an :class:`~tether_evals.evaluators.Evaluator`: an object
        with ``async evaluate(trial, case, context) -> Score``. Raise ``ValueError`` or
        ``TypeError`` (a pydantic model's validation error is one) for bad settings: the
        eval stops before running anything, naming the check. Two plugins adding one
        name is an error naming both.

    Since 0.1.

    Example::

        @tether.hookimpl
        def register_evaluators(evaluators):
            evaluators.add("polite", Polite, description="the answer says please")
    """
