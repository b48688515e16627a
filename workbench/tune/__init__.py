"""The tuning search: parametrised template variants, shared calls, a winner with evidence.

Smallest first: `Objective` (the one winner rule: the verdict's recommendation, by the
verdict's rule names; `Pick`; `variant_scores`, `pareto_mask`), `tune` / `tune_async`
(render-only grid plus successive halving over prompt groups, in one run folder, calls shared),
`TuneResult`, `plot_front`, `write_winner` (the winner as a variant folder with its evidence;
the tune writes it under its run folder), and the optional proposer (`propose`,
`failure_analysis`).
"""

from workbench.tune._objective import Objective, Pick, pareto_mask, variant_scores
from workbench.tune._output import plot_front, save_outputs, write_winner
from workbench.tune._proposer import PROPOSER_SYSTEM, failure_analysis, propose
from workbench.tune._search import TuneResult, tune, tune_async

__all__ = [
    "PROPOSER_SYSTEM",
    "Objective",
    "Pick",
    "TuneResult",
    "failure_analysis",
    "pareto_mask",
    "plot_front",
    "propose",
    "save_outputs",
    "tune",
    "tune_async",
    "variant_scores",
    "write_winner",
]
