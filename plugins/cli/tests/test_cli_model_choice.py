"""Which model ``tether run`` uses: ``-m``, then ``TETHER_MODEL``, then the configuration
file (``tether models default NAME``), then the first provider whose key is set (said on
stderr); and what it says when nothing chooses one."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

FAKE = ["-p", "cli_fake_model"]
Invoke = Callable[..., Result]


def model_used(result: Result) -> str:
    assert result.exit_code == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]
    return next(e["model"] for e in events if e["type"] == "turn_end")


def test_default_model_resolution_order_flag_env_config_then_first_keyed_provider(
    invoke: Invoke, cli_environment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = cli_environment / "tether-test.toml"
    config.write_text("# my settings\n[limits]\nmax_turns = 5\n")

    picked = invoke(*FAKE, "run", "--json", "hi")
    assert model_used(picked) == "fake/fake-small"
    assert "Using fake/fake-small (FAKE_MODEL_API_KEY is set" in picked.stderr
    assert "tether models default NAME" in picked.stderr

    saved = invoke(*FAKE, "models", "default", "fake/fake-large")
    assert saved.exit_code == 0, saved.stderr
    assert f"saved in {config}" in saved.stdout
    assert (
        config.read_text() == 'model = "fake/fake-large"\n# my settings\n[limits]\nmax_turns = 5\n'
    )
    from_config = invoke(*FAKE, "run", "--json", "hi")
    assert model_used(from_config) == "fake/fake-large"
    assert "Using" not in from_config.stderr
    shown = invoke(*FAKE, "models", "default")
    assert shown.stdout.strip() == f"fake/fake-large\t(from {config})"

    monkeypatch.setenv("TETHER_MODEL", "fake/from-env")
    assert model_used(invoke(*FAKE, "run", "--json", "hi")) == "fake/from-env"
    assert invoke(*FAKE, "models", "default").stdout.strip() == "fake/from-env\t(from TETHER_MODEL)"

    assert model_used(invoke(*FAKE, "run", "-m", "fake/from-flag", "--json", "hi")) == (
        "fake/from-flag"
    )


def test_models_default_changes_only_the_model_line(invoke: Invoke, cli_environment: Path) -> None:
    config = cli_environment / "tether-test.toml"
    config.write_text('model = "fake/old"   \ntools = ["add"]\n\n[aliases]\nmodel = "x/y"\n')
    assert invoke(*FAKE, "models", "default", "fake-large").exit_code == 0
    assert (
        config.read_text() == 'model = "fake-large"\ntools = ["add"]\n\n[aliases]\nmodel = "x/y"\n'
    )


def test_models_default_refuses_an_unknown_provider_and_writes_nothing(
    invoke: Invoke, cli_environment: Path
) -> None:
    config = cli_environment / "tether-test.toml"
    result = invoke(*FAKE, "models", "default", "antropic/claude-sonnet-4-5")
    assert result.exit_code == 1
    assert 'No provider named "antropic"' in result.stderr
    assert config.read_text() == ""


def test_models_default_writes_the_user_config_file_when_there_is_none(
    invoke: Invoke, cli_environment: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TETHER_CONFIG")
    result = invoke(*FAKE, "models", "default", "demo/echo")
    assert result.exit_code == 0, result.stderr
    user_file = cli_environment / "home" / ".config" / "tether" / "tether.toml"
    assert user_file.read_text() == 'model = "demo/echo"\n'
    assert model_used(invoke("run", "--json", "hello")) == "demo/echo"


@pytest.mark.parametrize("fake_model_key", [False])
def test_no_model_and_no_key_says_how_to_choose_one_and_points_to_the_demo(
    invoke: Invoke,
) -> None:
    result = invoke(*FAKE, "run", "hello")
    assert result.exit_code == 1
    assert "No model chosen and no provider key found" in result.stderr
    assert "tether run -m demo/echo" in result.stderr
    assert "FAKE_MODEL_API_KEY" in result.stderr and "tether models default NAME" in result.stderr
    assert "Traceback" not in result.output


def test_a_bad_model_from_tether_model_says_where_it_came_from(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_MODEL", "nowhere/model")
    result = invoke(*FAKE, "run", "hello")
    assert result.exit_code == 1
    assert 'No provider named "nowhere"' in result.stderr
    assert "comes from TETHER_MODEL" in result.stderr
