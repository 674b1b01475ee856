"""Interop with the reference MCP servers from npm (``server-everything``,
``server-filesystem``) and the MCP Inspector CLI, installed by ``npm ci`` in
``tests/npm`` (the CI script does it, and so does this module when they are missing).
Skipped, saying why, when npm is missing or cannot install them."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import tether
from tether.messages import ImageBlock, Message, TextBlock
from tether.testing import Reply, ScriptedProvider, call
from tether.tokens import estimate_message
from tether_mcp.client_features import ClientFeatures, ElicitationRequest, SamplingRequest
from tether_mcp.connection import ServerConnection
from tether_mcp.settings import ServerSettings
from tether_mcp.toolset import McpToolset

NPM = Path(__file__).with_name("npm")
BIN = NPM / "node_modules" / ".bin"


def _install() -> bool:
    """Install the pinned packages (``npm ci``) if npm is here and they are not yet."""
    if shutil.which("npm") is None:
        return False
    if not (BIN / "mcp-server-everything").exists():
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=NPM,
            capture_output=True,
            timeout=600,
            check=False,
        )
    return (BIN / "mcp-server-everything").exists()


pytestmark = [
    pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed"),
    pytest.mark.skipif(
        not _install(),
        reason="`npm ci` in contrib/mcp/tests/npm failed (no registry access?): the "
        "reference MCP servers are not installed",
    ),
]

#: Every tool server-everything offers a client with sampling, elicitation and roots,
#: except `simulate-research-query`, which can only run as a task (tether hides it).
EVERYTHING_TOOLS = {
    "echo",
    "get-annotated-message",
    "get-env",
    "get-resource-links",
    "get-resource-reference",
    "get-roots-list",
    "get-structured-content",
    "get-sum",
    "get-tiny-image",
    "gzip-file-as-resource",
    "toggle-simulated-logging",
    "toggle-subscriber-updates",
    "trigger-elicitation-request",
    "trigger-long-running-operation",
    "trigger-sampling-request",
    "trigger-url-elicitation",
}


def everything(features: ClientFeatures) -> ServerConnection:
    settings = ServerSettings(command=str(BIN / "mcp-server-everything"), args=["stdio"])
    return ServerConnection("everything", settings, features=features)


async def test_server_everything_offers_every_tool_and_hides_the_task_only_one() -> None:
    connection = everything(ClientFeatures())
    try:
        await connection.ensure_started()
        names = {t.name for t in connection.tools}
    finally:
        await connection.aclose()
    assert names == EVERYTHING_TOOLS


async def test_sampling_round_trips_through_the_model_after_approval() -> None:
    model = ScriptedProvider([Reply(text="Paris is the capital.")])
    asked: list[SamplingRequest] = []

    def approve(request: SamplingRequest) -> bool:
        asked.append(request)
        return True

    connection = everything(ClientFeatures(model=model, approve=approve))
    try:
        result = await connection.call(
            "trigger-sampling-request", {"prompt": "Capital of France?", "maxTokens": 30}
        )
    finally:
        await connection.aclose()
    text = result.content[0].text  # type: ignore[union-attr]
    assert "Paris is the capital." in text
    assert len(asked) == 1 and "Capital of France?" in asked[0].messages[-1][1]
    assert asked[0].max_tokens == 30
    assert "Capital of France?" in model.requests[0].messages[-1].text


async def test_declined_sampling_never_reaches_the_model() -> None:
    model = ScriptedProvider([Reply(text="must not be used")])
    connection = everything(ClientFeatures(model=model, approve=lambda request: False))
    try:
        result = await connection.call("trigger-sampling-request", {"prompt": "hi"})
    finally:
        await connection.aclose()
    assert model.requests == []
    assert "must not be used" not in json.dumps(result.model_dump(mode="json"))


async def test_elicitation_round_trips_through_the_callback() -> None:
    seen: list[ElicitationRequest] = []

    def elicit(request: ElicitationRequest) -> dict[str, Any]:
        seen.append(request)
        return {"name": "Ada Lovelace"}

    connection = everything(ClientFeatures(elicit=elicit))
    try:
        result = await connection.call("trigger-elicitation-request", {})
    finally:
        await connection.aclose()
    text = "\n".join(c.text for c in result.content if c.type == "text")  # type: ignore[union-attr]
    assert "Ada Lovelace" in text and "accept" in text
    assert seen and seen[0].schema is not None and "name" in seen[0].schema["properties"]


async def test_roots_are_the_workspace(tmp_path: Path) -> None:
    connection = everything(ClientFeatures(roots=[tmp_path]))
    try:
        result = await connection.call("get-roots-list", {})
    finally:
        await connection.aclose()
    assert tmp_path.as_uri() in result.content[0].text  # type: ignore[union-attr]


async def test_an_image_result_reaches_the_model_as_an_image_block() -> None:
    model = ScriptedProvider([Reply(tool_calls=[call("everything__get-tiny-image")]), Reply("ok")])
    toolset = McpToolset(everything(ClientFeatures()))
    agent = tether.Agent(model, tools=[toolset], config=tether.Config())
    try:
        result = await agent.run("show me")
    finally:
        await agent.aclose()
    [answer] = [r for m in result.messages if m.role == "tool" for r in m.tool_results]
    assert isinstance(answer.content, list)
    images = [b for b in answer.content if isinstance(b, ImageBlock)]
    assert len(images) == 1 and images[0].mime_type == "image/png"
    texts = " ".join(b.text for b in answer.content if isinstance(b, TextBlock))
    assert images[0].data and images[0].data[:40] not in texts


async def test_reading_a_file_through_server_filesystem_costs_about_what_read_file_costs(
    tmp_path: Path,
) -> None:
    from tether_tools import read_file

    lines = [f"line {i}: the quick brown fox jumps over the lazy dog {i * 7}" for i in range(300)]
    (tmp_path / "notes.txt").write_text("\n".join(lines) + "\n")
    settings = ServerSettings(
        command=str(BIN / "mcp-server-filesystem"), args=[str(tmp_path)], cwd=tmp_path
    )
    toolset = McpToolset(ServerConnection("files", settings))

    async def cost(tool: str, path: str, tools: list[Any]) -> int:
        model = ScriptedProvider([Reply(tool_calls=[call(tool, path=path)]), Reply("ok")])
        agent = tether.Agent(model, tools=tools, config=tether.Config(), cwd=tmp_path)
        try:
            result = await agent.run("read it")
        finally:
            await agent.aclose()
        [message] = [m for m in result.messages if m.role == "tool"]
        assert not message.tool_results[0].is_error, message.tool_results[0].text
        return estimate_message(Message(role="tool", content=message.content))

    through_mcp = await cost("files__read_text_file", str(tmp_path / "notes.txt"), [toolset])
    through_read_file = await cost("read_file", "notes.txt", [read_file])
    assert through_mcp <= 1.1 * through_read_file, (through_mcp, through_read_file)


def test_the_inspector_cli_lists_and_calls_tools_through_tether_mcp_serve(
    tmp_path: Path,
) -> None:
    inspector = BIN / "mcp-inspector"
    (tmp_path / "hello.txt").write_text("hello from tether\n")
    config = tmp_path / "tether.toml"
    config.write_text("")
    tether_cli = str(Path(sys.executable).with_name("tether"))
    serve = [
        "-e",
        f"TETHER_CONFIG={config}",
        "-e",
        f"TETHER_DATA_DIR={tmp_path / 'data'}",
        tether_cli,
        "mcp",
        "serve",
        "--tools",
        "fs",
        "--root",
        str(tmp_path),
    ]

    def inspect(*args: str) -> Any:
        done = subprocess.run(
            [str(inspector), "--cli", *serve, *args],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    listed = inspect("--method", "tools/list")
    names = {t["name"] for t in listed["tools"]}
    assert {"read_file", "list_dir"} <= names
    called = inspect(
        "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=hello.txt"
    )
    assert "hello from tether" in called["content"][0]["text"]


async def test_an_image_read_through_server_filesystem_is_one_image_block(
    tmp_path: Path,
) -> None:
    import base64

    png = base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    )
    (tmp_path / "dot.png").write_bytes(png)
    settings = ServerSettings(
        command=str(BIN / "mcp-server-filesystem"), args=[str(tmp_path)], cwd=tmp_path
    )
    connection = ServerConnection("files", settings)
    try:
        result = await connection.call("read_media_file", {"path": str(tmp_path / "dot.png")})
    finally:
        await connection.aclose()
    from tether_mcp.results import to_blocks

    assert result.structured_content is not None  # the server sends it twice ...
    blocks = to_blocks(result)  # ... the model sees it once
    assert [type(b) for b in blocks] == [ImageBlock]
    assert base64.b64decode(blocks[0].data or "") == png


async def test_resources_and_prompts_reach_the_model_as_tools() -> None:
    model = ScriptedProvider(
        [
            Reply(
                tool_calls=[
                    call(
                        "everything__read_resource",
                        uri="demo://resource/static/document/features.md",
                    ),
                    call("everything__get_prompt", name="args-prompt", arguments={"city": "Oslo"}),
                ]
            ),
            Reply("ok"),
        ]
    )
    toolset = McpToolset(everything(ClientFeatures()))
    agent = tether.Agent(model, tools=[toolset], config=tether.Config())
    try:
        result = await agent.run("look")
    finally:
        await agent.aclose()
    offered = {d.name: d for d in model.requests[0].tools}
    assert "demo://resource/static/document/features.md" in (
        offered["everything__read_resource"].description
    )
    assert "args-prompt(city, state)" in offered["everything__get_prompt"].description
    resource, prompt = [r for m in result.messages if m.role == "tool" for r in m.tool_results]
    assert not resource.is_error and "#" in resource.text  # the markdown document
    assert not prompt.is_error and "Oslo" in prompt.text and prompt.text.startswith("user:")


def test_the_cli_lists_and_reads_resources_and_prompts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from tether.cli import cli

    config = tmp_path / "tether.toml"
    config.write_text(
        "[mcp.servers.everything]\n"
        f"command = {json.dumps(str(BIN / 'mcp-server-everything'))}\n"
        'args = ["stdio"]\n'
    )
    monkeypatch.setenv("TETHER_CONFIG", str(config))
    monkeypatch.setenv("TETHER_DATA_DIR", str(tmp_path / "data"))
    runner = CliRunner()

    listed = runner.invoke(cli, ["mcp", "resources", "everything"], catch_exceptions=False)
    assert listed.exit_code == 0, listed.output
    assert "demo://resource/static/document/features.md  text/markdown" in listed.output
    read = runner.invoke(
        cli,
        ["mcp", "resources", "everything", "demo://resource/static/document/features.md"],
        catch_exceptions=False,
    )
    assert read.exit_code == 0 and read.output.lstrip().startswith("#")
    prompts = runner.invoke(cli, ["mcp", "prompts", "everything"], catch_exceptions=False)
    assert "args-prompt(city, state?)" in prompts.output
    got = runner.invoke(
        cli,
        ["mcp", "prompts", "everything", "args-prompt", '{"city": "Oslo"}'],
        catch_exceptions=False,
    )
    assert got.exit_code == 0 and "Oslo" in got.output
