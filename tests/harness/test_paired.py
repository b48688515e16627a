"""Paired bootstrap comparison on constructed cells with a known answer."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workbench.errors import ConfigError
from workbench.harness.results._paired import paired_comparison


def cells(values_a, values_b, *, metric="probe_recall", window=None) -> pd.DataFrame:
    rows = []
    for template, values in (("base", values_a), ("new", values_b)):
        for i, v in enumerate(values):
            rows.append({"session_id": f"s{i}", "strategy": "goose", "model": "m",
                         "template": template, "window": window, "repeat": 0,
                         "status": "ok", metric: v})
    return pd.DataFrame(rows)


def test_a_constant_improvement_names_b_the_winner_with_a_tight_interval() -> None:
    a = np.linspace(0.2, 0.8, 20)
    r = paired_comparison(cells(a, a + 0.1), "base", "new")
    assert r.n_pairs == 20
    assert r.mean_diff == pytest.approx(0.1)
    assert r.ci_low == pytest.approx(0.1) and r.ci_high == pytest.approx(0.1)
    assert r.winner == "new"
    assert str(r).endswith("over 20 pairs; winner: new")


def test_noise_around_zero_names_no_winner() -> None:
    rng = np.random.default_rng(1)
    a = rng.uniform(0.3, 0.7, 40)
    r = paired_comparison(cells(a, a + rng.normal(0, 0.05, 40)), "base", "new")
    assert r.ci_low < 0 < r.ci_high
    assert r.winner is None


def test_the_same_seed_gives_the_same_interval() -> None:
    rng = np.random.default_rng(2)
    df = cells(rng.uniform(size=30), rng.uniform(size=30))
    one = paired_comparison(df, "base", "new", seed=7)
    two = paired_comparison(df, "base", "new", seed=7)
    assert (one.ci_low, one.ci_high) == (two.ci_low, two.ci_high)


def test_for_lower_is_better_metrics_the_lower_side_wins() -> None:
    a = np.arange(1000, 1010, dtype=float)
    r = paired_comparison(cells(a, a + 50, metric="retained_tokens"), "base", "new",
                          metric="retained_tokens")
    assert r.mean_diff == 50 and r.winner == "base"


def test_cells_pair_only_on_the_rest_of_the_key_and_missing_values_drop() -> None:
    df = cells([0.5, 0.5, None], [0.7, 0.9, 0.9], window=8000)
    extra = df.iloc[[0]].assign(repeat=1, template="new", probe_recall=0.0)  # no partner
    r = paired_comparison(pd.concat([df, extra]), "base", "new")
    assert r.n_pairs == 2
    assert r.pairs["diff"].round(6).tolist() == [0.2, 0.4]
    assert r.pairs.columns.tolist() == ["session_id", "strategy", "model", "window", "repeat",
                                        "a", "b", "diff"]


def test_billed_tokens_are_derived_for_the_comparison() -> None:
    df = cells([1, 1], [1, 1]).assign(billed_input_tokens=[100, 100, 80, 80],
                                      billed_output_tokens=[10, 10, 10, 10])
    r = paired_comparison(df, "base", "new", metric="billed_tokens")
    assert r.mean_diff == -20 and r.winner == "new"


def test_an_unknown_variant_is_a_config_error_naming_the_known_ones() -> None:
    with pytest.raises(ConfigError, match=r"^no cells with template='v9'; known: base, new$"):
        paired_comparison(cells([1], [1]), "base", "v9")


def repeated_cells(effects, repeats, *, noise=0.0, seed=0, windows=(8000,),
                   prefix="s") -> pd.DataFrame:
    """Sessions whose every repeat and window share one session-level difference."""
    rng = np.random.default_rng(seed)
    rows = []
    for i, effect in enumerate(effects):
        for window in windows:
            for r in range(repeats):
                base = 0.5
                for template, value in (("base", base),
                                        ("new", base + effect + rng.normal(0, noise))):
                    rows.append({"session_id": f"{prefix}{i}", "strategy": "goose", "model": "m",
                                 "template": template, "window": window, "repeat": r,
                                 "status": "ok", "probe_recall": value})
    return pd.DataFrame(rows)


def test_strata_are_resampled_apart_so_a_known_per_stratum_shift_has_a_zero_width_interval() -> None:
    # Window 8000: new is +0.1 on every session; window 32000: +0.3. Equal pair counts, so the
    # stratified mean is exactly 0.2, and since strata keep their size in every resample and
    # each stratum is constant, the interval has zero width.
    df = pd.concat([repeated_cells([0.1] * 6, 1, windows=(8000,)),
                    repeated_cells([0.3] * 6, 1, windows=(32000,), prefix="t")])
    r = paired_comparison(df, "base", "new")
    assert r.mean_diff == pytest.approx(0.2)
    assert (r.ci_low, r.ci_high) == (pytest.approx(0.2), pytest.approx(0.2))
    assert r.n_clusters == 12 and r.winner == "new"
    assert r.by_stratum[["window", "n_pairs", "mean_diff", "winner"]].values.tolist() == [
        [8000, 6, pytest.approx(0.1), "new"], [32000, 6, pytest.approx(0.3), "new"]]
    pooled = paired_comparison(df, "base", "new", stratify=())
    assert pooled.ci_high - pooled.ci_low > 0.05  # pooled, resamples change the mix


def test_cell_level_resampling_is_overconfident_when_sessions_repeat() -> None:
    # Eight sessions with very different effects, ten repeats each: 80 pairs but only 8
    # independent sessions. The session-level effects straddle zero.
    effects = [0.30, -0.25, 0.20, -0.15, 0.35, -0.20, 0.25, -0.10]
    df = repeated_cells(effects, 10, noise=0.01, seed=3)
    clustered = paired_comparison(df, "base", "new", seed=1)
    naive = paired_comparison(df, "base", "new", seed=1, cluster=None)
    assert clustered.n_pairs == naive.n_pairs == 80 and clustered.n_clusters == 8
    assert clustered.mean_diff == pytest.approx(naive.mean_diff)
    width_clustered = clustered.ci_high - clustered.ci_low
    width_naive = naive.ci_high - naive.ci_low
    assert width_clustered > 2.5 * width_naive
    assert clustered.ci_low < 0 < clustered.ci_high and clustered.winner is None


def test_failures_are_counted_and_compared_as_a_metric() -> None:
    df = cells([0.5, 0.5, 0.5, 0.5], [0.6, 0.6, None, None], window=8000)
    df["outcome_kind"] = "ok"
    df.loc[(df["template"] == "new") & df["probe_recall"].isna(), "outcome_kind"] = "failed"
    df.loc[df["outcome_kind"] == "failed", "status"] = "error"
    r = paired_comparison(df, "base", "new")
    assert (r.n_pairs, r.failed_a, r.failed_b) == (2, 0, 2)
    f = paired_comparison(df, "base", "new", metric="failed")
    assert f.n_pairs == 4 and f.mean_diff == 0.5
    assert str(f).startswith("failed: new - base = +0.5")
