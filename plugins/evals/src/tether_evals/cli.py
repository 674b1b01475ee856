"""``tether eval``: run a dataset against an agent, compare two evals, print the schema."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import click

__all__ = ["eval_group"]


def _load_factory(spec: str) -> tuple[Any, Any]:
    """``path/to/file.py:name`` or ``package.module:name`` → the object named and its
    module."""
    from .errors import EvalError

    target, _, name = spec.rpartition(":")
    if not target or not name:
        raise EvalError(
            f"--agent {spec!r} must be MODULE:NAME or FILE.py:NAME, naming a function that "
            "takes a TrialSetup and returns a tether.Agent."
        )
    try:
        if target.endswith(".py"):
            location = Path(target).resolve()
            loader = importlib.util.spec_from_file_location(location.stem, location)
            if loader is None or loader.loader is None:
                raise ImportError(f"cannot load {location}")
            module = importlib.util.module_from_spec(loader)
            sys.modules[location.stem] = module
            loader.loader.exec_module(module)
        else:
            module = importlib.import_module(target)
    except (ImportError, OSError) as exc:
        raise EvalError(f"Cannot import the agent factory module {target!r}: {exc}") from exc
    factory = getattr(module, name, None)
    if not callable(factory):
        raise EvalError(f"{target!r} has no function named {name!r} (from --agent {spec!r}).")
    return factory, module


def _model_factory(model: str | None) -> Any:
    """Plain agents on ``model``, seeded when its provider takes a seed."""
    import tether

    from .seeding import accepts_seed, seeded_config

    config = tether.load_config()
    plugins = tether.PluginManager(config=config)
    chosen = model or config.model
    if chosen and not accepts_seed(chosen, plugins):
        chosen = None

    def make(setup: Any) -> Any:
        seeded = config if chosen is None else seeded_config(config, chosen, setup.seed, plugins)
        return tether.Agent(model, config=seeded, plugin_manager=plugins, cwd=setup.workspace)

    return make


def _models(pairs: tuple[str, ...]) -> dict[str, str]:
    models = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name or not value:
            raise click.BadParameter(f"{pair!r} is not NAME=MODEL", param_hint="--model-alias")
        models[name] = value
    return models


@click.group("eval")
def eval_group() -> None:
    """Evaluate an agent on a dataset: scores, pass rates, comparisons."""


@eval_group.command("run")
@click.argument("dataset", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--agent", "agent_spec", help="MODULE:NAME or FILE.py:NAME of an agent factory.")
@click.option("-m", "--model", help="Without --agent: evaluate a plain agent on this model.")
@click.option("--trials", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--concurrency", default=4, show_default=True, type=click.IntRange(min=1))
@click.option("--seed", type=int, help="Base seed handed to the agent factory (trial i: seed+i).")
@click.option(
    "--results",
    type=click.Path(dir_okay=False, path_type=Path),
    help="JSONL file of finished trials; an interrupted eval resumes from it.",
)
@click.option("--fresh", is_flag=True, help="Start the results file over instead of resuming.")
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--tag", "tags", multiple=True, help="Only cases with this tag (repeatable).")
@click.option("--case", "case_ids", multiple=True, help="Only this case (repeatable).")
@click.option("--model-alias", "aliases", multiple=True, help="NAME=MODEL for checks (judge).")
@click.option("--min-pass-rate", type=click.FloatRange(0, 1))
@click.option("--min-score", type=click.FloatRange(0, 1))
@click.option("--timeout", default=600.0, show_default=True, help="Seconds per trial.")
def run_command(
    dataset: Path,
    agent_spec: str | None,
    model: str | None,
    trials: int,
    concurrency: int,
    seed: int | None,
    results: Path | None,
    fresh: bool,
    json_path: Path | None,
    html_path: Path | None,
    tags: tuple[str, ...],
    case_ids: tuple[str, ...],
    aliases: tuple[str, ...],
    min_pass_rate: float | None,
    min_score: float | None,
    timeout: float,
) -> None:
    """Run DATASET (YAML, JSON or JSONL) and report; exit 1 below the thresholds.

    The agent factory's module may define `eval_models()`, returning the models checks
    name (a judge's `model`) as model strings or provider instances; --model-alias adds
    NAME=MODEL pairs.

    Thresholds come from the dataset's `thresholds` and the --min-* options (which
    override them). Interrupted (Ctrl-C), it keeps every finished trial in --results:
    the same command again runs only the rest.
    """
    from rich.console import Console

    from .dataset import load_dataset
    from .html import report_html
    from .runner import run_eval
    from .terminal import ProgressDisplay, report_table

    data = load_dataset(dataset).select(tags, case_ids)
    models: dict[str, Any] = {}
    if agent_spec:
        factory, module = _load_factory(agent_spec)
        if callable(getattr(module, "eval_models", None)):
            models.update(module.eval_models())
    else:
        factory = _model_factory(model)
    models.update(_models(aliases))
    if results is not None and fresh and results.exists():
        results.unlink()
    console = Console(stderr=False)
    display = ProgressDisplay(console)
    try:
        with display:
            report = asyncio.run(
                run_eval(
                    data,
                    factory,
                    trials=trials,
                    concurrency=concurrency,
                    seed=seed,
                    results=results,
                    models=models,
                    trial_timeout=timeout,
                    on_trial=display.on_trial,
                    on_start=display.on_start,
                )
            )
    except KeyboardInterrupt:
        where = (
            f" are saved in {results}; run the same command to resume"
            if results
            else (" were not saved (no --results file)")
        )
        click.echo(f"Interrupted: the finished trials{where}.", err=True)
        sys.exit(130)
    console.print(report_table(report))
    if json_path is not None:
        json_path.write_text(report.model_dump_json(indent=2), encoding="utf-8")
        click.echo(f"JSON report: {json_path}")
    if html_path is not None:
        html_path.write_text(report_html(report), encoding="utf-8")
        click.echo(f"HTML report: {html_path}")
    limits = report.thresholds.model_copy(
        update={
            k: v
            for k, v in {"min_pass_rate": min_pass_rate, "min_score": min_score}.items()
            if v is not None
        }
    )
    failures = report.failures(limits)
    if failures:
        click.echo("Thresholds not met: " + "; ".join(failures) + ".", err=True)
        sys.exit(1)


@eval_group.command("compare")
@click.argument("a", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("b", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--json", "json_path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--html", "html_path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--resamples", default=10_000, show_default=True, type=click.IntRange(min=100))
@click.option("--fail-if-worse", is_flag=True, help="Exit 1 when B is significantly worse.")
def compare_command(
    a: Path,
    b: Path,
    json_path: Path | None,
    html_path: Path | None,
    resamples: int,
    fail_if_worse: bool,
) -> None:
    """Compare eval B against eval A (JSON reports or results .jsonl files): the cases
    that changed, and a paired bootstrap interval of the mean score difference."""
    from rich.console import Console

    from .compare import compare_reports
    from .html import comparison_html
    from .report import load_report
    from .terminal import comparison_summary, comparison_table

    comparison = compare_reports(load_report(a), load_report(b), resamples=resamples)
    console = Console()
    console.print(comparison_table(comparison))
    console.print(comparison_summary(comparison), soft_wrap=True, markup=False)
    if json_path is not None:
        json_path.write_text(comparison.model_dump_json(indent=2), encoding="utf-8")
    if html_path is not None:
        html_path.write_text(comparison_html(comparison), encoding="utf-8")
    if fail_if_worse and comparison.verdict == "worse":
        click.echo("B is significantly worse than A.", err=True)
        sys.exit(1)


@eval_group.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of dataset files (for editors)."""
    from .dataset import dataset_schema

    click.echo(json.dumps(dataset_schema(), indent=2))


@eval_group.command("evaluators")
def evaluators_command() -> None:
    """List the evaluators installed (built in and from plugins)."""
    from .registry import load_evaluators

    registry = load_evaluators()
    for name, plugin, description in registry.describe():
        click.echo(f"{name:14} {plugin:12} {description}")
    for error in registry.errors:
        click.echo(f"error: {error}", err=True)
