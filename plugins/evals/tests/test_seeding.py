"""A trial's seed reaches providers that declare a ``seed`` setting, and only those."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import tether
from tether.testing import Reply, ScriptedProvider
from tether.testing.cli import run_tether
from tether_evals import Dataset, TrialSetup, accepts_seed, run_eval, seeded_config

seen: list[Any] = []


def _factory(config: Any) -> ScriptedProvider:
    seen.append(config.extra.get("seed"))
    return ScriptedProvider([Reply(text="ok")])


PLUGIN = SimpleNamespace(
    __name__="seedy_plugin",
    register_providers=tether.hookimpl(
        lambda providers: providers.add("seedy", _factory, settings={"seed": int})
    ),
)


def test_each_trial_seeds_a_provider_that_takes_a_seed() -> None:
    seen.clear()
    config = tether.Config()
    plugins = tether.PluginManager(plugins=[PLUGIN], entry_points=False, config=config)
    assert accepts_seed("seedy/model", plugins) and not accepts_seed("demo/echo", plugins)
    assert seeded_config(config, "demo/echo", 5, plugins) is config

    def make(setup: TrialSetup) -> tether.Agent:
        seeded = seeded_config(config, "seedy/model", setup.seed, plugins)
        return tether.Agent("seedy/model", config=seeded, plugin_manager=plugins, skills=False)

    data = Dataset.model_validate(
        {
            "cases": [{"id": "a", "inputs": {"prompt": "p"}}],
            "evaluators": [{"type": "equals", "value": "ok"}],
        }
    )
    report = asyncio.run(run_eval(data, make, trials=3, seed=40, concurrency=1))
    assert report.pass_rate == 1.0
    assert sorted(seen) == [40, 41, 42]
    assert config.providers == {}  # the shared configuration is not changed


def test_a_plain_model_eval_from_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "echo.yaml").write_text(
        "cases: [{id: hi, inputs: {prompt: hi}, expected_output: 'Echo: hi'}]\n"
        "evaluators: [{type: contains}]\n"
    )
    out = run_tether(
        tmp_path, "eval", "run", "echo.yaml", "-m", "demo/echo", "--seed", "3",
        "--min-pass-rate", "1", plugins="evals", env={},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "pass hi #0 score 1.000" in out.stdout
