"""``tether plugins``, ``tether models``, plugin commands, ``--help`` and start-up cost."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tether_cli import cli

TETHER = Path(sys.executable).with_name("tether")
FAKE = ["-p", "cli_fake_model"]
Invoke = Callable[..., Result]


@pytest.fixture
def fake_model_key() -> bool:
    return False


def write_module(tmp_path: Path, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    return name


# -- tether plugins --------------------------------------------------------------------------------
def test_plugins_lists_each_plugin_with_its_hooks_and_components(invoke: Invoke) -> None:
    result = invoke(*FAKE, "plugins")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    row = next(line for line in lines if line.strip().startswith("cli_fake_model"))
    assert "(in-process)" in row and "providers" in row and "tools" in row and "commands" in row
    builtins = next(line for line in lines if line.strip().startswith("compaction"))
    assert "tether" in builtins and "compaction_strategies" in builtins
    text = result.stdout
    assert "Providers" in text and "prefixes: fake-" in text
    assert "Tools" in text and "wait_forever" in text
    assert "Commands" in text and "hello" in text
    assert "Load errors" not in text


def test_plugins_json_has_plugins_components_conflicts_and_errors(invoke: Invoke) -> None:
    report = json.loads(invoke(*FAKE, "plugins", "--json").stdout)
    own = {"tether_runlog.plugin", "tether_knowledge.plugin"}  # the CLI registers its own parts
    assert {p["name"] for p in report["plugins"]} == {
        "compaction",
        "demo",
        "sessions",
        "strategies",
        "cli_fake_model",
        *own,
    }
    fake = next(p for p in report["plugins"] if p["name"] == "cli_fake_model")
    assert fake["hooks"] == ["register_commands", "register_providers", "register_tools"]
    assert fake["error"] is None

    def from_fake(kind: str) -> list[str]:
        return [c["name"] for c in report["components"][kind] if c["plugin"] == "cli_fake_model"]

    assert from_fake("provider") == ["fake", "keyless"]
    assert from_fake("tool") == ["add", "wait_forever"]
    assert from_fake("command") == ["hello"]
    assert {
        "name": "none",
        "distribution": "tether",
        "plugin": "compaction",
        "details": "",
    } in report["components"]["compaction strategy"]
    assert report["conflicts"] == [] and report["errors"] == []


def test_a_plugin_whose_hook_raises_is_reported_and_the_others_still_load(
    tmp_path: Path, invoke: Invoke
) -> None:
    broken = write_module(
        tmp_path,
        "cli_broken_plugin",
        """
        import tether

        @tether.hookimpl
        def register_tools(tools):
            raise RuntimeError("tools are on strike")
        """,
    )
    result = invoke(*FAKE, "-p", broken, "plugins")
    assert result.exit_code == 0
    assert "Load errors (1)" in result.stdout
    assert "tools are on strike" in result.stdout
    assert "wait_forever" in result.stdout  # the healthy plugin's tools are still there
    assert "warning:" not in result.stderr  # reported once, in the report


def test_two_plugins_registering_one_name_are_listed_as_a_conflict(
    tmp_path: Path, invoke: Invoke
) -> None:
    dupe = write_module(
        tmp_path,
        "cli_dupe_plugin",
        """
        import tether

        @tether.tool
        def add(a: int, b: int) -> int:
            \"\"\"Another add.\"\"\"
            return a - b

        @tether.hookimpl
        def register_tools(tools):
            tools.add(add)
        """,
    )
    report = json.loads(invoke(*FAKE, "-p", dupe, "plugins", "--json").stdout)
    assert [(c["kind"], c["name"]) for c in report["conflicts"]] == [("tool", "add")]
    assert 'Two plugins register a tool named "add"' in report["conflicts"][0]["message"]


def test_a_broken_plugin_is_a_warning_for_other_commands(tmp_path: Path, invoke: Invoke) -> None:
    broken = write_module(
        tmp_path,
        "cli_broken_providers",
        """
        import tether

        @tether.hookimpl
        def register_providers(providers):
            raise RuntimeError("no providers today")
        """,
    )
    result = invoke(*FAKE, "-p", broken, "models")
    assert result.exit_code == 0
    assert result.stderr.count("no providers today") == 1
    assert result.stderr.startswith("warning: ")
    assert "fake/fake-small" in result.stdout


# -- tether models -----------------------------------------------------------------------------------
def test_models_lists_every_catalogue_and_reports_a_provider_that_cannot_be_built(
    invoke: Invoke,
) -> None:
    result = invoke(*FAKE, "models")
    assert result.exit_code == 0, result.stderr
    rows = {
        line.split()[0]: line for line in result.stdout.splitlines() if line.startswith("  fake/")
    }
    small = rows["fake/fake-small"]
    assert "(small)" in small and "32,000" in small and "4,096" in small and "thinking" in small
    assert small.split()[4:6] == ["1", "2"]  # $/M in, $/M out
    large = rows["fake/fake-large"]
    assert "200,000" in large and "vision" in large and " - " in large  # no pricing known
    assert (
        "cannot list models: AuthenticationError: The keyless provider needs KEYLESS_API_KEY"
        in result.stdout
    )


def test_models_json_and_filtering_by_provider(invoke: Invoke) -> None:
    report = json.loads(invoke(*FAKE, "models", "fake", "--json").stdout)
    assert [p["name"] for p in report["providers"]] == ["fake"]
    small = report["providers"][0]["models"][0]
    assert small["id"] == "fake-small" and small["aliases"] == ["small"]
    assert small["context_window"] == 32000 and small["max_output_tokens"] == 4096
    assert small["pricing"] == {
        "input": 1.0,
        "output": 2.0,
        "cache_read": None,
        "cache_write": None,
    }
    assert small["capabilities"]["thinking"] is True and small["capabilities"]["vision"] is False


def test_models_for_an_unknown_provider_suggests_the_near_one(invoke: Invoke) -> None:
    result = invoke(*FAKE, "models", "fak")
    assert result.exit_code == 1
    assert 'No provider named "fak". Did you mean "fake"?' in result.stderr


def test_models_with_no_provider_installed_says_what_to_install(invoke: Invoke) -> None:
    result = invoke("models")
    assert result.exit_code == 0
    assert "uv pip install ./plugins/anthropic" in result.stdout


def test_models_shows_configured_aliases(tmp_path: Path, invoke: Invoke) -> None:
    config = tmp_path / "aliases.toml"
    config.write_text('[aliases]\nquick = "fake/fake-small"\n')
    result = invoke("--config", str(config), *FAKE, "models")
    assert "quick -> fake/fake-small" in result.stdout


# -- commands from plugins, help, start-up ------------------------------------------------------------
def test_a_command_registered_by_a_plugin_runs_and_is_listed_by_tether_plugins(
    invoke: Invoke,
) -> None:
    assert invoke(*FAKE, "hello").stdout == "hello from a plugin\n"
    assert "Say hello" in invoke(*FAKE, "hello", "--help").stdout
    report = json.loads(invoke(*FAKE, "plugins", "--json").stdout)
    assert "hello" in [c["name"] for c in report["components"]["command"]]


def test_help_lists_the_built_in_commands(invoke: Invoke) -> None:
    result = invoke("--help")
    for name in ("run", "chat", "plugins", "models", "kb", "memory", "sessions"):
        assert f"  {name} " in result.stdout


def test_an_unknown_command_is_a_usage_error() -> None:
    result = CliRunner().invoke(cli, ["frobnicate"])
    assert result.exit_code == 2
    assert "No such command 'frobnicate'" in result.stderr


def test_help_loads_no_plugins_so_it_stays_fast() -> None:
    code = (
        "import sys\n"
        "from tether_cli import cli\n"
        "try:\n"
        "    cli.main(['--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = ('tether.plugins', 'tether.agent', 'pydantic', 'rich')\n"
        "print('loaded:', ','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines()[-1] == "loaded: "
    assert "tether plugins" in out.stdout


def test_importing_the_cli_loads_no_heavy_modules() -> None:
    code = (
        "import sys, tether_cli\n"
        "heavy = ('pydantic', 'rich', 'tether.agent', 'tether.plugins', 'httpx', 'numpy')\n"
        "print(','.join(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_the_installed_script_lists_plugins_in_a_real_process() -> None:
    proc = subprocess.run(
        [str(TETHER), *FAKE, "plugins", "--json"], capture_output=True, text=True, check=True
    )
    report = json.loads(proc.stdout)
    assert "cli_fake_model" in {p["name"] for p in report["plugins"]}


WITHOUT_KB = (
    "import sys\nsys.modules['tether_knowledge'] = None\n"
    "from tether_cli import main\nmain(sys.argv[1:])\n"
)


def test_without_the_knowledge_base_the_cli_loads_cleanly_and_kb_says_what_to_install() -> None:
    """The command line without tether-knowledge reports no load error, lists `kb` with
    what to install, and `tether kb` says it plainly (no traceback)."""
    plugins = subprocess.run(
        [sys.executable, "-c", WITHOUT_KB, "plugins", "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(plugins.stdout)["errors"] == []
    help_text = subprocess.run(
        [sys.executable, "-c", WITHOUT_KB, "--help"], capture_output=True, text=True, check=True
    ).stdout
    assert "kb" in help_text and "run" in help_text
    kb = subprocess.run(
        [sys.executable, "-c", WITHOUT_KB, "kb", "list", "--backend", "memory"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert kb.returncode == 1
    assert 'uv pip install "./core[kb]"' in kb.stderr and "Traceback" not in kb.stderr
