"""The documentation site builds in strict mode and its reference is complete.

The site is built once per test session with ``mkdocs build --strict`` (any warning:
a broken link or anchor, an unresolved cross-reference, a docstring mkdocstrings cannot
read, fails the build). Then: every ``tether`` command and sub-command (built-in and
from the installed plugins) has its section with its real ``--help`` in the command-line
reference; every configuration key, walked from the pydantic models, is in the
configuration reference under its table; and headless Chromium renders the home page and
the hook reference with the theme (skipped only when no Chromium is installed).
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import click
import pytest

from tether_testing.screenshots import read_png

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = Path(sys.executable).with_name("mkdocs")


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env.pop("TETHER_CONFIG", None)
    proc = subprocess.run(
        [str(MKDOCS), "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    assert "WARNING" not in log, log
    return out


def _text(page: Path) -> str:
    """The page's visible text, tags removed, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text(encoding="utf-8")))


def _commands() -> list[tuple[list[str], click.Command]]:
    from tether_cli import CliState, cli

    found: list[tuple[list[str], click.Command]] = []

    def walk(group: click.Group, ctx: click.Context, path: list[str]) -> None:
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            assert command is not None
            if command.hidden:
                continue
            found.append(([*path, name], command))
            if isinstance(command, click.Group):
                walk(command, click.Context(command, info_name=name, parent=ctx), [*path, name])

    walk(cli, click.Context(cli, info_name="tether", obj=CliState()), [])
    return found


def test_every_cli_command_has_its_help_in_the_reference(site: Path) -> None:
    page = site / "reference" / "cli.html"
    text = _text(page)
    commands = _commands()
    assert {"run", "chat", "plugins", "kb"} <= {path[0] for path, _ in commands}
    for path, command in commands:
        name = "tether " + " ".join(path)
        anchor = "-".join(["tether", *path]).replace("_", "-")
        assert f'id="{anchor}"' in page.read_text(encoding="utf-8"), f"no section for {name}"
        # The embedded help is the command's own: its usage line and every option.
        assert f"Usage: {name}" in text, f"no usage of {name}"
        for param in command.params:
            for option in getattr(param, "opts", []):
                if option.startswith("-"):
                    assert option in text, f"{name}: option {option} missing"


def _config_keys() -> list[tuple[str, str]]:
    from pydantic import BaseModel

    from tether.config import Config

    keys: list[tuple[str, str]] = []

    def walk(model: type[BaseModel], table: str) -> None:
        for name, field in model.model_fields.items():
            if field.exclude:
                continue
            annotation = field.annotation
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                walk(annotation, f"{table}.{name}".lstrip("."))
                continue
            if typing.get_origin(annotation) is dict:
                value = typing.get_args(annotation)[1]
                if isinstance(value, type) and issubclass(value, BaseModel):
                    walk(value, f"{table}.{name}.<name>".lstrip("."))
                    continue
            keys.append((table, name))

    walk(Config, "")
    return keys


def test_every_configuration_key_is_in_the_reference(site: Path) -> None:
    text = _text(site / "reference" / "configuration.html")
    sections = re.split(r"\n(?=\[[^\]\n]+\]¶|Top-level keys¶)", text)
    by_table: dict[str, str] = {}
    for section in sections:
        heading = section.split("¶", 1)[0].strip()
        table = "" if heading == "Top-level keys" else heading.strip("[]")
        by_table[table] = section
    keys = _config_keys()
    assert ("limits", "max_turns") in keys and ("providers.<name>", "api_key") in keys
    missing = [
        f"{table}.{key}".lstrip(".")
        for table, key in keys
        if table not in by_table or not re.search(rf"\n{re.escape(key)}\s*\n?\S", by_table[table])
    ]
    assert not missing, f"not in the configuration reference: {missing}"


def test_the_hook_reference_documents_every_hookspec(site: Path) -> None:
    from tether import hookspecs

    text = _text(site / "reference" / "hooks.html")
    hooks = [name for name in vars(hookspecs) if name.startswith("register_")]
    assert "register_tools" in hooks
    for name in hooks:
        doc = getattr(hookspecs, name).__doc__.strip().splitlines()[0].replace("``", "")
        assert f"def {name}(" in text and doc.split("(")[0] in text, name


# -- headless Chromium ----------------------------------------------------------------------
CHROMIUM = next(
    (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
    None,
)
WIDTH, HEIGHT = 1200, 800
HEADER = (0x40, 0x51, 0xB5)
"""The Material theme's default primary colour (indigo), the header bar's."""


def _chromium(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={home / 'profile'}", *args],
        env=dict(os.environ, HOME=str(home)),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )  # fmt: skip


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium binary installed")
@pytest.mark.parametrize(
    ("page", "heading"),
    [("index.html", "tether documentation"), ("reference/hooks.html", "register_tools")],
)
def test_chromium_renders_the_site(site: Path, tmp_path: Path, page: str, heading: str) -> None:
    url = (site / page).as_uri()
    dom = _chromium("--dump-dom", url, home=tmp_path)
    assert dom.returncode == 0, dom.stderr
    assert heading in dom.stdout and "md-header" in dom.stdout
    shot = tmp_path / f"{page.replace('/', '-')}.png"
    proc = _chromium(f"--screenshot={shot}", f"--window-size={WIDTH},{HEIGHT}", url, home=tmp_path)
    assert proc.returncode == 0 and shot.exists(), proc.stderr
    destination = os.environ.get("TETHER_DOCS_SCREENSHOTS")
    if destination:
        Path(destination).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(destination) / shot.name)
    width, height, rows = read_png(shot)
    assert (width, height) == (WIDTH, HEIGHT)
    # The theme's stylesheet applied: the header bar across the top is the theme colour,
    # and below it the page is mostly white with (dark) text on it.
    top = rows[20]
    assert all(abs(a - b) <= 8 for a, b in zip(top[600 * 3 : 600 * 3 + 3], HEADER, strict=True))
    body = b"".join(rows[200:600])
    pixels = [body[i : i + 3] for i in range(0, len(body), 3 * 7)]
    dark = sum(1 for p in pixels if max(p) < 120)
    white = sum(1 for p in pixels if min(p) > 240)
    assert white > len(pixels) // 2 and dark > 0


def test_the_api_reference_shows_no_raw_sphinx_roles(site: Path) -> None:
    page = (site / "reference" / "api.html").read_text(encoding="utf-8")
    text = _text(site / "reference" / "api.html")
    raw = re.findall(r":(?:class|meth|func|mod|attr|exc|data|obj):`?\S{0,40}", text)
    assert raw == []
    # A role naming a documented object became a link to it.
    assert re.search(
        r'<a class="autorefs autorefs-internal"[^>]*href="#tether\.config\.Config"', page
    )


PHONE_WIDTH = 390
_OVERFLOW_PROBE = """
window.addEventListener("load", () => {
  const width = document.documentElement.clientWidth;
  const scrolls = (e) => ["auto", "scroll"].includes(getComputedStyle(e).overflowX);
  const outside = [];
  for (const e of document.querySelectorAll("body *")) {
    const box = e.getBoundingClientRect();
    if (box.width === 0 || box.right <= width + 1) continue;
    let contained = false;
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      if (scrolls(a) && a.getBoundingClientRect().right <= width + 1) { contained = true; break; }
    }
    if (!contained) outside.push(`${e.tagName}.${e.className}`);
  }
  parent.postMessage(JSON.stringify({
    width, scroll: document.documentElement.scrollWidth, outside: outside.slice(0, 10)
  }), "*");
});
"""


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium binary installed")
@pytest.mark.parametrize(
    "page", ["reference/cli.html", "reference/api.html", "getting-started.html"]
)
def test_nothing_overflows_the_page_at_phone_width(site: Path, tmp_path: Path, page: str) -> None:
    """At 390 px (a phone), the page never scrolls sideways and nothing sticks out on
    its right: wide code and tables scroll inside their own box. The page is shown in
    an iframe that wide (headless Chromium's window is at least 500 px), and reports
    what lies past its right edge outside any scrolling box."""
    import json

    source = site / page
    probe = source.with_name(f"{source.stem}-phone-probe.html")
    probe.write_text(
        source.read_text(encoding="utf-8").replace(
            "</body>", f"<script>{_OVERFLOW_PROBE}</script></body>"
        ),
        encoding="utf-8",
    )
    frame = site / f"phone-{source.stem}.html"
    frame.write_text(
        f'<html><body><iframe src="{probe.relative_to(site).as_posix()}" width="{PHONE_WIDTH}" '
        'height="800" style="border:0"></iframe><pre id="report"></pre><script>'
        "addEventListener('message', e => {document.getElementById('report').textContent = e.data})"
        "</script></body></html>",
        encoding="utf-8",
    )
    try:
        dom = _chromium("--virtual-time-budget=10000", "--dump-dom", frame.as_uri(), home=tmp_path)
    finally:
        frame.unlink()
        probe.unlink()
    assert dom.returncode == 0, dom.stderr
    found = re.search(r'<pre id="report">([^<]+)</pre>', dom.stdout)
    assert found is not None, "the page did not report its layout"
    report = json.loads(html.unescape(found.group(1)))
    assert report == {"width": PHONE_WIDTH, "scroll": PHONE_WIDTH, "outside": []}
