"""Snapshots: what the regression gate compares, read from a run folder or a baseline folder.

A baseline folder (``regress/<experiment>/``, committed by the user) holds:

- ``summaries/<template>/<model>--<window>--<session>.md``: one rendered summary per cell, named
  by what the cell is (never by a hash) so a reviewer sees which cell changed; a cell that
  failed holds one line naming its error type instead.
- ``metrics.json``: per template x model x window, the cell count and the value of every metric
  the experiment's ``[regress]`` table names, as `Results.table()` computes them, plus the rules.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, SupportsFloat, TypedDict, cast

from workbench._storage import write_atomic
from workbench.errors import ConfigError
from workbench.harness.experiment._windows import parse_window
from workbench.harness.results._cell_names import cell_label, repeat_of, window_text
from workbench.sessions.importers._readers import open_brackets

if TYPE_CHECKING:
    from workbench.harness import Results

SUMMARIES_DIR = "summaries"
METRICS_FILE = "metrics.json"
GROUP_KEYS = ("template", "model", "window")
ROUND_DIGITS = 6
"""Metric values are stored and compared rounded to this many decimals (readable diffs)."""
FAILED_SUMMARY = "(no summary: the cell failed with {error})\n"
MAX_BASELINE_DEPTH = 8
"""Deepest nesting a ``metrics.json`` may have (a real one nests three levels)."""
BASELINE_SHAPE = ('{"experiment": NAME, "rules": {METRIC: TOLERANCE}, "groups": [{"template": '
                  '..., "model": ..., "window": ..., "cells": N, METRIC: NUMBER or null}]}')
"""The shape of a baseline's ``metrics.json``, as errors name it."""
__all__ = ["BASELINE_SHAPE", "FAILED_SUMMARY", "METRICS_FILE", "SUMMARIES_DIR", "Snapshot",
           "cell_label", "slug", "summary_name", "window_text"]

_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]+")

GroupKey = tuple[str, str, str]
MetricValue = float | None
"""A group's cell count or metric value (an int is a float here); None = no value."""


class _BaselineFile(TypedDict):
    """A ``metrics.json`` that passed `_shape_problem`."""

    experiment: str
    rules: NotRequired[dict[str, str]]
    groups: list[dict[str, str | MetricValue]]


def slug(text: object) -> str:
    """`text` as one safe file-name part: other characters become ``_`` (``a/b`` -> ``a_b``)."""
    cleaned = _UNSAFE.sub("_", str(text)).strip("._")
    return cleaned or "_"


def summary_name(row: Mapping[str, object]) -> str:
    """The baseline file of one cell, relative to the baseline folder."""
    stem = f"{slug(row['model'])}--{window_text(row['window'])}--{slug(row['session_id'])}"
    strategy = row.get("strategy")
    if strategy and strategy != "goose":
        stem = f"{slug(strategy)}--{stem}"
    if repeat_of(row):
        stem += f"--r{repeat_of(row)}"
    return f"{SUMMARIES_DIR}/{slug(row['template'])}/{stem}.md"


def _rounded(value: SupportsFloat | str | None) -> float | int | None:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(number):
        return None
    if number.is_integer() and abs(number) < 2**53:
        return int(number)
    return round(number, ROUND_DIGITS)


@dataclass
class Snapshot:
    """Rendered summaries and metric values of one run (or of a baseline folder).

    Attributes:
        experiment: The experiment's name.
        summaries: Baseline-relative file name -> text.
        groups: (template, model, window) -> ``{"cells": n, metric: value}``; None = no value.
        rules: Metric -> tolerance text, as declared when the snapshot was taken.
    """

    experiment: str
    summaries: dict[str, str] = field(default_factory=dict)
    groups: dict[GroupKey, dict[str, MetricValue]] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)

    @classmethod
    def from_results(cls, results: Results, rules: dict[str, str], experiment: str) -> Snapshot:
        """Take the snapshot of a loaded run (`workbench.harness.Results`).

        Raises:
            ConfigError: a rule names a metric the results table does not have, or two cells
                would share a summary file name.
        """
        snapshot = cls(experiment, rules=dict(rules))
        cells = results.cells
        for _, row in cells.iterrows():
            name = summary_name(row)
            if name in snapshot.summaries:
                raise ConfigError(f"two cells map to the baseline file {name}; give the models "
                                  "distinct names (`name = ...` in the spec)")
            snapshot.summaries[name] = _rendered(results.run_dir, row)
        table = results.table(by=GROUP_KEYS)
        missing = [m for m in rules if m not in table.columns]
        if missing:
            known = ", ".join(c for c in table.columns if c not in GROUP_KEYS)
            raise ConfigError(f"[regress] names metric(s) {', '.join(missing)} that the results "
                              f"table does not have (known: {known})")
        for _, row in table.iterrows():
            key = (str(row["template"]), str(row["model"]), window_text(row["window"]))
            values: dict[str, MetricValue] = {"cells": _rounded(row["cells"])}
            values.update({m: _rounded(row[m]) for m in sorted(rules)})
            snapshot.groups[key] = values
        return snapshot

    @classmethod
    def read(cls, folder: str | Path) -> Snapshot:
        """Read a baseline folder.

        Raises:
            ConfigError: no ``metrics.json`` there, or it is not a snapshot.
        """
        folder = Path(folder)
        path = folder / METRICS_FILE
        if not path.is_file():
            raise ConfigError(f"no baseline at {folder} ({METRICS_FILE} missing); create it with "
                              "`workbench regress SPEC --update` and commit the folder")
        data = _read_metrics(path)
        # The shape check made the group keys strings and every other value a number or null.
        groups = {(str(g["template"]), str(g["model"]), str(g["window"])):
                  {k: v for k, v in g.items() if k not in GROUP_KEYS and not isinstance(v, str)}
                  for g in data["groups"]}
        snapshot = cls(data["experiment"], rules=dict(data.get("rules", {})), groups=groups)
        summaries = folder / SUMMARIES_DIR
        if summaries.is_dir():
            for file in sorted(summaries.rglob("*.md")):
                rel = file.relative_to(folder).as_posix()
                try:
                    snapshot.summaries[rel] = file.read_bytes().decode("utf-8")
                except (OSError, UnicodeDecodeError) as exc:
                    raise ConfigError(f"{file}: cannot read the baseline summary as UTF-8 "
                                      f"text ({exc}); restore it or rewrite the baseline with "
                                      "`workbench regress SPEC --update`") from None
        return snapshot

    def write(self, folder: str | Path) -> Path:
        """Replace the baseline in `folder` with this snapshot (other files there are kept)."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(folder / SUMMARIES_DIR, ignore_errors=True)
        for name, text in sorted(self.summaries.items()):
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(path, text)
        groups = [{"template": t, "model": m, "window": w, **values}
                  for (t, m, w), values in sorted(self.groups.items(), key=_group_order)]
        data = {"experiment": self.experiment, "rules": dict(sorted(self.rules.items())),
                "groups": groups}
        write_atomic(folder / METRICS_FILE, json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        return folder


def _too_deep_line(text: str, limit: int) -> int | None:
    """The line where arrays/objects (outside strings) nest past `limit`, or None."""
    at = next((i for i, depth in open_brackets(text) if depth > limit), None)
    return None if at is None else text.count("\n", 0, at) + 1


def _shape_problem(data: object) -> str | None:
    """What makes `data` not a baseline's metrics, or None."""
    if not isinstance(data, dict):
        return f"the top level is a JSON {type(data).__name__}, not an object"
    if not isinstance(data.get("experiment"), str):
        return 'no "experiment" name (a string)'
    rules = data.get("rules", {})
    if not isinstance(rules, dict) or not all(isinstance(v, str) for v in rules.values()):
        return '"rules" is not an object of metric -> tolerance strings'
    groups = data.get("groups")
    if not isinstance(groups, list):
        return '"groups" is not a list'
    for i, group in enumerate(groups):
        if not isinstance(group, dict):
            return f"groups[{i}] is not an object"
        for key in GROUP_KEYS:
            if not isinstance(group.get(key), str):
                return f'groups[{i}] has no "{key}" string'
        for key, value in group.items():
            if key not in GROUP_KEYS and not (value is None or (
                    isinstance(value, int | float) and not isinstance(value, bool))):
                return f"groups[{i}].{key} is not a number or null"
    return None


def _read_metrics(path: Path) -> _BaselineFile:
    """A baseline's ``metrics.json``, depth-limited and checked against `BASELINE_SHAPE`.

    Raises:
        ConfigError: unreadable, not JSON, nested past `MAX_BASELINE_DEPTH`, or another shape;
            names the file and the shape expected.
    """
    def refuse(problem: str) -> ConfigError:
        return ConfigError(f"{path}: not a regress baseline: {problem}; expected {BASELINE_SHAPE}"
                           " (rewrite it with `workbench regress SPEC --update`)")

    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise refuse(f"cannot read it as UTF-8 text ({exc})") from None
    line = _too_deep_line(text, MAX_BASELINE_DEPTH)
    if line is not None:
        raise refuse(f"line {line} nests deeper than {MAX_BASELINE_DEPTH} levels")
    try:
        data = json.loads(text)
    except ValueError as exc:  # invalid JSON, or a number too long for Python
        raise refuse(f"invalid JSON ({exc})") from None
    problem = _shape_problem(data)
    if problem is not None:
        raise refuse(problem)
    return cast(_BaselineFile, data)  # the shape `_shape_problem` checked


def _group_order(item: tuple[GroupKey, object]) -> tuple[str, str, float]:
    # windows in token order (8k before 32k, "none" last), as the results table shows them
    template, model, window = item[0]
    try:
        tokens = parse_window(window)
    except ValueError:
        tokens = None
    return template, model, math.inf if tokens is None else float(tokens)


def _rendered(run_dir: Path, row: Mapping[str, object]) -> str:
    summary_path = row.get("summary_path")
    if row.get("status") != "ok" or not isinstance(summary_path, str):
        return FAILED_SUMMARY.format(error=row.get("error_type") or "an unknown error")
    return (Path(run_dir) / summary_path).read_text(encoding="utf-8")
