"""Template variants: a folder of templates plus optional summarize options (``variant.toml``).

A variant folder (``prompts/<name>/`` in the project, or any path) may hold ``compaction.md``
and ``compaction_summary.md`` (a missing file falls back to the built-in one), a ``README.md``
describing it, and ``variant.toml`` with options passed to ``summarize``, e.g.
``transcript_style = "jsonl"``. The name ``default`` is the built-in templates.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.errors import ConfigError
from workbench.harness._experiment import Experiment, project_root

VARIANT_FILE = "variant.toml"
BUILTIN = "default"
# variant.toml key -> allowed values (None = any); all but `description` go to summarize().
VARIANT_OPTIONS: dict[str, tuple[str, ...] | None] = {
    "transcript_style": ("goose", "jsonl"),
    "removal": ("drop", "elide"),
    "order": ("goose", "centred"),
    "description": None,
}


@dataclass
class Variant:
    """A resolved template variant.

    Attributes:
        name: As written in the experiment.
        folder: Where its files are (None for the built-in templates).
        templates: The `Templates` to summarize with.
        options: Keyword options for ``summarize`` (``transcript_style``...).
    """

    name: str
    folder: Path | None
    templates: Any
    options: dict[str, Any] = field(default_factory=dict)


def variant_folder(name: str, experiment: Experiment | None = None) -> Path | None:
    """The folder of variant `name`, or None for the built-in ``default`` without a folder.

    Raises:
        ConfigError: no such folder; the message lists the project's variants.
    """
    prompts = project_root() / "prompts"
    if (prompts / name).is_dir():
        return prompts / name
    candidate = experiment.resolve_path(name) if experiment else Path(name)
    if candidate.is_dir():
        return candidate
    if name == BUILTIN:
        return None
    known = sorted(p.name for p in prompts.iterdir() if p.is_dir()) if prompts.is_dir() else []
    raise ConfigError(f"templates: no variant {name!r}: not a folder under {prompts} nor a path "
                      f"(known: {', '.join(known) or 'none'}; 'default' is the built-in)")


def read_variant_options(folder: Path) -> dict[str, Any]:
    """Options from ``<folder>/variant.toml`` (empty when absent), validated."""
    path = folder / VARIANT_FILE
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    for key, value in data.items():
        if key not in VARIANT_OPTIONS:
            raise ConfigError(f"{path}: {key}: unknown option; allowed: "
                              f"{', '.join(sorted(VARIANT_OPTIONS))}")
        allowed = VARIANT_OPTIONS[key]
        if allowed is not None and value not in allowed:
            raise ConfigError(f"{path}: {key}: {value!r} is not one of {', '.join(allowed)}")
    return {k: v for k, v in data.items() if k != "description"}


def load_variant(name: str, experiment: Experiment | None = None) -> Variant:
    """Resolve a variant name to its templates and options."""
    from workbench.compaction import Templates

    folder = variant_folder(name, experiment)
    if folder is None:
        return Variant(name, None, Templates.default())
    return Variant(name, folder, Templates.from_dir(folder), read_variant_options(folder))
