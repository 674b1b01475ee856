"""The pytest fixtures a plugin author uses, exercised the way they would use them."""

from __future__ import annotations

from pathlib import Path

import pytest

import tether
from tether.testing import Reply, call


@tether.tool
def save_note(ctx: tether.ToolContext, name: str, text: str) -> str:
    """Save a note in the working directory."""
    (ctx.cwd / f"{name}.txt").write_text(text)
    return f"saved {name}"


async def test_call_tool_runs_in_tmp_path(call_tool, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    result = await call_tool(save_note, {"name": "a", "text": "hello"})
    assert result.text == "saved a" and (tmp_path / "a.txt").read_text() == "hello"
    bad = await call_tool(save_note, {"name": "a"})
    assert bad.is_error and "text: Field required" in bad.text


async def test_make_agent_scripts_a_model_that_uses_the_tool(make_agent, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    agent, provider = make_agent(
        [Reply(tool_calls=[call("save_note", name="todo", text="buy milk")]), Reply(text="Saved.")],
        tools=[save_note],
    )
    result = await agent.run("Remember to buy milk")
    assert result.output == "Saved." and (tmp_path / "todo.txt").read_text() == "buy milk"
    assert provider.requests[0].tools[0].name == "save_note"


async def test_scripted_provider_fixture_queues_replies(scripted_provider) -> None:  # type: ignore[no-untyped-def]
    scripted_provider.queue(Reply(text="one"), Reply(text="two"))
    agent = tether.Agent(scripted_provider, config=tether.Config())
    assert (await agent.run("a")).output == "one"
    assert (await agent.run("b")).output == "two"
    assert scripted_provider.remaining == 0


async def test_recording_sleep_records_each_wait_instead_of_waiting() -> None:
    from tether.retry import RetryPolicy
    from tether.testing import RecordingSleep, rate_limited

    sleep = RecordingSleep()
    provider = tether.testing.ScriptedProvider(
        [rate_limited(retry_after=7.5), rate_limited(retry_after=2.0), Reply(text="ok")]
    )
    agent = tether.Agent(provider, config=tether.Config(), retry=RetryPolicy(sleep=sleep))
    assert (await agent.run("hi")).output == "ok"
    assert sleep.delays == [7.5, 2.0]


def test_offline_hides_the_machines_keys_model_config_and_plugins(
    offline, monkeypatch, tmp_path: Path
) -> None:  # type: ignore[no-untyped-def]
    import os

    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-key-from-the-shell")
    monkeypatch.setenv("TETHER_MODEL", "openai/gpt-4.1")
    monkeypatch.setenv("MY_GATEWAY", "https://gateway.example")
    user_config = tmp_path / "user.toml"
    user_config.write_text('model = "openai/gpt-4.1"\n')
    monkeypatch.setenv("TETHER_CONFIG", str(user_config))
    offline(plugins=("google",), unset=["MY_GATEWAY"])
    for variable in ("OPENAI_API_KEY", "TETHER_MODEL", "MY_GATEWAY"):
        assert variable not in os.environ
    assert os.environ["TETHER_PLUGINS_ALLOW"] == "google"
    config = Path(os.environ["TETHER_CONFIG"])
    assert config != user_config and config.read_text() == ""
    from tether.config import load_config

    assert load_config().model is None
    offline(plugins=())
    assert os.environ["TETHER_DISABLE_PLUGIN_AUTOLOAD"] == "1"


@pytest.mark.live
def test_offline_leaves_a_live_tests_keys_alone(offline, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import os

    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-key-from-the-shell")
    offline(plugins=())
    assert os.environ["OPENAI_API_KEY"] == "sk-real-key-from-the-shell"
    assert os.environ["TETHER_DISABLE_PLUGIN_AUTOLOAD"] == "1"
