"""``[durable] settings``: queues per provider with their limits, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from tether.config import parse_config
from tether.errors import ConfigError
from tether_dbos import DbosSettings


def test_providers_with_limits_get_queues_of_their_own() -> None:
    config = parse_config(
        {
            "durable": {
                "engine": "dbos",
                "settings": {
                    "worker_concurrency": 4,
                    "providers": {"anthropic": {"concurrency": 8, "runs_per_period": 100}},
                },
            }
        }
    )
    settings = DbosSettings.from_config(config)
    assert settings.queue_for("anthropic") == "tether-runs-anthropic"
    assert settings.queue_for("openai") == "tether-runs"
    assert settings.queue_for(None) == "tether-runs"
    queues = settings.queues()
    assert queues["tether-runs-anthropic"]["global_concurrency"] == 8
    assert queues["tether-runs-anthropic"]["limiter"] == {"limit": 100, "period": 60.0}
    assert queues["tether-runs"]["worker_concurrency"] == 4
    assert all(q["partition_concurrency"] == 1 for q in queues.values())  # one run per session


def test_unknown_or_bad_settings_are_config_errors() -> None:
    config = parse_config({"durable": {"settings": {"workers": 3}}})
    with pytest.raises(ConfigError, match="unknown key 'workers'"):
        DbosSettings.from_config(config)
    config = parse_config({"durable": {"settings": {"providers": {"x": {"concurrency": 0}}}}})
    with pytest.raises(ConfigError, match="concurrency"):
        DbosSettings.from_config(config)


def test_without_a_database_url_a_sqlite_file_in_the_data_dir_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TETHER_DBOS_DATABASE_URL", raising=False)
    config = parse_config({"data_dir": str(tmp_path)})
    url = DbosSettings.from_config(config).system_database_url(config)
    assert url == f"sqlite:///{tmp_path / 'dbos.sqlite3'}"
    monkeypatch.setenv("TETHER_DBOS_DATABASE_URL", "postgresql://db/agents")
    assert DbosSettings.from_config(config).system_database_url(config) == "postgresql://db/agents"


def test_takeover_after_s_defaults_to_30_s_and_false_turns_it_off() -> None:
    assert DbosSettings.from_config(parse_config({})).takeover_after_s == 30.0
    off = parse_config({"durable": {"settings": {"takeover_after_s": False}}})
    assert DbosSettings.from_config(off).takeover_after_s is None
    bad = parse_config({"durable": {"settings": {"takeover_after_s": 0}}})
    with pytest.raises(ConfigError, match="takeover_after_s"):
        DbosSettings.from_config(bad)
