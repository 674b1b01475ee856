"""The HTML report in real headless Chromium at phone width (390 px): it renders (its
score bars are on the screenshot) and nothing overflows sideways (the page's
``scrollWidth`` is at most the window's ``innerWidth``). Skipped only without Chromium.

Headless Chromium will not make its window narrower than 500 px, so the report is shown
in a 390 px wide frame: inside it, ``innerWidth`` and the media queries see a phone.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

from tether import AuthenticationError
from tether.testing import Failure
from tether.testing.screenshots import read_png
from tether_evals import Dataset, report_html, run_eval

CHROMIUM = next(
    (
        path
        for name in ("chromium", "chromium-browser", "google-chrome", "chrome")
        if (path := shutil.which(name))
    ),
    None,
)
WIDTH, HEIGHT = 390, 844
WINDOW = (500, 900)
FRAME = (
    '<!doctype html><body style="margin:0">'
    f'<iframe src="{{src}}" style="width:{WIDTH}px;height:{HEIGHT}px;border:0"></iframe></body>'
)
BAR = (0x4C, 0x6E, 0xF5)
OK, OVERFLOW = (0x01, 0xC8, 0x03), (0xC8, 0x01, 0x03)
MEASURE = f"""<script>
const ok = document.documentElement.scrollWidth <= window.innerWidth
  && window.innerWidth === {WIDTH};
const flag = document.createElement("div");
flag.style.cssText = "position:fixed;left:0;top:0;width:40px;height:40px;z-index:9;background:"
  + (ok ? "rgb{OK}" : "rgb{OVERFLOW}");
document.body.appendChild(flag);
</script></body>"""


def _has(rows: list[bytes], colour: tuple[int, int, int]) -> bool:
    needle = bytes(colour)
    return any(needle in row and row.index(needle) % 3 == 0 for row in rows)


def _framed(tmp_path: Path, page: Path) -> str:
    frame = tmp_path / f"frame-{page.stem}.html"
    frame.write_text(FRAME.replace("{src}", page.name), encoding="utf-8")
    return frame.as_uri()


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--window-size={WINDOW[0]},{WINDOW[1]}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium binary installed")
def test_the_html_report_is_readable_at_phone_width(
    tmp_path: Path, example_agent: ModuleType, example_dataset: Dataset
) -> None:
    long_word = "https://status.example.com/incident" + "0123456789" * 30
    failure = Failure(AuthenticationError(f"Key rejected, see {long_word}", provider="demo"))
    example_agent.SCRIPTS["greeting"] = [failure]
    report = asyncio.run(
        run_eval(example_dataset, example_agent.make_agent, models=example_agent.eval_models())
    )
    page = tmp_path / "report.html"
    html = report_html(report)
    page.write_text(html, encoding="utf-8")
    assert long_word in html and "<script" not in html and "http" not in html.split(long_word)[0]

    shot = tmp_path / "report.png"
    browser = _chromium(tmp_path, f"--screenshot={shot}", _framed(tmp_path, page))
    assert shot.is_file(), browser.stderr[-2000:]
    width, _, rows = read_png(shot)
    assert width == WINDOW[0]
    assert _has(rows, BAR)
    assert len(set(rows)) > 50  # text and bars, not a blank page

    # The page measures itself: a green square when nothing is wider than the window
    # (and the window is the phone's width), a red one otherwise.
    measured = tmp_path / "measured.html"
    measured.write_text(html.replace("</body>", MEASURE), encoding="utf-8")
    flagged = tmp_path / "measured.png"
    browser = _chromium(tmp_path, f"--screenshot={flagged}", _framed(tmp_path, measured))
    assert flagged.is_file(), browser.stderr[-2000:]
    _, _, rows = read_png(flagged)
    assert not _has(rows, OVERFLOW), "the report is wider than a 390 px phone screen"
    assert _has(rows, OK)
