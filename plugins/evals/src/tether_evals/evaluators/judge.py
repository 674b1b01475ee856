"""``judge``: another model grades the answer against a rubric.

The judge's prompt is :data:`JUDGE_PROMPT` (its version, :data:`JUDGE_PROMPT_VERSION`,
goes into every score, so a report says which wording graded it); the full prompt sent,
the judge's reasoning and its raw reply are kept in the score's details. The judge is
any tether model: a model string (``anthropic/claude-haiku-4-5``) or a name given to the
eval with ``models={"judge": provider}`` (how a scripted judge plays the part offline).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from pydantic import Field

from .base import EvalContext, Score, Settings

if TYPE_CHECKING:
    from ..dataset import Case
    from ..results import TrialResult

__all__ = ["JUDGE_PROMPT", "JUDGE_PROMPT_VERSION", "JUDGE_SYSTEM", "Judge", "parse_verdict"]

JUDGE_PROMPT_VERSION = "judge-v1"

JUDGE_SYSTEM = (
    "You grade answers written by an AI assistant. Apply the rubric strictly and only the "
    "rubric. Reply with one JSON object and nothing else: "
    '{"reasoning": "<why, in two or three sentences>", "score": <a number from 0 to 1>}'
)

JUDGE_PROMPT = """\
## Rubric
{rubric}

## The task the assistant was given
{prompt}
{expected}
## The assistant's answer
{answer}

Grade the answer against the rubric. Reply with the JSON object only."""

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def parse_verdict(reply: str) -> tuple[float, str] | None:
    """``(score, reasoning)`` from a judge's reply (a JSON object, possibly inside other
    text or a code fence), or ``None`` when it holds no usable verdict."""
    for candidate in (reply.strip(), *(m.group(0) for m in _OBJECT.finditer(reply))):
        try:
            data = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("score"), int | float):
            score = min(max(float(data["score"]), 0.0), 1.0)
            return score, str(data.get("reasoning", ""))
    return None


class Judge(Settings):
    """Grades the answer with ``model`` against ``rubric``; passes at ``threshold``.
    ``show_expected`` gives the judge the case's ``expected_output`` as a reference."""

    rubric: str = Field(min_length=1)
    model: str = "judge"
    threshold: float = Field(default=0.5, ge=0, le=1)
    show_expected: bool = True

    def prompt_for(self, trial: TrialResult, case: Case) -> str:
        """The exact user message the judge receives for ``trial``."""
        expected = ""
        if self.show_expected and case.expected_output is not None:
            expected = f"\n## A reference answer\n{case.expected_output}\n"
        return JUDGE_PROMPT.format(
            rubric=self.rubric.strip(),
            prompt=case.inputs.prompt,
            expected=expected,
            answer=trial.text or "(no answer)",
        )

    async def evaluate(self, trial: TrialResult, case: Case, context: EvalContext) -> Score:
        import tether

        model = context.model(self.model)
        config = tether.Config() if not isinstance(model, str) else tether.load_config()
        judge = tether.Agent(model, system=JUDGE_SYSTEM, tools=[], config=config, skills=False)
        prompt = self.prompt_for(trial, case)
        result = await judge.run(prompt)
        details: dict[str, Any] = {
            "prompt_version": JUDGE_PROMPT_VERSION,
            "system": JUDGE_SYSTEM,
            "prompt": prompt,
            "reply": result.text,
            "judge_run_id": result.run_id,
            "judge_model": self.model,
        }
        verdict = parse_verdict(result.text)
        if verdict is None:
            return Score(0.0, False, "the judge's reply held no JSON verdict with a score", details)
        score, reasoning = verdict
        details["reasoning"] = reasoning
        return Score(score, score >= self.threshold, reasoning or f"judged {score:.2f}", details)
