"""Stage 1 of the harness, the experiment: what to run, before anything runs.

In: an experiment TOML file (or an `Experiment` built in code) and the template variant folders
it names. Out: a validated `Experiment` (``_spec``: models, sessions, templates, windows,
strategies, budget, cache, executor, ``[regress]``/``[tune]``/``[replay]`` tables), resolved
template `Variant` s with their parameters (``_variants``, ``_params``), and the matrix of
`Cell` s (``_cells``). Feeds `workbench.harness.run`. Imports no other harness stage.
"""

from workbench.harness.experiment._cells import Cell, SessionCache, expand_cells
from workbench.harness.experiment._params import point_label, template_variables
from workbench.harness.experiment._spec import (
    Budget,
    CachePolicy,
    ExecutorSpec,
    Experiment,
    ModelEntry,
    SessionSource,
)
from workbench.harness.experiment._variants import Variant, load_variant

__all__ = ["Budget", "CachePolicy", "Cell", "ExecutorSpec", "Experiment", "ModelEntry",
           "SessionCache", "SessionSource", "Variant", "expand_cells", "load_variant",
           "point_label", "template_variables"]
