"""Self-contained HTML reports (one file, inline CSS, no script, no network), readable on
a phone: below 640 px the tables become one card per row, and long texts wrap."""

from __future__ import annotations

from html import escape

from .compare import Comparison
from .report import EvalReport

__all__ = ["comparison_html", "report_html"]

_CSS = """
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;padding:16px;
color:#1d2330;background:#f6f7fb;overflow-wrap:anywhere}
main{max-width:1100px;margin:0 auto}
h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.15em;margin:1.2em 0 .4em}
.cards{display:flex;flex-wrap:wrap;gap:8px}
.card{background:#fff;border:1px solid #dde1ea;border-radius:8px;padding:8px 12px;min-width:0;flex:1 1 140px}
.card b{display:block;font-size:1.3em}
table{width:100%;border-collapse:collapse;background:#fff;border:1px solid #dde1ea;border-radius:8px}
th,td{text-align:left;padding:6px 8px;border-bottom:1px solid #eceef4;vertical-align:top}
th{font-size:.85em;color:#566}
.pass{color:#0b7a45;font-weight:600}.fail{color:#b42318;font-weight:600}
code,pre{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.85em}
pre{white-space:pre-wrap;background:#f0f2f7;padding:8px;border-radius:6px;margin:4px 0}
details{margin:4px 0}summary{cursor:pointer}
.bar{height:6px;background:#e4e7ef;border-radius:3px;overflow:hidden;margin-top:3px}
.bar i{display:block;height:100%;background:#4c6ef5}
@media (max-width:640px){
 table,thead,tbody,tr,th,td{display:block;width:100%}
 thead{display:none}
 tr{border-bottom:2px solid #dde1ea;padding:6px 0}
 td{border:0;padding:3px 8px}
 td[data-label]::before{content:attr(data-label) ": ";font-weight:600;color:#566}
}
"""


def _page(title: str, body: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )


def _card(label: str, value: str) -> str:
    return f'<div class="card">{escape(label)}<b>{escape(value)}</b></div>'


def _bar(value: float) -> str:
    return f'<div class="bar"><i style="width:{max(0.0, min(value, 1.0)) * 100:.1f}%"></i></div>'


def _verdict(passed: bool) -> str:
    return '<span class="pass">pass</span>' if passed else '<span class="fail">fail</span>'


def report_html(report: EvalReport) -> str:
    """The eval report as one HTML page: totals, one row per case, then every trial with
    its checks (a judge's prompt and reasoning under a disclosure) and its run id
    (``tether trace RUN_ID`` shows the run)."""
    failures = report.failures()
    cost = "unknown" if report.total_cost is None else f"${report.total_cost:.4f}"
    parts = [
        f"<h1>Eval: {escape(report.dataset)}</h1>",
        f"<p>{escape(report.created)} · "
        + escape(", ".join(f"{k} {v}" for k, v in report.settings.items() if v is not None))
        + "</p>",
        '<div class="cards">',
        _card("cases", str(len(report.cases))),
        _card("pass rate", f"{report.pass_rate:.1%}"),
        _card("mean score", f"{report.mean_score:.3f}"),
        _card("cost", cost),
        _card("thresholds", "met" if not failures else "NOT met"),
        "</div>",
    ]
    if failures:
        parts.append(
            "<ul>" + "".join(f"<li class=fail>{escape(f)}</li>" for f in failures) + "</ul>"
        )
    parts.append("<h2>Checks</h2><table><thead><tr><th>check</th><th>mean</th></tr></thead><tbody>")
    for label, value in report.checks.items():
        parts.append(
            f'<tr><td data-label="check">{escape(label)}</td>'
            f'<td data-label="mean">{value:.3f}{_bar(value)}</td></tr>'
        )
    parts.append("</tbody></table><h2>Cases</h2><table><thead><tr>")
    parts.append(
        "<th>case</th><th>result</th><th>pass rate</th><th>pass@k</th>"
        "<th>score (mean ± sd)</th><th>runs</th></tr></thead><tbody>"
    )
    for case in report.cases:
        k = max(case.pass_at_k) if case.pass_at_k else 1
        runs = " ".join(f"<code>{escape(r[:12])}</code>" for r in case.run_ids)
        parts.append(
            f'<tr><td data-label="case"><a href="#{escape(case.case_id)}">'
            f"{escape(case.case_id)}</a></td>"
            f'<td data-label="result">{_verdict(case.passed)}</td>'
            f'<td data-label="pass rate">{case.passes}/{case.trials}</td>'
            f'<td data-label="pass@{k}">{case.pass_at_k.get(k, 0.0):.2f}</td>'
            f'<td data-label="score">{case.mean_score:.3f} ± {case.stdev_score:.3f}'
            f"{_bar(case.mean_score)}</td>"
            f'<td data-label="runs">{runs}</td></tr>'
        )
    parts.append("</tbody></table><h2>Trials</h2>")
    for trial in report.trials:
        anchor = f' id="{escape(trial.case_id)}"' if trial.trial == 0 else ""
        parts.append(
            f"<section{anchor}><h3>{escape(trial.case_id)} · trial "
            f"{trial.trial} · {_verdict(trial.passed)}</h3>"
            f"<p>run <code>{escape(trial.run_id or '-')}</code>"
            + (f" (<code>tether trace {escape(trial.run_id[:12])}</code>)" if trial.run_id else "")
            + f" · {escape(trial.outcome or '-')}"
            f" · {trial.duration:.2f} s · {trial.total_tokens} tokens</p>"
        )
        if trial.error:
            parts.append(f'<p class="fail">{escape(trial.error)}</p>')
        parts.append(f"<details><summary>answer</summary><pre>{escape(trial.text)}</pre></details>")
        for score in trial.scores:
            parts.append(
                f"<details><summary>{_verdict(score.passed)} {escape(score.check)} "
                f"{score.value:.3f}: {escape(score.reason)}</summary>"
            )
            for key in ("prompt_version", "reasoning", "prompt"):
                if key in score.details:
                    parts.append(f"<p><b>{key}</b></p><pre>{escape(str(score.details[key]))}</pre>")
            parts.append("</details>")
        parts.append("</section>")
    return _page(f"Eval: {report.dataset}", "".join(parts))


def comparison_html(comparison: Comparison) -> str:
    """A comparison as one HTML page: the paired test's interval, then the changed cases."""
    c = comparison
    parts = [
        f"<h1>{escape(c.name_b)} vs {escape(c.name_a)}</h1>",
        '<div class="cards">',
        _card("mean A", f"{c.mean_a:.3f}"),
        _card("mean B", f"{c.mean_b:.3f}"),
        _card("B − A", f"{c.mean_difference:+.3f}"),
        _card(f"{c.confidence:.0%} interval", f"[{c.low:+.3f}, {c.high:+.3f}]"),
        _card("p", f"{c.p_value:.4f}"),
        _card("verdict", c.verdict),
        "</div>",
        f"<p>{escape(c.method)}, {c.resamples} resamples over {len(c.cases)} paired cases.</p>",
        "<h2>Changed cases</h2><table><thead><tr><th>case</th><th>change</th>"
        "<th>A</th><th>B</th><th>Δ</th></tr></thead><tbody>",
    ]
    for case in c.changed:
        parts.append(
            f'<tr><td data-label="case">{escape(case.case_id)}</td>'
            f'<td data-label="change">{escape(case.change)}</td>'
            f'<td data-label="A">{case.score_a:.3f}</td><td data-label="B">{case.score_b:.3f}</td>'
            f'<td data-label="Δ">{case.delta:+.3f}</td></tr>'
        )
    parts.append("</tbody></table>")
    return _page(f"{c.name_b} vs {c.name_a}", "".join(parts))
