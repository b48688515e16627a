"""Baseline file names and the metrics snapshot format."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.regress import Snapshot
from workbench.regress._snapshot import cell_label, slug, summary_name


def _row(**changes: object) -> dict[str, object]:
    row: dict[str, object] = {"session_id": "gen-005k-s1", "model": "gemma-270m/prefill",
                              "template": "lean-facts", "window": 8192, "strategy": "goose",
                              "repeat": 0}
    row.update(changes)
    return row


def test_a_summary_file_is_named_by_what_the_cell_is() -> None:
    assert summary_name(_row()) == "summaries/lean-facts/gemma-270m_prefill--8k--gen-005k-s1.md"
    assert summary_name(_row(window=None)) == (
        "summaries/lean-facts/gemma-270m_prefill--none--gen-005k-s1.md")
    assert summary_name(_row(window=float("nan"), repeat=2)) == (
        "summaries/lean-facts/gemma-270m_prefill--none--gen-005k-s1--r2.md")
    assert summary_name(_row(strategy="awaken", template="../my variants/x")) == (
        "summaries/my_variants_x/awaken--gemma-270m_prefill--8k--gen-005k-s1.md")


def test_slug_keeps_readable_characters_only() -> None:
    assert slug("openai/gpt-4o-mini[temperature=0]") == "openai_gpt-4o-mini_temperature_0"
    assert slug("claude@20240620") == "claude@20240620"
    assert slug("///") == "_"


def test_a_cell_label_names_session_model_template_and_window() -> None:
    assert cell_label(_row()) == ("session gen-005k-s1, model gemma-270m/prefill, template "
                                  "lean-facts, window 8k")
    assert cell_label(_row(repeat=1, strategy="mask")) == (
        "session gen-005k-s1, model gemma-270m/prefill, template lean-facts, window 8k, "
        "strategy mask, repeat 1")


def test_a_snapshot_round_trips_through_its_folder(tmp_path: Path) -> None:
    snapshot = Snapshot("demo", rules={"retained_tokens": "+5%"})
    snapshot.summaries = {"summaries/default/extractive--8k--s.md": "# Summary\n",
                          "summaries/default/extractive--32k--s.md": "(no summary)\n"}
    snapshot.groups = {("default", "extractive", "32k"): {"cells": 1, "retained_tokens": 700},
                       ("default", "extractive", "8k"): {"cells": 1, "retained_tokens": 612.5},
                       ("default", "extractive", "none"): {"cells": 1, "retained_tokens": None}}
    folder = snapshot.write(tmp_path / "base")
    data = json.loads((folder / "metrics.json").read_text(encoding="utf-8"))
    assert [g["window"] for g in data["groups"]] == ["8k", "32k", "none"]  # token order
    assert data["groups"][0] == {"template": "default", "model": "extractive", "window": "8k",
                                 "cells": 1, "retained_tokens": 612.5}
    again = Snapshot.read(folder)
    assert (again.experiment, again.rules, again.groups, again.summaries) == (
        "demo", snapshot.rules, snapshot.groups, snapshot.summaries)

    # --update replaces the summaries: a file of a cell that is gone does not linger
    snapshot.summaries.pop("summaries/default/extractive--32k--s.md")
    snapshot.write(folder)
    assert sorted(p.name for p in (folder / "summaries" / "default").iterdir()) == [
        "extractive--8k--s.md"]
