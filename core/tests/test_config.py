from __future__ import annotations

from pathlib import Path

import pytest

from tether.config import Config, load_config, parse_config
from tether.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "tether.toml"
    path.write_text(text)
    return path


def test_a_full_config_file_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
model = "anthropic/claude-sonnet-4-5"
tools = ["fs", "shell"]
[aliases]
fast = "openai/gpt-4.1-mini"
[providers.anthropic]
api_key_env = "MY_KEY"
timeout = 30
custom_header = "x"
[providers.anthropic.models."claude-sonnet-4-5"]
context_window = 1000000
[tool_settings.shell]
timeout = 60
[limits]
max_turns = 7
max_cost_usd = 2.5
[compaction]
threshold = 0.5
""",
    )
    config = load_config(path)
    assert config.model == "anthropic/claude-sonnet-4-5" and config.tools == ["fs", "shell"]
    assert config.limits.max_turns == 7 and config.limits.max_cost_usd == 2.5
    provider = config.provider("anthropic")
    assert provider.api_key_env == "MY_KEY" and provider.extra == {"custom_header": "x"}
    assert provider.models["claude-sonnet-4-5"]["context_window"] == 1_000_000
    assert config.tool_settings["shell"]["timeout"] == 60 and config.source == path


def test_an_unknown_key_names_the_file_and_the_key(tmp_path: Path) -> None:
    path = write(tmp_path, "[limits]\nmax_turn = 3\n")
    with pytest.raises(ConfigError) as excinfo:
        load_config(path)
    assert str(path) in str(excinfo.value) and "unknown key 'limits.max_turn'" in str(excinfo.value)


def test_a_wrong_type_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"'limits.max_turns': Input should be greater than or equal to 1"
    ):
        load_config(write(tmp_path, "[limits]\nmax_turns = 0\n"))


def test_malformed_toml_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "model = 'unterminated\n")
    with pytest.raises(ConfigError, match="is not valid TOML") as excinfo:
        load_config(path)
    assert str(path) in str(excinfo.value)


def test_environment_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, 'model = "a/b"\n')
    monkeypatch.setenv("TETHER_MODEL", "c/d")
    monkeypatch.setenv("TETHER_DATA_DIR", str(tmp_path / "data"))
    config = load_config(path)
    assert config.model == "c/d" and config.data_dir == tmp_path / "data"


def test_config_file_lookup_prefers_tether_config_then_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TETHER_CONFIG")
    monkeypatch.chdir(tmp_path)
    write(tmp_path, 'model = "local/model"\n')
    assert load_config().model == "local/model"
    other = tmp_path / "other.toml"
    other.write_text('model = "explicit/model"\n')
    monkeypatch.setenv("TETHER_CONFIG", str(other))
    assert load_config().model == "explicit/model"
    monkeypatch.setenv("TETHER_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(ConfigError, match="does not exist"):
        load_config()


def test_api_keys_come_from_the_environment_and_are_not_printed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    config = parse_config(
        {"providers": {"acme": {"api_key_env": "ACME_KEY"}, "raw": {"api_key": "sk-secret"}}}
    )
    monkeypatch.setenv("ACME_KEY", "from-env")
    assert config.provider("acme").resolve_api_key("DEFAULT") == "from-env"
    assert config.provider("raw").resolve_api_key("DEFAULT") == "sk-secret"
    assert "sk-secret" not in repr(config) and "sk-secret" not in config.model_dump_json()
    assert Config().provider("none").key_variable("NONE_API_KEY") == "NONE_API_KEY"


def test_model_overrides_patch_capabilities_and_reject_unknown_keys() -> None:
    from tether.provider import ModelCapabilities

    caps = ModelCapabilities().updated(
        {"context_window": 1000, "pricing": {"input": 1.0, "output": 2.0}}
    )
    assert caps.context_window == 1000 and caps.pricing is not None and caps.pricing.output == 2.0
    with pytest.raises(ConfigError, match="Unknown model setting\\(s\\) context_windw"):
        ModelCapabilities().updated({"context_windw": 5})
    with pytest.raises(ConfigError, match="Invalid pricing"):
        ModelCapabilities().updated({"pricing": {"inputs": 1.0}})
