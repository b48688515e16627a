"""Where the gate looks by default (kept free of imports: the pytest plugin reads these)."""

DEFAULT_SPEC = "experiments/regress.toml"
"""The gate's experiment file, under the working directory (or pytest's rootdir)."""

BASELINE_ROOT = "regress"
"""Baselines live in ``regress/<experiment name>/`` under the working directory by default."""
