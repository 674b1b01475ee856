"""Typos in tether.toml fail at start, naming the file, the section and the key, before
any model is called: unknown provider and tool sections, unknown keys under them, wrongly
typed tool settings, unknown model settings, tools and strategies."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

Invoke = Callable[..., Result]
TOOLS = ["-p", "tether_tools.plugin"]
NEEDS_TOOLS = pytest.mark.skipif(
    importlib.util.find_spec("tether_tools") is None,
    reason="the shell and file tools come from tether-tools",
)

CASES = [
    pytest.param(
        "[providers.demo]\ndelai = 0.1\n",
        "[providers.demo] has an unknown key 'delai' (did you mean \"delay\"?). "
        "Valid keys: api_key, api_key_env, base_url, delay, models, timeout",
        id="unknown-provider-key",
    ),
    pytest.param(
        '[providers.demo]\ndelay = "fast"\n',
        "[providers.demo] delay = 'fast' is not valid: input should be a valid number",
        id="wrong-provider-value",
    ),
    pytest.param(
        "[providers.dmeo]\ntimeout = 5\n",
        '[providers.dmeo] names no installed provider (did you mean "demo"?). Installed: demo',
        id="unknown-provider-section",
    ),
    pytest.param(
        "[tool_settings.shell]\ntimout = 60\n",
        "[tool_settings.shell] has an unknown key 'timout' (did you mean \"timeout\"?)",
        id="unknown-tool-key",
        marks=NEEDS_TOOLS,
    ),
    pytest.param(
        '[tool_settings.shell]\ntimeout = "60s"\n',
        "[tool_settings.shell] timeout = '60s' is not valid: input should be a valid number",
        id="wrong-tool-value",
        marks=NEEDS_TOOLS,
    ),
    pytest.param(
        "[tool_settings.read_file]\nmax_lines = 0\n",
        "[tool_settings.read_file] max_lines = 0 is not valid: input should be greater than or equal to 1",
        id="out-of-range-tool-value",
        marks=NEEDS_TOOLS,
    ),
    pytest.param(
        "[tool_settings.shel]\ntimeout = 60\n",
        '[tool_settings.shel] names no registered tool or toolset (did you mean "shell"?)',
        id="unknown-tool-section",
        marks=NEEDS_TOOLS,
    ),
    pytest.param(
        '[providers.demo.models."echo"]\ncontext_windw = 10\n',
        "[providers.demo.models.\"echo\"] has an unknown key 'context_windw' "
        '(did you mean "context_window"?)',
        id="unknown-model-setting",
    ),
    pytest.param(
        'tools = ["fs", "shel"]\n',
        "`tools` names 'shel', which is no registered tool or toolset (did you mean \"shell\"?)",
        id="unknown-tool",
        marks=NEEDS_TOOLS,
    ),
    pytest.param(
        '[compaction]\nstrategy = "sumarize"\n',
        "[compaction] strategy = 'sumarize' names no registered strategy "
        '(did you mean "summarize"?)',
        id="unknown-strategy",
    ),
]


@pytest.mark.parametrize(("toml", "message"), CASES)
def test_each_config_typo_fails_at_start_naming_file_section_and_key(
    invoke: Invoke, cli_environment: Path, toml: str, message: str
) -> None:
    config = cli_environment / "tether-test.toml"
    config.write_text(toml)
    result = invoke(*TOOLS, "run", "-m", "demo/echo", "hello")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {config}: "), result.stderr
    assert message in result.stderr
    assert "see the configuration docs" not in result.stderr.lower()
    assert "Echo:" not in result.stdout and result.stdout == ""  # the model was never called
    assert "Traceback" not in result.output


def test_a_value_of_the_wrong_type_for_a_core_key_names_it_without_pointing_to_the_docs(
    invoke: Invoke, cli_environment: Path
) -> None:
    config = cli_environment / "tether-test.toml"
    config.write_text('[limits]\nmax_turns = "many"\n')
    result = invoke("run", "-m", "demo/echo", "hello")
    assert result.exit_code == 1
    assert f"{config}: 'limits.max_turns': Input should be a valid integer" in result.stderr
    assert "docs" not in result.stderr


@NEEDS_TOOLS
def test_settings_that_are_right_pass_and_reach_the_tool(
    invoke: Invoke, cli_environment: Path
) -> None:
    config = cli_environment / "tether-test.toml"
    config.write_text("[tool_settings.fs]\nmax_entries = 1\n[providers.demo]\ndelay = 0\n")
    (cli_environment / "a.txt").write_text("a")
    (cli_environment / "b.txt").write_text("b")
    result = invoke(*TOOLS, "run", "-m", "demo/echo", "--tools", "fs", "list_dir path=.")
    assert result.exit_code == 0, result.stderr
    assert "list_dir returned" in result.stdout
