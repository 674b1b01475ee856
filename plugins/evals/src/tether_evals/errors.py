"""The errors of tether-evals, in tether's one error tree (:class:`tether.TetherError`)."""

from __future__ import annotations

from tether import TetherError

__all__ = ["DatasetError", "EvalError", "EvaluatorError"]


class EvalError(TetherError):
    """Something about an eval went wrong (a dataset, an evaluator, a results file)."""


class DatasetError(EvalError):
    """A dataset file is missing, unreadable or does not match the dataset schema."""


class EvaluatorError(EvalError):
    """An evaluator is unknown, misconfigured, or cannot score what it was given."""
