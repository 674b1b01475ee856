"""Terminal output with rich: a progress bar while trials run, then summary tables."""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from .compare import Comparison
from .report import EvalReport
from .results import TrialResult

__all__ = ["ProgressDisplay", "comparison_summary", "comparison_table", "report_table"]


class ProgressDisplay:
    """``on_start``/``on_trial`` callbacks for :func:`~tether_evals.run_eval` that draw a
    progress bar (only on a terminal; elsewhere one line per finished trial)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self._progress = Progress(
            TextColumn("[bold]eval"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            disable=not console.is_terminal,
        )
        self._task = self._progress.add_task("eval", total=None, status="")
        self._failed = 0

    def __enter__(self) -> ProgressDisplay:
        self._progress.__enter__()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._progress.__exit__(kind, error, tb)

    def on_start(self, done: int, total: int) -> None:
        self._progress.update(self._task, total=total, completed=done)
        if done:
            self.console.print(f"Resuming: {done} of {total} trials already done.")

    def on_trial(self, trial: TrialResult) -> None:
        self._failed += not trial.passed
        self._progress.update(self._task, advance=1, status=f"{self._failed} failing")
        if not self.console.is_terminal:
            verdict = "pass" if trial.passed else "FAIL"
            self.console.print(
                f"{verdict} {trial.case_id} #{trial.trial} score {trial.score:.3f}", markup=False
            )


def _verdict(passed: bool) -> Text:
    return Text("pass", style="green") if passed else Text("FAIL", style="bold red")


def report_table(report: EvalReport) -> Table:
    """One row per case, a footer with the totals."""
    trials = max((c.trials for c in report.cases), default=1)
    table = Table(title=f"Eval: {report.dataset}", show_footer=True)
    table.add_column("case", footer="all")
    table.add_column("result", footer=f"{report.pass_rate:.1%}")
    table.add_column("passes", justify="right")
    table.add_column(f"pass@{trials}", justify="right")
    table.add_column("score ± sd", justify="right", footer=f"{report.mean_score:.3f}")
    table.add_column("cost", justify="right")
    table.add_column("run")
    for case in report.cases:
        table.add_row(
            case.case_id,
            _verdict(case.passed),
            f"{case.passes}/{case.trials}",
            f"{case.pass_at_k.get(case.trials, 0.0):.2f}",
            f"{case.mean_score:.3f} ± {case.stdev_score:.3f}",
            "?" if case.mean_cost is None else f"${case.mean_cost:.4f}",
            case.run_ids[0][:12] if case.run_ids else "-",
        )
    return table


def comparison_table(comparison: Comparison) -> Table:
    """The changed cases (the paired test is :func:`comparison_summary`)."""
    c = comparison
    table = Table(
        title=f"{c.name_b} vs {c.name_a}: {len(c.changed)} of {len(c.cases)} cases changed"
    )
    for name in ("case", "change", "A", "B", "Δ"):
        table.add_column(name, justify="left" if name in ("case", "change") else "right")
    for case in c.changed:
        style = "green" if case.change in ("fixed", "better") else "red"
        table.add_row(
            case.case_id,
            Text(case.change, style=style),
            f"{case.score_a:.3f}",
            f"{case.score_b:.3f}",
            f"{case.delta:+.3f}",
        )
    return table


def comparison_summary(comparison: Comparison) -> str:
    """One line: the mean difference, its interval, the p-value and the verdict."""
    c = comparison
    return (
        f"B ({c.name_b}) − A ({c.name_a}): mean score {c.mean_b:.4f} − {c.mean_a:.4f} = "
        f"{c.mean_difference:+.4f}, {c.confidence:.0%} interval [{c.low:+.4f}, {c.high:+.4f}], "
        f"p = {c.p_value:.4f} ({c.method}, {c.resamples} resamples, {len(c.cases)} cases): "
        f"{c.verdict}"
    )
