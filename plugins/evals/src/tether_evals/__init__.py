"""tether-evals: know whether a change made the agent better.

Datasets of cases (:mod:`~tether_evals.dataset`), evaluators registered through the
``register_evaluators`` hook (:mod:`~tether_evals.hookspecs`), runs with repeated trials
that resume after an interruption (:func:`run_eval`), reports (terminal, JSON, HTML) and
paired comparisons (:func:`compare_reports`). From the command line: ``tether eval``.

Everything is imported on first use: ``import tether_evals`` is cheap.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .compare import CaseChange as CaseChange
    from .compare import Comparison as Comparison
    from .compare import compare_reports as compare_reports
    from .dataset import Case as Case
    from .dataset import CaseInputs as CaseInputs
    from .dataset import Check as Check
    from .dataset import Dataset as Dataset
    from .dataset import Thresholds as Thresholds
    from .dataset import dataset_schema as dataset_schema
    from .dataset import load_dataset as load_dataset
    from .errors import DatasetError as DatasetError
    from .errors import EvalError as EvalError
    from .errors import EvaluatorError as EvaluatorError
    from .evaluators.base import EvalContext as EvalContext
    from .evaluators.base import Evaluator as Evaluator
    from .evaluators.base import Score as Score
    from .evaluators.base import Settings as Settings
    from .html import comparison_html as comparison_html
    from .html import report_html as report_html
    from .registry import EvaluatorRegistrar as EvaluatorRegistrar
    from .registry import load_evaluators as load_evaluators
    from .report import CaseSummary as CaseSummary
    from .report import EvalReport as EvalReport
    from .report import load_report as load_report
    from .results import ScoreRecord as ScoreRecord
    from .results import ToolCallRecord as ToolCallRecord
    from .results import TrialResult as TrialResult
    from .runner import TrialSetup as TrialSetup
    from .runner import read_results as read_results
    from .runner import run_eval as run_eval
    from .seeding import accepts_seed as accepts_seed
    from .seeding import seeded_config as seeded_config
    from .stats import PairedTest as PairedTest
    from .stats import paired_bootstrap as paired_bootstrap

_LAZY = {
    "CaseChange": "compare",
    "Comparison": "compare",
    "compare_reports": "compare",
    "Case": "dataset",
    "CaseInputs": "dataset",
    "Check": "dataset",
    "Dataset": "dataset",
    "Thresholds": "dataset",
    "dataset_schema": "dataset",
    "load_dataset": "dataset",
    "DatasetError": "errors",
    "EvalError": "errors",
    "EvaluatorError": "errors",
    "EvalContext": "evaluators.base",
    "Evaluator": "evaluators.base",
    "Score": "evaluators.base",
    "Settings": "evaluators.base",
    "comparison_html": "html",
    "report_html": "html",
    "EvaluatorRegistrar": "registry",
    "load_evaluators": "registry",
    "CaseSummary": "report",
    "EvalReport": "report",
    "load_report": "report",
    "ScoreRecord": "results",
    "ToolCallRecord": "results",
    "TrialResult": "results",
    "TrialSetup": "runner",
    "read_results": "runner",
    "run_eval": "runner",
    "accepts_seed": "seeding",
    "seeded_config": "seeding",
    "PairedTest": "stats",
    "paired_bootstrap": "stats",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tether_evals' has no attribute {name!r}")
    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
