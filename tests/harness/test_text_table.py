"""The terminal table: the HTML report's column groups, 120 columns by default, every column
with ``wide``, ``n/a`` where a metric cannot apply."""

from __future__ import annotations

import numpy as np
import pandas as pd

from workbench.harness.report._text_table import text_table
from workbench.harness.results._table import TABLE_COLUMNS


def table(rows: int = 3) -> pd.DataFrame:
    data = []
    for i in range(rows):
        row = {"strategy": "goose", "template": f"template-with-a-long-name-{i}",
               "model": "openrouter/anthropic/claude-3-5-haiku-latest", "window": 32768}
        row.update({c: 1234.5 + i for c in TABLE_COLUMNS if c not in ("window_tokenizer",
                                                                       "mean_over")})
        row.update(window_tokenizer="claude", mean_over="common", probe_recall=0.5,
                   template_echo=0.0, parse_success_pct=100.0, useful_structured_pct=50.0)
        data.append(row)
    data.append({**data[0], "strategy": "mask[keep_last=3]", "model": "none",
                 "parse_success_pct": np.nan, "useful_structured_pct": np.nan,
                 "template_echo": np.nan, "probe_recall": np.nan})
    return pd.DataFrame(data)


def test_the_default_table_fits_120_columns_under_the_html_groups_and_names_what_it_hides(
        ) -> None:
    lines = text_table(table()).splitlines()
    assert max(len(line) for line in lines) <= 120, max(lines, key=len)
    assert lines[0].split()[:1] == ["cells"]  # the group line (the variant group has no title)
    assert lines[1].split()[:4] == ["strategy", "template", "model", "window"]
    mask = next(line for line in lines if line.startswith("mask[keep_last=3]"))
    assert "n/a" in mask.split()  # parse: a model-free row has no reply
    assert mask.split()[-1] == "—"  # probe recall: missing, not inapplicable
    assert "32k" in mask and "32768" not in mask
    # Too wide for 120: columns go first, then names are cut in the middle, still distinct.
    footer = " ".join(lines[lines.index(next(ln for ln in lines if "--wide" in ln)):])
    assert "useful_structured_pct" in footer and "template_echo" in footer
    names = [line.split()[1] for line in lines[3:6]]
    assert len(set(names)) == 3 and all(n.endswith(str(i)) for i, n in enumerate(names))
    assert all(n.startswith("template-w") and "…" in n for n in names)


def test_wide_shows_every_column() -> None:
    t = table(1)
    wide = text_table(t, wide=True).splitlines()
    assert "more columns" not in "\n".join(wide)
    header = wide[1]
    for label in ("spent", "calls made", "http retries", "effective window", "means over"):
        assert label in header or label in wide[0], label
    assert len(header) > 120
