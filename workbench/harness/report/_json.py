"""``--json PATH``: a run's answer as data, the serialisation of its one `Verdict`.

`RunDocument` is the schema (pydantic, each field documented); `run_document` builds it from a
`Results`: the comparison table, the verdict (every comparison with its interval, p-value and
label), the recommendation, the errors, and the run's provenance (workbench version, spec hash,
session hashes, model strings with secrets masked, template hashes). `write_json` validates it
against the schema before it writes, so a file that exists is a file that validates.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from workbench._redact import redact
from workbench._version import __version__
from workbench.harness.results._results import SPEC_FILE, Results

__all__ = ["SCHEMA_VERSION", "Provenance", "RunDocument", "run_document", "write_json"]

SCHEMA_VERSION = 1
"""Bumped when a field changes meaning or goes away (adding one does not)."""

Scalar = str | int | float | bool | None


class _Strict(BaseModel):
    # Each field's docstring is its description in the JSON schema (`RunDocument.model_json_schema`).
    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)


class ComparisonDoc(_Strict):
    """One template against the best of its stratum on one metric."""

    variant: str
    """The compared template."""
    best: str
    """The stratum's best template on this metric."""
    metric: str
    """The metric (a cell column)."""
    n_sessions: int
    """Sessions with a value on both sides (the bootstrap's clusters)."""
    mean_diff: float | None
    """Mean paired difference ``variant - best`` (None without pairs)."""
    ci_low: float | None
    """Lower end of its 95 % cluster-bootstrap interval (not adjusted)."""
    ci_high: float | None
    """Upper end."""
    p_value: float | None
    """Two-sided bootstrap p-value."""
    p_adjusted: float | None
    """Holm-adjusted across the stratum's comparisons with the best."""
    status: str
    """``tie``, ``worse``, ``better`` or ``identical``: the label."""
    consistent: bool
    """Every paired difference is the same non-zero number."""
    sd: float | None = None
    """SD of the per-session differences."""


class MetricDoc(_Strict):
    """One headline metric in one stratum."""

    model_config = ConfigDict(extra="allow", use_attribute_docstrings=True)  # power fields...
    metric: str
    """The metric."""
    best: str | None
    """The template with the best mean (None without data)."""
    winner: str | None
    """`best` when it is significantly better than every other template."""
    means: dict[str, float | None]
    """Mean per template over the stratum's common sessions (failure rate for ``failed``)."""
    comparisons: list[ComparisonDoc]
    """Every other template against the best."""


class RecommendationDoc(_Strict):
    """The template to ship, by the verdict's rule, and why."""

    template: str | None
    """The template, or None when none can be recommended."""
    rule: str
    """The rule (``min-retained-safe``, ``max-recall``, ``min-retained``, ``pareto``)."""
    scope: str
    """``model @ window``, or ``run``."""
    reasons: list[str]
    """The clauses of the Recommendation line."""
    caveats: list[str] = Field(default_factory=list)
    """What the pick costs or cannot show (a metric where it is significantly worse, too few
    sessions, the judge left out...)."""
    intervals: list[dict[str, Scalar]]
    """The differences the reasons quote."""
    eligible: list[str]
    """The templates the rule allowed."""
    tied: list[str]
    """Templates the pick cannot be told from on the rule's criterion."""
    per_stratum: list[dict[str, Scalar | list[str]]]
    """For the run: each stratum's pick and eligible templates."""
    text: str
    """The Recommendation line as the terminal prints it."""


class StratumDoc(_Strict):
    """The verdict for one model x window (never pooled)."""

    model: str
    """The model label (secrets masked)."""
    window: int | str
    """The window in tokens, or ``none``."""
    title: str
    """``model @ window``."""
    variants: list[str]
    """The compared templates."""
    n_common: int
    """Sessions every template completed."""
    warnings: list[str]
    """Why this stratum cannot tell templates apart, when it cannot."""
    recommendation: RecommendationDoc | None
    """The template recommended here."""
    metrics: list[MetricDoc]
    """One entry per headline metric."""
    real_window: int | str | None = None
    """The window the cells ran at (below `window` when the model's own context is smaller)."""
    counted_with: str | None = None
    """The stratum of the same model and real window this one is counted with, if any."""
    judge: dict[str, object] | None = None
    """The judge's agreement with the exact grader here (None without a judge)."""
    qa_reference: dict[str, dict[str, float | None]] = Field(default_factory=dict)
    """Per full-history QA metric, its mean per template."""


class ErrorDoc(_Strict):
    """Cells without a summary, for one error class."""

    error_class: str
    """The root error's class name."""
    kind: str
    """``failed`` (a compaction outcome) or ``error`` (infrastructure)."""
    count: int
    """How many cells."""
    cause: str
    """The plain-language cause."""
    details: list[str]
    """What names it (the file and line, the cell and request, the host and status)."""
    label: str
    """A readable name for the class."""
    text: str
    """The error summary's line."""


class VerdictDoc(_Strict):
    """The `Verdict`: what the terminal, Markdown and HTML render."""

    on: str
    """The compared column (``template``)."""
    cells: int
    """Cells considered."""
    rule: str
    """The recommendation rule."""
    recall_tolerance: float
    """Its recall tolerance (``min-retained``)."""
    infrastructure_errors: int
    """Cells that hit an infrastructure error."""
    recommendation: RecommendationDoc | None
    """The run's recommendation, aggregated over the strata."""
    strata: list[StratumDoc]
    """One per model x window with at least two templates."""
    errors: list[ErrorDoc]
    """By error class, most frequent first."""
    grading: dict[str, object] = Field(default_factory=dict)
    """How the answers were graded (the graders' audit)."""
    policies: dict[str, object] | None = None
    """The policy verdict over the whole-session replays (None without ``[replay]``
    detectors)."""


class Provenance(_Strict):
    """Where the numbers come from."""

    workbench_version: str
    """The version that wrote the file."""
    spec_sha256: str | None
    """sha256 of the run folder's ``spec.toml`` (the spec as run)."""
    sessions: dict[str, str | None]
    """Session id -> sha256 of its file (None when the file is gone)."""
    models: list[str]
    """The model labels, secrets masked."""
    templates: dict[str, str | None]
    """Template -> sha256 of its sources (None when it cannot be loaded here)."""


class RunDocument(_Strict):
    """What ``--json PATH`` writes."""

    schema_version: int = SCHEMA_VERSION
    """This schema's version."""
    command: str
    """The command that wrote it (``run``, ``report``, ``compare``, ``tune``, ``regress``)."""
    run_dir: str
    """The run folder."""
    table: list[dict[str, Scalar]]
    """The comparison table, one object per template x model x window."""
    verdict: VerdictDoc
    """The verdict, every comparison with its interval, p-value and label."""
    recommendation: RecommendationDoc | None
    """The run's recommendation (the verdict's, repeated at the top)."""
    errors: list[ErrorDoc]
    """The errors (the verdict's, repeated at the top)."""
    provenance: Provenance
    """Version, hashes and masked model strings."""
    extra: dict[str, object] = Field(default_factory=dict)
    """What the command adds (``compare``: the comparison text)."""


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _plain(value: object) -> Scalar:
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    item = getattr(value, "item", None)  # numpy scalars
    return _plain(item()) if callable(item) else str(value)


def _templates(results: Results) -> dict[str, str | None]:
    # variants load (and compile) only for the file: the light start
    from workbench.harness.experiment._variants import load_variant

    out: dict[str, str | None] = {}
    names = sorted(results.cells["template"].dropna().astype(str).unique()) \
        if "template" in results.cells else []
    for name in names:
        try:
            source = load_variant(name, results.spec).templates
        except Exception:  # noqa: BLE001 - a variant gone since the run: no hash, said as None
            out[name] = None
            continue
        text = f"{source.compaction}\0{source.summary}".encode()
        out[name] = hashlib.sha256(text).hexdigest()
    return out


def provenance(results: Results) -> Provenance:
    """The run's provenance: version, spec hash, session and template hashes, masked models."""
    cells = results.cells
    sessions: dict[str, str | None] = {}
    if "session_path" in cells:
        for sid, path in cells[["session_id", "session_path"]].drop_duplicates().itertuples(
                index=False):
            sessions[str(sid)] = _sha256(Path(str(path))) if isinstance(path, str) else None
    models = sorted({redact(str(m)) for m in cells["model"].dropna()}) if "model" in cells \
        else []
    return Provenance(workbench_version=__version__,
                      spec_sha256=_sha256(results.run_dir / SPEC_FILE), sessions=sessions,
                      models=models, templates=_templates(results))


def run_document(results: Results, command: str,
                 extra: dict[str, object] | None = None) -> RunDocument:
    """The document ``--json`` writes for `results` (validated against `RunDocument`)."""
    found = results.verdict().to_dict()
    table = [{str(k): _plain(v) for k, v in row.items()}
             for row in results.table().to_dict("records")]
    verdict = VerdictDoc.model_validate(json.loads(redact(json.dumps(found, default=str))))
    return RunDocument(command=command, run_dir=str(results.run_dir), table=table,
                       verdict=verdict, recommendation=verdict.recommendation,
                       errors=verdict.errors, provenance=provenance(results),
                       extra=extra or {})


def write_json(path: Path, results: Results, command: str,
               extra: dict[str, object] | None = None) -> Path:
    """Write `run_document` to `path` (parents created); returns the path."""
    document = run_document(results, command, extra)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(redact(document.model_dump_json(indent=2)) + "\n", encoding="utf-8")
    return path
