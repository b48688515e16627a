"""Stage 3 of the harness, the results: what a run wrote, and what it says.

In: a finished cell (`CellResult`, ``_cell_result``) from the run stage, and later the run
folder (``spec.toml``, ``results.sqlite``, ``summaries/``). Out: the store the run writes into
(``_store``, with named migrations in ``_migrations``; ``_writer``: one thread writing the
cells), `Results` (the folder as DataFrames), the comparison table (``_table``), paired
cluster-bootstrap comparisons (``_paired``), the `Verdict` (``_verdict``: a pure function of
the cell rows, every variant against the best in ``_versus_best``, Holm in ``_holm``, power in
``_power``, the `Recommendation` in ``_recommend``; the object, its ``to_dict`` and its
terminal text in ``_verdict_model``, wording in ``_verdict_text``; what it checks before
it ranks in ``_verdict_checks``), the judge's agreement with the exact grader
(``_judge_agreement``), outcome classes (``_outcomes``), stored replays (``_replays``), the
policy verdict over them (``_policy_verdict``: a pure function of the replay rows; the
`PolicyVerdict` in ``_policy_verdict_model``, carried by the `Verdict`) and plots
(``_plots``). Imports only the
experiment stage; the run stage writes through its store, and `workbench.harness.report` turns
it into documents.
"""

from workbench.harness.results._cell_result import AttemptResult, CellResult, CellTexts
from workbench.harness.results._judge_agreement import cohen_kappa, judge_agreement
from workbench.harness.results._outcomes import ERROR, FAILED, OK, error_class, outcome_kind
from workbench.harness.results._paired import PairedResult, paired_comparison
from workbench.harness.results._policy_verdict import policy_rows, policy_verdict
from workbench.harness.results._policy_verdict_model import PolicyVerdict
from workbench.harness.results._recommend import Recommendation
from workbench.harness.results._results import DB_FILE, SPEC_FILE, SUMMARIES_DIR, Results
from workbench.harness.results._store import ResultsStore
from workbench.harness.results._table import comparison_table
from workbench.harness.results._table_format import style_table
from workbench.harness.results._verdict import (
    ErrorCount,
    MetricVerdict,
    StratumVerdict,
    Verdict,
    verdict,
)

__all__ = ["DB_FILE", "ERROR", "FAILED", "OK", "SPEC_FILE", "SUMMARIES_DIR", "AttemptResult",
           "CellResult", "CellTexts", "ErrorCount",
           "MetricVerdict", "PairedResult", "PolicyVerdict", "Recommendation", "Results",
           "ResultsStore", "StratumVerdict",
           "Verdict", "cohen_kappa", "comparison_table", "error_class", "judge_agreement",
           "outcome_kind", "paired_comparison", "policy_rows", "policy_verdict", "style_table",
           "verdict"]
