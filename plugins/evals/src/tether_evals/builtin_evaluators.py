"""tether-evals' own evaluators, registered through ``register_evaluators`` like a
third party's."""

from __future__ import annotations

from tether import hookimpl

from .evaluators.budget import Budget
from .evaluators.events import Events
from .evaluators.judge import Judge
from .evaluators.retrieval import Retrieval
from .evaluators.structured import Fields, ValidOutput
from .evaluators.text import Contains, Equals, Regex
from .evaluators.trajectory import Trajectory
from .registry import EvaluatorRegistrar


@hookimpl
def register_evaluators(evaluators: EvaluatorRegistrar) -> None:
    evaluators.add("equals", Equals, description="the answer equals a text")
    evaluators.add("contains", Contains, description="the answer contains texts")
    evaluators.add("regex", Regex, description="the answer matches a regular expression")
    evaluators.add("valid_output", ValidOutput, description="the answer is JSON valid to a schema")
    evaluators.add("fields", Fields, description="fields of the structured answer equal values")
    evaluators.add("trajectory", Trajectory, description="tools called, never called, order, count")
    evaluators.add("budget", Budget, description="cost, tokens, turns and time within limits")
    evaluators.add("judge", Judge, description="a model grades the answer against a rubric")
    evaluators.add("retrieval", Retrieval, description="nDCG and recall of knowledge-base searches")
    evaluators.add("events", Events, description="retries, compactions, tool errors, outcome")
