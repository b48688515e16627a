"""Which experiment file a command means: a path, a shipped experiment's name, or the default.

``workbench run`` without SPEC runs ``experiments/default.toml`` in the working folder when
there is one (a clone, or a project `workbench init` wrote), else the shipped default; the
same goes for ``tune`` (``experiments/tune.toml``) and ``regress`` (``experiments/regress.toml``).
A SPEC that is not a file may name a shipped experiment (``tune``, ``tune.toml`` or
``experiments/tune.toml``), so the README's commands work from a wheel installed anywhere.
"""

from __future__ import annotations

from pathlib import Path

from workbench._resources import EXPERIMENTS, shipped_experiment, shipped_experiments
from workbench._suggest import did_you_mean
from workbench.errors import ConfigError


def find_spec(spec: str | Path | None, default: str = "default") -> Path:
    """The experiment file `spec` stands for.

    Args:
        spec: A path, a shipped experiment's name, or None for the command's default.
        default: The command's default experiment (``default``, ``tune``, ``regress``).

    Raises:
        ConfigError: no such file and no shipped experiment of that name (with the closest
            shipped name).
    """
    if spec is None:
        local = Path(EXPERIMENTS) / f"{default}.toml"
        if local.is_file():
            return local
        found = shipped_experiment(default)
        if found is None:
            raise ConfigError(f"no {local} here and no shipped {default!r} experiment in the "
                              "installed workbench; pass SPEC, or reinstall the package")
        return found
    path = Path(spec)
    if path.is_file():
        return path
    found = shipped_experiment(str(spec))
    if found is not None:
        return found
    if path.is_dir():
        raise ConfigError(f"{spec}: is a folder; pass an experiment file (TOML)")
    shipped = shipped_experiments()
    hint = did_you_mean(path.stem, shipped)
    raise ConfigError(f"{spec}: no such experiment file{hint}; shipped experiments (usable by "
                      f"name anywhere): {', '.join(shipped) or 'none'}")
