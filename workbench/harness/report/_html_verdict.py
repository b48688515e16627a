"""The verdict section of the HTML report: what the run found, per model x window.

The HTML renderer of the run's one `Verdict` (the terminal text and the Markdown report render
the same object): `verdict_view` draws a `VerdictView` (plain data) from it, and
`render_verdict` only draws that.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import pandas as pd

from workbench.harness.report._html_table import short_label, short_window
from workbench.harness.results._verdict import HEADLINE_METRICS, METRIC_LABELS
from workbench.harness.results._verdict_model import Verdict


@dataclass
class Finding:
    """One model x window: which template did best, and how sure that is.

    Attributes:
        model: The model identity.
        window: The window label (``8k``, ``none``).
        headline: One sentence for a person.
        winner: The template that beat every other one, or None.
        details: One line per comparison (difference, 95% interval, Holm p-value).
        recommendation: The stratum's ``Recommendation:`` line.
    """

    model: str
    window: str
    headline: str
    winner: str | None = None
    details: list[str] = field(default_factory=list)
    recommendation: str = ""


@dataclass
class VerdictView:
    """What the verdict section shows: findings, warnings and a summary of the errors."""

    metric: str
    recommendation: str = ""
    """The run's ``Recommendation:`` line (the first thing the section shows)."""
    findings: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    errors: list[tuple[str, int, str]] = field(default_factory=list)
    """``(error type, cells, an example message)``, most frequent first."""

    def to_text(self) -> str:
        """The verdict as plain text lines."""
        lines = [f"Verdict on {self.metric}:"]
        if self.recommendation:
            lines.append(self.recommendation)
        for f in self.findings:
            lines.append(f"- {f.model} @ {f.window}: {f.headline}")
        lines += [f"! {w}" for w in self.warnings]
        lines += [f"error {t}: {n} cell(s), e.g. {msg}" for t, n, msg in self.errors]
        return "\n".join(lines)


def verdict_view(found: Verdict) -> VerdictView:
    """What the page shows of a `Verdict` (the same verdict `run`, `compare` and the notebook
    print): the run's recommendation first; per model x window, the template it recommends,
    each headline metric's winner (a template significantly better than every other one) or
    "no significant difference", every template's comparison with the best (interval, Holm
    p-value) and the stratum's recommendation; the warnings; and the cells without a summary
    grouped by error class with their plain-language cause.

    Args:
        found: The run's `Verdict`.

    Returns:
        A `VerdictView`.
    """
    view = VerdictView(", ".join(METRIC_LABELS.get(m, m) for m in HEADLINE_METRICS))
    if not found.cells:
        view.warnings.append("the run holds no cells")
        return view
    if found.recommendation is not None:
        view.recommendation = found.recommendation.to_text()
    for stratum in found.strata:
        winners = [(m, m.winner) for m in stratum.metrics if m.winner]
        if winners:
            headline = "; ".join(
                f"{METRIC_LABELS.get(m.metric, m.metric)}: {w} "
                + ("wins" if m.tested else "ahead in every session (too few to test)")
                for m, w in winners)
        else:
            headline = (f"no significant difference on any headline metric "
                        f"({stratum.n_common} sessions completed by all)")
        rec = stratum.recommendation
        if rec is not None:
            headline = f"ship {rec.template or 'none'}; {headline}"
        view.findings.append(Finding(
            stratum.model, short_window(stratum.window), headline,
            winner=winners[0][1] if winners else None,
            details=[line.strip() for m in stratum.metrics for line in m.to_lines()],
            recommendation=rec.to_text() if rec is not None else ""))
    if not found.strata:
        view.warnings.append(f"nothing to compare: no model x window has two {found.on}s "
                             "with cells")
    view.warnings += found.warnings
    view.errors = [(f"{e.label} ({e.kind})", e.count, "; ".join([e.cause, *e.details]))
                   for e in found.errors]
    return view


def render_verdict(view: VerdictView) -> str:
    """The verdict section's HTML (all text escaped)."""
    esc = html.escape
    items = []
    for f in view.findings:
        detail = "".join(f"<li>{esc(d)}</li>" for d in [*f.details, f.recommendation] if d)
        cls = "wb-win" if f.winner else "wb-tie"
        items.append(f'<li class="{cls}"><b title="{esc(f.model)}">{esc(short_label(f.model))}'
                     f"</b> @ <b>{esc(f.window)}</b>: {esc(f.headline)}"
                     + (f"<details><summary>intervals</summary><ul>{detail}</ul></details>"
                        if detail else "") + "</li>")
    parts = ['<section id="verdict" class="wb-verdict"><h2>Verdict</h2>',
             f"<p class=\"wb-note\">Per model and window, templates compared on "
             f"<b>{esc(view.metric)}</b>: means over the sessions every template completed, "
             "every template against the best by a paired cluster bootstrap over sessions "
             "(95% interval, Holm-adjusted p-values); a template wins only when it is "
             "significantly better than every other one. The recommendation follows the "
             "spec's <code>[verdict] rule</code>.</p>"]
    if view.recommendation:
        head, *caveats = view.recommendation.splitlines()
        folded = "".join(f"<li>{esc(c.strip().removeprefix('caveat: '))}</li>" for c in caveats)
        parts.insert(1, f'<p class="wb-recommend"><b>{esc(head)}</b></p>' + (
            f"<details><summary>{len(caveats)} caveat(s) its strata carry</summary>"
            f"<ul>{folded}</ul></details>" if caveats else ""))
    if items:
        parts.append('<ul class="wb-findings">' + "".join(items) + "</ul>")
    if view.warnings:
        parts.append('<ul class="wb-warnings">' + "".join(f"<li>{esc(w)}</li>"
                                                          for w in view.warnings) + "</ul>")
    if view.errors:
        parts.append('<p class="wb-errors"><b>Errors:</b> ' + "; ".join(
            f'<span title="{esc(msg)}">{esc(t)} × {n}</span>' for t, n, msg in view.errors)
            + "</p>")
    parts.append("</section>")
    return "".join(parts)


COMPARISON_COLUMNS = ("model", "window", "metric", "template", "best", "sessions", "diff",
                      "ci_low", "ci_high", "holm_p", "label")
"""The columns of the report's list of comparisons (each row one of the verdict's)."""


def verdict_comparisons(verdict: Verdict) -> pd.DataFrame:
    """Every comparison the verdict made, one row each, per model x window (never pooled):
    ``template - best`` on a metric with its 95 % interval, Holm p-value and label (``tie``
    when it is not significant: a tie is called a tie)."""
    rows = [{"model": s.model, "window": short_window(s.window), "metric": m.metric,
             "template": c.variant, "best": c.best, "sessions": c.n_sessions,
             "diff": c.mean_diff, "ci_low": c.ci_low, "ci_high": c.ci_high,
             "holm_p": c.p_adjusted, "label": c.status}
            for s in verdict.strata for m in s.metrics for c in m.comparisons]
    return pd.DataFrame(rows, columns=list(COMPARISON_COLUMNS))
