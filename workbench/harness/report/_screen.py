"""The terminal's one-screen answer: a `Verdict` rendered in a few short lines.

What `workbench run` prints by default (the whole verdict, the table and the replay are behind
``--verbose`` and in the report): the run's recommendation under `MAX_HEADLINE` characters, its
evidence and caveats as short indented lines, one line per model x window (the template
recommended there, what it saves against `BASELINE` in retained tokens, and whether that
difference is significant), and one line per error kind with its count. Every word comes from
the `Verdict`, as the Markdown and HTML renderers' do.
"""

from __future__ import annotations

import textwrap

from workbench.harness.results._outcomes import ERROR
from workbench.harness.results._verdict_model import StratumVerdict, Verdict
from workbench.harness.results._verdict_text import fmt_interval, fmt_p
from workbench.harness.results._versus_best import IDENTICAL, MIN_SESSIONS, WORSE, Comparison

BASELINE = "default"
"""The template a recommendation's saving is measured against (Goose's own prompt)."""
WIDTH = 120
"""Columns the screen fits."""
MAX_HEADLINE = 200
"""The longest Recommendation line."""
RETAINED = "retained_tokens"


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def _wrap(text: str, indent: str, more: str) -> list[str]:
    """`text` in lines of at most `WIDTH` columns: the first after `indent`, the rest after
    `more` (nothing is cut: a reason or caveat is read whole)."""
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=more,
                         break_on_hyphens=False, break_long_words=False) or [indent.rstrip()]


def headline(verdict: Verdict) -> list[str]:
    """``Recommendation: <template>`` (ties named), then its reasons and caveats as indented
    lines, wrapped at `WIDTH` columns."""
    rec = verdict.recommendation
    if rec is None:
        return ["Recommendation: none (no model x window has two templates to compare)"]
    name = rec.template if rec.template is not None else "none"
    if rec.tied:
        name += f" (tie with {', '.join(rec.tied)}: either can ship)"
    head = f"Recommendation: {name} (rule {rec.rule})"
    lines = [_cut(head, MAX_HEADLINE)]
    for reason in rec.reasons:
        lines += _wrap(reason, "  ", "    ")
    for caveat in rec.caveats:
        lines += _wrap(caveat, "  caveat: ", "    ")
    return lines


def _versus_baseline(stratum: StratumVerdict, pick: str) -> str:
    """What `pick` saves against `BASELINE` in retained tokens, and whether it is significant."""
    retained = next((m for m in stratum.metrics if m.metric == RETAINED), None)
    if pick == BASELINE:
        return "the baseline itself"
    if retained is None or BASELINE not in retained.means or pick not in retained.means:
        return f"no {BASELINE} here to compare with"
    saves = retained.means[BASELINE] - retained.means[pick]
    share = saves / retained.means[BASELINE] if retained.means[BASELINE] else 0.0
    # The header names the metric and the baseline: the line keeps to the figures, so one
    # model x window fits one line of `WIDTH` columns.
    amount = f"{-saves:+,.0f} tokens ({-share:+.0%})"
    by_variant: dict[str, Comparison] = {c.variant: c for c in retained.comparisons}
    # The verdict tests every template against the best: the pair is tested when one of them
    # is the best on retained tokens.
    if retained.best == pick:
        c, sign = by_variant.get(BASELINE), -1.0  # default - pick: minus the change
    elif retained.best == BASELINE:
        c, sign = by_variant.get(pick), 1.0  # pick - default: the change
    else:
        return f"{amount}, a pair the verdict does not test (means)"
    if c is None:
        return amount
    if c.status == IDENTICAL:
        return f"{amount}, identical summaries"
    if c.n_sessions < MIN_SESSIONS:
        same = "same gap in all" if c.consistent else "over"
        return f"{amount}, {same} {c.n_sessions} sessions: too few to test"
    low, high = sorted((sign * c.ci_low, sign * c.ci_high))
    interval = fmt_interval(sign * c.mean_diff, low, high, RETAINED).split(" ", 1)[1]
    verdict = "significant" if c.status == WORSE else "not significant"
    return f"{amount} {interval}, {verdict} (Holm p {fmt_p(c.p_adjusted)})"


def stratum_line(stratum: StratumVerdict) -> str:
    """``  model @ window: <template>, -303 tokens (-31%) [...], significant (...)``: one line."""
    rec = stratum.recommendation
    if rec is None or rec.template is None:
        why = rec.reasons[0] if rec is not None and rec.reasons else "nothing to recommend"
        return _cut(f"  {stratum.title}: none ({why})", WIDTH)
    name = rec.template + (f" (tie with {', '.join(rec.tied)})" if rec.tied else "")
    return _cut(f"  {stratum.title}: {name}, {_versus_baseline(stratum, rec.template)}", WIDTH)


def screen_lines(verdict: Verdict) -> list[str]:
    """The one-screen verdict: headline, one line per model x window, one per error kind."""
    lines = headline(verdict)
    if verdict.strata:
        lines.append(f"Per model x window: the template recommended there, its retained tokens "
                     f"against {BASELINE} (95% CI), significance:")
        lines += [stratum_line(s) for s in verdict.strata]
    lines.append("Errors and failures:" if verdict.errors else
                 "Errors and failures: none (every cell produced a summary)")
    for e in verdict.errors:
        # An infrastructure error says its cause and quotes what names it (the cell and the
        # request a recording lacks, the host and status): what to fix. An outcome is counted.
        if e.kind != ERROR:
            lines += _wrap(f"{e.count} x {e.label} ({e.kind})", "  ", "    ")
            continue
        # Whole, never cut: the variable to set, the file and line, the cell and request.
        lines.append(f"  {e.to_text()}")
    return lines
