"""MkDocs hooks: reference pages generated from the code at build time.

Three pages are not written by hand, so they cannot drift from what they describe:

- ``reference/cli.md``: every ``tether`` command and sub-command with its ``--help``,
  produced by running the real command through click (commands that plugins add through
  ``register_commands`` are included when those plugins are installed).
- ``reference/configuration.md``: every key of ``tether.toml``, walked from the pydantic
  models of :mod:`tether.config` (type, default, description).
- ``reference/hooks.md``: every hook of :mod:`tether.hookspecs`, its signature and
  docstring.

The docstrings use Sphinx roles (``:class:`~tether.Agent```), which mkdocstrings leaves
as written: :func:`on_page_content` turns each into a cross-reference (a link when the
name is documented on the site, else code).
"""

from __future__ import annotations

import html
import inspect
import re
import types
import typing
from typing import Any

import click
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

WIDTH = 88
"""Terminal width the help texts are formatted for."""


# -- CLI ----------------------------------------------------------------------------------
def cli_commands() -> list[tuple[list[str], click.Command]]:
    """Every command of ``tether``: (path of names, command), depth first, sorted."""
    from tether_cli import CliState, cli

    root = click.Context(cli, info_name="tether", obj=CliState())
    found: list[tuple[list[str], click.Command]] = []

    def walk(group: click.Group, ctx: click.Context, path: list[str]) -> None:
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            found.append(([*path, name], command))
            if isinstance(command, click.Group):
                walk(command, click.Context(command, info_name=name, parent=ctx), [*path, name])

    walk(cli, root, [])
    return found


def command_help(path: list[str]) -> str:
    """What ``tether PATH --help`` prints, run through the real command line."""
    from click.testing import CliRunner

    from tether_cli import CliState, cli

    result = CliRunner().invoke(
        cli,
        [*path, "--help"],
        prog_name="tether",
        obj=CliState(),
        terminal_width=WIDTH,
        max_content_width=WIDTH,
    )
    if result.exit_code != 0:
        raise RuntimeError(f"tether {' '.join(path)} --help failed: {result.output}")
    return result.output.rstrip()


def _distribution(command: click.Command) -> str | None:
    module = getattr(command.callback, "__module__", "") or ""
    top = module.split(".")[0]
    if top == "tether" or not top:
        return None
    return top.replace("_", "-")


def cli_page() -> str:
    lines = [
        "# Command-line reference",
        "",
        "Each section is the command's own `--help`, captured from the real command when",
        "this site was built. Commands marked with a distribution come from that plugin",
        "and exist once it is installed; `tether plugins` lists what your installation has.",
        "",
        "## tether",
        "",
        "```text",
        command_help([]),
        "```",
        "",
    ]
    for path, command in cli_commands():
        name = "tether " + " ".join(path)
        level = "#" * min(2 + len(path) - 1, 4)
        lines += [f"{level} {name}", ""]
        source = _distribution(command)
        if source:
            lines += [f"*From the `{source}` distribution.*", ""]
        lines += ["```text", command_help(path), "```", ""]
    return "\n".join(lines)


# -- configuration ------------------------------------------------------------------------
def _type_name(annotation: Any) -> str:
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_type_name(a) for a in typing.get_args(annotation))
    if origin is not None:
        args = ", ".join(_type_name(a) for a in typing.get_args(annotation))
        return f"{getattr(origin, '__name__', str(origin))}[{args}]"
    if annotation is type(None):
        return "None"
    if annotation is typing.Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))


def _model_of(annotation: Any) -> tuple[str, type] | None:
    """(key suffix, model) when a field holds a model or a table of models."""
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "", annotation
    if typing.get_origin(annotation) is dict:
        value = typing.get_args(annotation)[1]
        if isinstance(value, type) and issubclass(value, BaseModel):
            return ".<name>", value
    return None


def config_keys() -> list[tuple[str, str, list[tuple[str, str, str, str]]]]:
    """The configuration as (table, its description, [(key, type, default, description)])."""
    from pydantic_core import PydanticUndefined

    from tether.config import Config

    tables: list[tuple[str, str, list[tuple[str, str, str, str]]]] = []

    def walk(model: type, table: str) -> None:
        rows: list[tuple[str, str, str, str]] = []
        nested: list[tuple[str, type]] = []
        for name, field in model.model_fields.items():  # type: ignore[attr-defined]
            if field.exclude:
                continue
            inner = _model_of(field.annotation)
            if inner is not None:
                nested.append(((f"{table}." if table else "") + name + inner[0], inner[1]))
                continue
            if field.default_factory is not None:
                default = repr(field.default_factory())
            elif field.default is PydanticUndefined:
                default = "required"
            else:
                default = repr(field.default)
            rows.append((name, _type_name(field.annotation), default, field.description or ""))
        own = model.__dict__.get("__doc__")  # not pydantic's BaseModel docstring
        tables.append((table, inspect.cleandoc(own) if own else "", rows))
        for key, inner_model in nested:
            walk(inner_model, key)

    walk(Config, "")
    return tables


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    """Inline code inside a table cell (a ``|`` in a code span would end the cell)."""
    return f"<code>{html.escape(text).replace('|', '&#124;')}</code>"


def _guide_sections() -> dict[str, str]:
    """Headings of the hand-written configuration page -> their anchors."""
    from pathlib import Path

    from markdown.extensions.toc import slugify

    page = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
    sections = {}
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
            sections[heading] = slugify(heading.replace("`", ""), "-")
    return sections


def config_page() -> str:
    lines = [
        "# Configuration reference",
        "",
        "Every key of `tether.toml`, generated from the configuration models when this site",
        "was built. [Configuration](../configuration.md) explains where the file is, how",
        "keys combine and the environment variables.",
        "",
    ]
    explained = _guide_sections()
    for table, doc, rows in config_keys():
        heading = f"`[{table}]`" if table else "Top-level keys"
        lines += [f"## {heading}", ""]
        if doc:
            lines += [_rst_to_markdown(doc), ""]
        anchor = explained.get(heading)
        if anchor:
            lines += [f"Explained in [Configuration](../configuration.md#{anchor}).", ""]
        lines += ["| Key | Type | Default | Description |", "| --- | --- | --- | --- |"]
        lines += [
            f"| `{key}` | {_code(kind)} | {_code(default)} | {_cell(description)} |"
            for key, kind, default, description in rows
        ]
        lines.append("")
    return "\n".join(lines)


# -- hooks ----------------------------------------------------------------------------------
_ROLE = re.compile(r":(?:class|func|meth|mod|data|attr|exc):`~?(?P<target>[^`]+)`")
_PARAM = re.compile(r"^:param (?P<name>\w+):", re.MULTILINE)


def _rst_to_markdown(text: str) -> str:
    """The reST of docstrings as Markdown: roles as code, ``::`` blocks fenced."""

    def role(match: re.Match[str]) -> str:
        target = match.group("target")
        return f"`{target}`"

    text = _ROLE.sub(role, text)
    text = _PARAM.sub(lambda m: f"**`{m.group('name')}`**:", text)
    text = text.replace("``", "`")
    out: list[str] = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.rstrip().endswith("::"):
            out += [line.rstrip()[:-2].rstrip() + ":" if line.strip() != "::" else "", ""]
            index += 1
            block: list[str] = []
            while index < len(lines) and (not lines[index].strip() or lines[index][:1] == " "):
                block.append(lines[index])
                index += 1
            while block and not block[-1].strip():
                block.pop()
            out += ["```python", *inspect.cleandoc("\n".join(block)).splitlines(), "```", ""]
            continue
        out.append(line)
        index += 1
    return "\n".join(out)


def hook_specs() -> list[tuple[str, str, str]]:
    """(name, signature, docstring) of every hook, in the order of the module."""
    from tether import hookspecs

    specs = []
    for name, function in vars(hookspecs).items():
        if name.startswith("register_") and callable(function):
            signature = str(inspect.signature(function)).replace("'", "")
            specs.append((name, f"def {name}{signature}", inspect.getdoc(function) or ""))
    return specs


def hooks_page() -> str:
    from tether import hookspecs

    lines = [
        "# Hook reference",
        "",
        "Generated from `tether.hookspecs` when this site was built.",
        "",
        _rst_to_markdown(inspect.getdoc(hookspecs) or ""),
        "",
    ]
    for name, signature, doc in hook_specs():
        lines += [f"## `{name}`", "", "```python", signature, "```", "", _rst_to_markdown(doc), ""]
    return "\n".join(lines)


# -- MkDocs -----------------------------------------------------------------------------------
GENERATED = {
    "reference/cli.md": cli_page,
    "reference/configuration.md": config_page,
    "reference/hooks.md": hooks_page,
}


SPHINX_ROLE = re.compile(
    r":(?:py:)?(?:class|meth|func|mod|attr|data|exc|obj|const|type):<code>([^<]*)</code>"
)
"""A Sphinx role as it reaches the page: the role's name, then its target in code."""


def sphinx_role_to_reference(match: re.Match[str]) -> str:
    """``:class:<code>~tether.sessions.JsonlSession</code>`` as an optional cross-reference
    shown as ``JsonlSession`` (``~``: the last name only; ``title <target>``: the title),
    which autorefs makes a link when the target is documented and leaves as code if not."""
    text = html.unescape(match.group(1)).strip()
    title, target = text, text
    explicit = re.fullmatch(r"(.+?)\s*<([^<>]+)>", text)
    if explicit:
        title, target = explicit.group(1), explicit.group(2)
    target = target.lstrip("~.!")
    if text.startswith("~"):
        title = target.rsplit(".", 1)[-1]
    shown = f"<code>{html.escape(title)}</code>"
    return f'<autoref identifier="{html.escape(target)}" optional>{shown}</autoref>'


def on_page_content(html_text: str, **kwargs: Any) -> str:
    """Turn the Sphinx roles left in rendered docstrings into cross-references."""
    return SPHINX_ROLE.sub(sphinx_role_to_reference, html_text)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated reference pages to the site."""
    for uri, build in GENERATED.items():
        files.append(File.generated(config, uri, content=build()))
    return files
