"""The built-in evaluators and the :class:`Evaluator` protocol third-party ones follow."""

from __future__ import annotations

from .base import EvalContext, Evaluator, Score, Settings

__all__ = ["EvalContext", "Evaluator", "Score", "Settings"]
