"""`Results`: a run folder loaded as data (cells and attempts as pandas DataFrames).

Tables, paired comparisons and plots are computed from these frames by the functions in
``_table``, ``_paired`` and ``_plots``; `Results` only loads and delegates.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

import pandas as pd

from workbench._storage import storage_errors
from workbench.errors import ConfigError
from workbench.harness.experiment._spec import Experiment
from workbench.harness.results._judge_agreement import BOOTSTRAP, judge_agreement
from workbench.harness.results._paired import PairedOptions, PairedResult, paired_comparison
from workbench.harness.results._policy_verdict import reported_rows
from workbench.harness.results._replays import read_replays, results_from_rows
from workbench.harness.results._rows import (
    TableRows,
    Tables,
    cells_frame,
    frame_of,
    read_rows,
    read_rows_of,
)
from workbench.harness.results._store import ResultsStore
from workbench.harness.results._table import comparison_table
from workbench.harness.results._verdict import SUMMARY_KEY, Verdict, VerdictOptions, verdict
from workbench.strategies import ReplayResult, detector_table, replay_table, survival_curve

if TYPE_CHECKING:  # pragma: no cover - matplotlib loads only when a run is plotted
    from matplotlib.figure import Figure

SPEC_FILE = "spec.toml"
DB_FILE = "results.sqlite"
SUMMARIES_DIR = "summaries"
QA_DIR = "qa"
QUESTIONS_DIR = "qa/questions"
"""The run folder's layout: the spec as run, the results store, rendered summaries, and the
functional probes' question sets (``qa/questions/<key>.json`` per session). A cell's other
texts are kept in the store (`Results.cell_text`); folders written before that keep them as
files (`TEXT_FILES`)."""

TEXT_FILES = {"raw.txt": f"{SUMMARIES_DIR}/{{cell_id}}.raw.txt",
              "forgotten.json": f"{SUMMARIES_DIR}/{{cell_id}}.forgotten.json",
              "qa.json": f"{QA_DIR}/{{cell_id}}.json"}
"""Where an older run folder kept each of a cell's texts."""


def read_cell_text(run_dir: Path, cell_id: str, name: str) -> str | None:
    """`Results.cell_text` for the run folder `run_dir`."""
    return read_cell_texts(run_dir, name, [cell_id]).get(cell_id)


def read_cell_texts(run_dir: Path, name: str, cell_ids: list[str]) -> dict[str, str]:
    """The text `name` of each of `cell_ids` that kept one (one query; an older run folder's
    files, `TEXT_FILES`, for the cells the store has none of)."""
    found: dict[str, str] = {}
    db_path = Path(run_dir) / DB_FILE
    if db_path.is_file():
        db = sqlite3.connect(f"{db_path.resolve().as_uri()}?mode=ro", uri=True)
        try:
            found = {c: t for c, t in db.execute(
                "SELECT cell_id, text FROM cell_texts WHERE name = ?", (name,))}
        except sqlite3.OperationalError:  # an older store: no such table
            found = {}
        finally:
            db.close()
    old = TEXT_FILES.get(name)
    out: dict[str, str] = {}
    for cell_id in cell_ids:
        text = found.get(cell_id)
        if text is None and old is not None:
            try:
                text = (Path(run_dir) / old.format(cell_id=cell_id)).read_text(encoding="utf-8")
            except OSError:
                text = None
        if text is not None:
            out[cell_id] = text
    return out


class ReplayTableOptions(TypedDict, total=False):
    """The keywords of ``replay_table`` (what `Results.replay_table` passes on)."""

    by: Sequence[str]
    columns: Sequence[str]


class DetectorOptions(TypedDict, total=False):
    """The keywords of ``detector_table`` (what `Results.replay_detectors` passes on)."""

    by: Sequence[str]


class SurvivalOptions(TypedDict, total=False):
    """The keywords of ``survival_curve`` (what `Results.replay_survival` passes on)."""

    max_rounds: int | None


class Results:
    """A loaded run folder.

    Attributes:
        run_dir: The folder.
        spec: The `Experiment` as run (from ``spec.toml``), or None when absent.
        cells: One row per stored cell, metrics expanded into columns.
        attempts: One row per model attempt.
        runs: One row per runner invocation (status, timestamps).

    A loaded run's frames are made of the rows it read, each the first time it is used: a
    run's caller that reads only its cells (the table, the verdict) does not pay for the
    attempts frame. The rows are read at once (a store that changes later does not change
    them), and each goes once its frame is made. `run_experiment` returns its `Results` with
    the cells frame made: it makes it while the writer thread closes the store.
    """

    def __init__(self, run_dir: Path, spec: Experiment | None, cells: pd.DataFrame,
                 attempts: pd.DataFrame, runs: pd.DataFrame) -> None:
        self.run_dir = run_dir
        self.spec = spec
        self._rows: dict[str, TableRows] = {}
        self._spec_bytes: bytes | None = None  # `from_rows`' (the spec is given here)
        self.cells = cells
        self.attempts = attempts
        self.runs = runs

    def _made(self, name: str, make: Callable[[TableRows], pd.DataFrame]) -> pd.DataFrame:
        """The frame of the rows `name`, which then go. Read before they are dropped, so two
        threads that first use a frame at once (``cached_property`` takes no lock from
        Python 3.12 on) each make an equal one and neither meets missing rows."""
        frame = make(self._rows[name])
        self._rows.pop(name, None)
        return frame

    @functools.cached_property
    def cells(self) -> pd.DataFrame:
        """One row per stored cell, metrics expanded into columns (`cells_frame`)."""
        return self._made("cells", cells_frame)

    @functools.cached_property
    def attempts(self) -> pd.DataFrame:
        """One row per model attempt."""
        return self._made("attempts", frame_of)

    @functools.cached_property
    def runs(self) -> pd.DataFrame:
        """One row per runner invocation (status, timestamps)."""
        return self._made("runs", frame_of)

    @classmethod
    def load(cls, run_dir: str | Path) -> Results:
        """Load ``<run_dir>/results.sqlite`` and ``spec.toml``.

        Raises:
            ConfigError: the folder holds no results store.
            StorageError: the store is damaged.
        """
        folder = Path(run_dir)
        db = folder / DB_FILE
        if not db.is_file():
            raise ConfigError(f"{folder}: no {DB_FILE} here; run `workbench run` with "
                              f"--out {folder} first")
        with storage_errors(db):  # a damaged store is named, with what to do
            return cls.from_rows(folder, read_rows_of(db))

    @classmethod
    def from_store(cls, run_dir: str | Path, store: ResultsStore) -> Results:
        """Load the run folder `run_dir` over its open `ResultsStore` (the runner's, once its
        run is written: no second connection). The store stays open."""
        return cls.from_rows(run_dir, read_rows(store.db))

    @classmethod
    def from_rows(cls, run_dir: str | Path, tables: Tables) -> Results:
        """Load the run folder `run_dir` from its tables as `read_rows` read them (the
        runner's writer, after the run's last write): the same `Results` as `load`, its
        frames made when first used."""
        folder = Path(run_dir)
        results = cls.__new__(cls)
        results.run_dir = folder
        try:  # read now, as the rows are; parsed when first used (`spec`)
            results._spec_bytes = (folder / SPEC_FILE).read_bytes()
        except (FileNotFoundError, IsADirectoryError):
            results._spec_bytes = None
        results._rows = dict(zip(("cells", "attempts", "runs"), tables, strict=True))
        return results

    @functools.cached_property
    def spec(self) -> Experiment | None:
        """The `Experiment` as run: ``spec.toml`` as it was when the run was loaded, parsed
        when first used (a caller that reads only the cells does not pay for it).

        Raises:
            ConfigError: the file is not a valid experiment (it names the file and key).
        """
        read = self._spec_bytes
        return None if read is None else Experiment.from_toml_bytes(read, self.run_dir / SPEC_FILE)

    def _length(self, name: str) -> int:
        """The rows of table `name`: counted from the rows read while its frame is not made
        (printing a `Results` makes no frame)."""
        table = self._rows.get(name)
        return len(table[0]) if table is not None else len(getattr(self, name))

    @property
    def status(self) -> str | None:
        """Status of the latest runner invocation ('finished', 'budget_reached', ...)."""
        table = self._rows.get("runs")
        if table is not None:  # the frame is not made: the rows say it
            rows, columns = table
            return str(rows[-1][columns.index("status")]) if rows else None
        if self.runs.empty:
            return None
        return str(self.runs["status"].iloc[-1])

    def table(self, by: tuple[str, ...] | list[str] = ("template", "model", "window"), *,
              variant: str = "template", survivors: bool = False) -> pd.DataFrame:
        """The comparison table: one row per group of `by` (see ``comparison_table``).

        Metrics glossary (the README's "Metrics glossary" says the same). A row holds three
        populations, each named:

        - Over every cell of the row: ``cells``; ``replies`` (cells that received a summary
          reply); ``failed`` (compaction outcomes: context exhausted after the whole removal
          ladder); ``errors`` (infrastructure: replay cache miss, auth, network, retries
          exhausted); ``failures`` = failed + errors; ``failure_rate`` = failed / (replies +
          failed).
        - ``n``: sessions (session, strategy, repeat) that every compared `variant` completed in
          this row's model x window; ``mean_over``: ``common`` (means over those n sessions) or
          ``survivors`` (``survivors=True``: each row over its own completed cells). Over them:
          ``parse_success_pct`` (100 x the share whose reply parsed as the structured JSON),
          ``useful_structured_pct`` (parsed, not a template echo, at least one field filled),
          ``retained_tokens`` (Goose's ``retained_context_tokens``), ``summary_tokens``,
          ``billed_tokens`` = ``billed_reported`` (counted by the model or provider) +
          ``billed_estimated`` (the workbench's o200k estimate), ``cost`` (NaN when a cell that
          called a model has no known price), ``calls`` (model calls per cell), ``retries_mean``
          / ``retries_max`` (removal-ladder steps after the first call: mean, most of a cell)
          and the probe columns. Billed tokens, cost and calls are what the cell's summary
          cost: a call it shared with another cell's identical prompt, or read from a
          recording, counts at that call's usage, so they do not depend on scheduling.
        - Sums over every cell of the row, what the run spent (which cell of a group of
          identical prompts pays depends on scheduling): ``spent_tokens``, ``cost_total``,
          ``calls_made_total``, ``calls_shared_total``, ``http_retries_total`` (gateway
          retries: 429, 5xx, timeouts).
        - ``window``: the simulated cap; ``effective_window``: the smaller of the cap and the
          model's real context; ``window_tokenizer``: what the cap counted prompts with.
        - Metrics that cannot apply (a model-free strategy's parse, calls, retries, echo) are
          NaN, named by ``not_applicable`` and shown as ``n/a``.
        - Functional probes (a ``[qa]`` table): ``qa_accuracy`` (share of the exactly graded
          questions answered right from the compacted context), ``qa_recall``,
          ``qa_artifact``, ``qa_continuation``, ``qa_decision`` (per kind, open questions by
          word overlap), ``judge_score`` (the judge's six-dimension mean, 0-5),
          ``qa_loss_exact`` / ``qa_loss_open`` (of the exact / open questions the full
          history answers right, the share the compacted context misses; n/a where the
          session does not fit the window), ``qa_gain`` (the share only the compacted context
          gets right), ``judge_kappa`` (the judge's Cohen's kappa against the exact grader in
          the row's model x window, see ``judge_agreement``),
          ``next_action_match`` / ``next_action_match_full`` (the next tool call from the
          compacted context equals the recorded agent's / the answerer's own from the full
          history): means over the common sessions. ``qa_billed_tokens`` / ``qa_cost``: the
          ``[qa]`` calls' share of ``billed_tokens`` / ``cost`` per cell.

        Args:
            by: Grouping columns, in display order.
            variant: The compared column: means use only the sessions every value of it
                completed in the rest of `by`.
            survivors: Average each group over its own completed cells instead (labelled).

        Returns:
            A DataFrame, one row per group.
        """
        return comparison_table(self.cells, tuple(by), variant=variant, survivors=survivors)

    def compare(self, a: str, b: str, metric: str = "probe_recall", on: str = "template",
                **kwargs: Unpack[PairedOptions]) -> PairedResult:
        """Paired comparison of `b` against `a` (values of column `on`) on `metric`.

        Sessions are resampled as clusters within each model x window (see
        ``paired_comparison``); ``metric="failed"`` compares failure rates.
        """
        if self.spec is not None:
            kwargs.setdefault("seed", self.spec.seed)
        return paired_comparison(self.cells, a, b, on=on, metric=metric, **kwargs)

    def judge_agreement(self, *, seed: int | None = None,
                        resamples: int | None = None) -> pd.DataFrame:
        """The judge's agreement with the exact grader per model x window: Cohen's kappa with
        its 95 % cluster-bootstrap interval (see ``judge_agreement``); empty without a judge.

        Args:
            seed: The bootstrap's seed (default: the run's spec seed, else 0).
            resamples: Bootstrap resamples (default `BOOTSTRAP`).
        """
        if seed is None:
            seed = int(self.spec.seed) if self.spec is not None else 0
        return judge_agreement(self.cells, seed=seed,
                               resamples=BOOTSTRAP if resamples is None else resamples)

    @property
    def replays(self) -> pd.DataFrame:
        """One row per whole-session replay of the run (empty without a ``[replay]`` table)."""
        if getattr(self, "_replays", None) is None:
            self._replays = read_replays(self.run_dir / DB_FILE)
        return self._replays

    def replay_table(self, **kwargs: Unpack[ReplayTableOptions]) -> pd.DataFrame:
        """The replay comparison: strategy x window x threshold (see ``replay_table``), computed
        from the stored turns and rounds (so a run stored earlier is read by today's rules)."""
        return replay_table(self.replay_results(), **kwargs)

    def replay_results(self, session_id: str | None = None) -> list[ReplayResult]:
        """The stored replays as `ReplayResult` objects (turns and rounds included)."""
        return results_from_rows(self.replays, session_id)

    def replay_detectors(self, **kwargs: Unpack[DetectorOptions]) -> pd.DataFrame:
        """The failures users report per strategy x window x threshold (see
        ``detector_table``), from the stored rounds."""
        return detector_table(self.replay_results(), **kwargs)

    def replay_survival(self, **kwargs: Unpack[SurvivalOptions]) -> pd.DataFrame:
        """Recall after the 1st, 2nd, ... compaction per strategy x window x threshold, with
        the sessions behind each point and the cliff (see ``survival_curve``)."""
        return survival_curve(self.replay_results(), **kwargs)

    def verdict(self, **kwargs: Unpack[VerdictOptions]) -> Verdict:
        """The run's `Verdict` (see ``workbench.harness.verdict``): of `verdict_frame`, by the
        spec's ``[verdict]`` rule and seed unless `kwargs` say otherwise, carrying the policy
        verdict of the replays when the ``[replay]`` asks for ``detectors``.

        The default verdict is computed once per `Results` (the report, its HTML page and the
        CLI all show it); arguments compute a fresh one.
        """
        cached: Verdict | None = getattr(self, "_verdict", None)
        if not kwargs and cached is not None:
            return cached
        table = getattr(self.spec, "verdict", None)
        given: VerdictOptions = {"seed": int(getattr(self.spec, "seed", 0) or 0)}
        if table is not None:
            given["rule"] = str(table.rule)
            given["recall_tolerance"] = float(table.recall_tolerance)
        given["replays"] = reported_rows(self)
        given.update(kwargs)
        found = verdict(self.verdict_frame(), **given)
        if not kwargs:
            self._verdict = found
        return found

    def verdict_frame(self) -> pd.DataFrame:
        """The cells as the verdict reads them: with each summary's text as its key
        (``summary_key``), when every cell that names a summary file still has it."""
        frame = self.cells
        if "summary_path" not in frame:
            return frame
        texts = []
        for rel in frame["summary_path"]:
            try:
                texts.append((self.run_dir / rel).read_text(encoding="utf-8")
                             if isinstance(rel, str) and rel else None)
            except OSError:
                return frame
        return frame.assign(**{SUMMARY_KEY: texts})

    def cell_text(self, cell_id: str, name: str) -> str | None:
        """A text a cell kept beside its row: ``raw.txt`` (the reply its summary was parsed
        from), ``forgotten.json`` (what the summary forgot), ``qa.json`` (its ``[qa]``
        answers); None when it has none. Read from the store, or from the file an older run
        folder wrote (`TEXT_FILES`)."""
        return read_cell_text(self.run_dir, cell_id, name)

    def plot(self, kind: str = "tradeoff", **kwargs: object) -> Figure:
        """A matplotlib Figure of the cells (see ``workbench.harness.results._plots``)."""
        # lazy: _plots loads matplotlib, which only plotting needs (printing a run does not)
        from workbench.harness.results import _plots

        return _plots.plot_results(self, kind, **kwargs)

    def __repr__(self) -> str:
        # Cheap, and it makes no frame: asyncio prints a finished task's result (a run's
        # `Results`) whenever `asyncio.run` on the main thread restores Ctrl-C's handler
        # (Python 3.11 formats the handler, and so the task, into an error it then drops).
        return (f"Results({str(self.run_dir)!r}, cells={self._length('cells')}, "
                f"attempts={self._length('attempts')}, status={self.status!r})")

    def _repr_html_(self) -> str:
        head = f"<p><b>{self.run_dir}</b>: {len(self.cells)} cells, status {self.status}</p>"
        if self.cells.empty:
            return head
        return head + self.table().to_html(index=False, na_rep="")
