"""What each model of an experiment runs: the first ``limit`` sessions, then each model
entry's own ``sessions`` and ``templates`` subsets (`expand_cells` applies them)."""

from __future__ import annotations

from workbench.errors import ConfigError
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._variants import canonical_name, variant_folder
from workbench.sessions import Session

__all__ = ["KNOWN_SHOWN", "check_model_sessions", "limit_sessions", "model_templates"]

KNOWN_SHOWN = 8
"""How many of the experiment's session ids an unknown-session message lists."""


def check_model_sessions(experiment: Experiment, sessions: list[Session]) -> None:
    """Refuse a model entry whose ``sessions`` names a session the experiment does not have.

    Raises:
        ConfigError: naming the model entry, every unknown name and some known ids.
    """
    ids = [s.id for s in sessions]
    known = set(ids)
    for i, spec in enumerate(experiment.models):
        unknown = [n for n in dict.fromkeys(spec.sessions or []) if n not in known]
        if not unknown:
            continue
        shown = ", ".join(ids[:KNOWN_SHOWN]) + (", ..." if len(ids) > KNOWN_SHOWN else "")
        what = "is not one of" if len(unknown) == 1 else "are not among"
        raise ConfigError(
            f"models[{i}] ({spec.label}): sessions {', '.join(map(repr, unknown))} {what} "
            f"the experiment's {len(ids)} sessions (session ids: {shown or 'none'})")


def limit_sessions(experiment: Experiment, sessions: list[Session]) -> list[Session]:
    """The first ``limit`` sessions in spec order (all of them without a ``limit``)."""
    return sessions[:experiment.limit] if experiment.limit else sessions


def model_templates(experiment: Experiment, templates: list[str]) -> dict[int, list[str]]:
    """Model position -> the templates of `templates` it runs (its entry's ``templates``).

    Raises:
        ConfigError: an entry's ``templates`` names a variant that does not exist (with the
            closest known name).
    """
    out: dict[int, list[str]] = {}
    for i, entry in enumerate(experiment.models):
        if entry.templates is None:
            out[i] = list(templates)
            continue
        allowed = set()
        for name in entry.templates:
            try:
                variant_folder(name.split("{", 1)[0], experiment)
                allowed.add(canonical_name(name, experiment))
            except ConfigError as exc:
                raise ConfigError(f"models[{i}] ({entry.label}): templates: {exc}") from None
        out[i] = [t for t in templates if t in allowed]
    return out
