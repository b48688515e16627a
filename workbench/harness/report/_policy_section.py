"""The report's failure analysis of the replays: the detectors, the survival curve and the
policy verdict.

In: `Results` whose ``[replay]`` asks for it (``detectors = true``, as
`experiments/agents.toml` does). Out: the Markdown lines and the HTML fragment the replay
section appends, and ``survival.png`` in the report folder. Every figure is the one
``workbench run`` prints: the detectors and the survival curve as `detector_text` shows them,
and the policy verdict is the run's `Verdict`'s (``policies``), the object the terminal and the
Markdown's verdict block print (so the Markdown does not repeat it here).
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from workbench.harness.report._html_table import plain_table
from workbench.harness.report._replay_text import detector_shown, survival_shown
from workbench.harness.results._policy_verdict_model import PolicyVerdict
from workbench.harness.results._results import Results

__all__ = ["PolicyReport", "policy_report"]

SURVIVAL_PNG = "survival.png"
DETECTOR_NOTE = ("Means per session. retrig: rounds followed by another within 3 turns; fill: "
                 "the context's share of the window after a round (mean, max); growth: "
                 "compactions larger than what they replaced; loops: rounds with no turn since "
                 "the last; req kept: the last request survives; redone: finished tasks a "
                 "summary lists as pending; stale: replaced values still held; cliff: the first "
                 "compaction after which recall falls below half. See the README's glossary.")
SURVIVAL_NOTE = ("Planted facts kept after the k-th compaction, the mean over the sessions that "
                 "reached it (n at round 1); x marks the cliff. The plot draws each line up to "
                 "the last compaction at least half its sessions reached.")
VERDICT_NOTE = "The policy verdict closes the Verdict section above."


@dataclass
class PolicyReport:
    """What the replay section appends: Markdown lines, an HTML fragment, the PNGs it wrote."""

    markdown: list[str] = field(default_factory=list)
    html: str = ""
    pngs: dict[str, bytes] = field(default_factory=dict)


def _verdict_html(found: PolicyVerdict) -> str:
    """The policy verdict per window x threshold: its table, the unranked, the pick."""
    esc = html.escape
    parts = [f"<h3>Policy verdict</h3><p>{esc(found.HEADER)}</p><p>Rule: {esc(found.rule)}.</p>"]
    for s in found.strata:
        rows = pd.DataFrame(s.table_rows())
        table = f'<div class="wb-wide">{plain_table(rows)}</div>' if len(rows) else ""
        items = "".join(f"<li>{esc(r.strategy)}: unranked, {esc(str(r.reason))}</li>"
                        for r in s.unranked)
        parts.append(f"<h4>{esc(s.title)} ({s.n_sessions} sessions)</h4>{table}"
                     f"<ul>{items}</ul><p><strong>{esc(s.recommendation())}</strong></p>")
    return "".join(parts)


def policy_report(results: Results, out: Path,
                  markdown_table: Callable[[pd.DataFrame], str]) -> PolicyReport | None:
    """The detectors, the survival curve and the policy verdict of `results`, for the report.

    Args:
        results: The run's `Results`.
        out: The report folder (``survival.png`` is written there).
        markdown_table: How the report writes a frame as Markdown (its own tables' function,
            passed in so this module needs nothing from the one that calls it).

    Returns:
        A `PolicyReport`, or None when the run reports no policy verdict (its replay does not
        ask for the detectors).
    """
    # light start: the strategies (and matplotlib) load only for a report with replays
    from workbench.strategies import plot_survival

    found = results.verdict().policies
    if found is None:
        return None
    table, curve = results.replay_detectors(), results.replay_survival()
    report = PolicyReport()
    esc = html.escape
    parts = []
    if not table.empty:
        detectors = detector_shown(table)
        report.markdown += ["\n### Failure detectors\n", DETECTOR_NOTE + "\n",
                            markdown_table(detectors)]
        parts.append(f"<h3>Failure detectors</h3><p>{esc(DETECTOR_NOTE)}</p>"
                     f'<div class="wb-wide">{plain_table(detectors)}</div>')
    buf = io.BytesIO()
    plot_survival(curve).savefig(buf, format="png", dpi=100)
    report.pngs[SURVIVAL_PNG] = buf.getvalue()
    (out / SURVIVAL_PNG).write_bytes(report.pngs[SURVIVAL_PNG])
    survival = survival_shown(curve) if not curve.empty else None
    report.markdown += ["\n### Survival\n", SURVIVAL_NOTE + "\n"]
    report.markdown += [markdown_table(survival)] if survival is not None else []
    report.markdown += [f"\n![survival]({SURVIVAL_PNG})\n", f"\n{VERDICT_NOTE}\n"]
    image = base64.b64encode(report.pngs[SURVIVAL_PNG]).decode()
    parts.append(f"<h3>Survival</h3><p>{esc(SURVIVAL_NOTE)}</p>"
                 + (f'<div class="wb-wide">{plain_table(survival)}</div>'
                    if survival is not None else "")
                 + f'<figure><img alt="survival" src="data:image/png;base64,{image}"></figure>')
    parts.append(_verdict_html(found))
    report.html = f'<div id="policies">{"".join(parts)}</div>'
    return report
