"""Template variants: a folder of templates plus optional summarize options (``variant.toml``).

A variant folder (``<name>/`` or ``prompts/<name>/`` beside the spec or in the working folder,
else ``<name>/`` in the spec's ``prompts_dir`` (default: the shipped variants), or any path;
see `variant_places`) may hold
``compaction.md`` and ``compaction_summary.md`` (a missing file falls back to the built-in
one), a ``README.md`` describing it, and ``variant.toml`` with options passed to ``summarize``, e.g.
``transcript_style = "jsonl"``, and ``[params.<name>]`` tables declaring template parameters
(see ``_params``). The name ``default`` is the built-in templates; ``name{k=v,...}`` is a point
of a parametrised variant.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

from workbench._memo import memo
from workbench._resources import shipped
from workbench._suggest import did_you_mean
from workbench.compaction import Templates
from workbench.compaction._templates import (
    COMPACTION_SUMMARY_TEMPLATE,
    COMPACTION_TEMPLATE,
    check_template,
)
from workbench.errors import ConfigError
from workbench.harness.experiment._params import (
    PARAMS_KEY,
    Param,
    ParamValue,
    parse_label,
    parse_params,
    point_label,
    resolve_point,
)
from workbench.harness.experiment._spec import Experiment
from workbench.harness.experiment._toml import loads_toml
from workbench.harness.experiment._validate import check_variant_files, check_variant_inside

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
        params: The full parameter values of this point (empty for an unparametrised variant).
        base: The variant folder's name without the parameter point.
        declared: The parameters the folder declares.
        raw_templates: The folder's template sources (`templates` without the parameters).
    """

    name: str
    folder: Path | None
    templates: Templates
    options: dict[str, object] = field(default_factory=dict)
    params: dict[str, ParamValue] = field(default_factory=dict)
    base: str = ""
    declared: dict[str, Param] = field(default_factory=dict)
    raw_templates: Templates | None = None


_EXTRA_FOLDERS: dict[str, Path] = {}


def register_variant_folder(name: str, folder: Path) -> None:
    """Make `name` resolve to `folder` in this process (the tuner's generated proposals, which
    live in the run folder but keep short labels in tables)."""
    _EXTRA_FOLDERS[name] = Path(folder)


PROMPTS_DIR = "prompts"


def prompts_folder(experiment: Experiment | None = None) -> Path:
    """The experiment's folder of variant folders: its ``prompts_dir`` (relative to the spec),
    else the variants the workbench ships."""
    if experiment is not None and experiment.prompts_dir:
        return experiment.resolve_path(experiment.prompts_dir)
    return shipped(PROMPTS_DIR)


def known_variants(experiment: Experiment | None = None) -> list[str]:
    """The variant folders in `prompts_folder` (sorted names)."""
    folder = prompts_folder(experiment)
    return sorted(p.name for p in folder.iterdir() if p.is_dir()) if folder.is_dir() else []


def variant_places(name: str, experiment: Experiment | None = None) -> list[Path]:
    """Where variant `name` is looked for, in order: beside the spec (``<spec folder>/<name>``,
    then ``<spec folder>/prompts/<name>``), in the working folder (likewise), then in the
    experiment's `prompts_folder`. An absolute path is only itself."""
    path = Path(name).expanduser()
    if path.is_absolute():
        return [path]
    roots = [Path(experiment.base_dir).resolve()] if experiment and experiment.base_dir else []
    roots.append(Path.cwd())
    places = [p for root in roots for p in (root / path, root / PROMPTS_DIR / path)]
    places.append(prompts_folder(experiment) / path)
    return list(dict.fromkeys(places))


def variant_folder(name: str, experiment: Experiment | None = None) -> Path | None:
    """The folder of variant `name` (the first of `variant_places` that exists), or None for
    the built-in ``default`` without a folder. Tables keep `name` as written.

    Raises:
        ConfigError: no such folder; the message lists where it looked and the project's
            variants.
    """
    if name in _EXTRA_FOLDERS:
        return _EXTRA_FOLDERS[name]
    places = variant_places(name, experiment)
    found = next((p for p in places if p.is_dir()), None)
    if found is not None:
        check_variant_inside(name, found)
        return found
    if name == BUILTIN:
        return None
    known = known_variants(experiment)
    raise ConfigError(f"templates: no variant {name!r}{did_you_mean(name, [*known, BUILTIN])}: "
                      f"looked for a folder at {', '.join(str(p) for p in places)} (variants in "
                      f"{prompts_folder(experiment)}: {', '.join(known) or 'none'}; 'default' "
                      "is the built-in); add the folder, or fix the name")


def _read_variant_toml(folder: Path) -> tuple[Path, dict[str, object]]:
    path = folder / VARIANT_FILE
    check_variant_files(folder, (VARIANT_FILE,))
    if not path.is_file():
        return path, {}
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the variant file: {exc}") from exc
    # Parsed once per content and run (`RunMemo.variant_files`): a tune resolves every point
    # of a variant from the same file.
    files = memo().variant_files
    cached = files.get(path)
    if cached is None or cached[0] != raw:
        cached = files.put(path, (raw, dict(loads_toml(text, str(path)))))
    return path, copy.deepcopy(cached[1])


def read_variant_params(folder: Path | None) -> dict[str, Param]:
    """The parameters ``<folder>/variant.toml`` declares (empty when none), validated."""
    if folder is None:
        return {}
    path, data = _read_variant_toml(folder)
    return parse_params(data.get(PARAMS_KEY, {}), str(path))


def read_variant_options(folder: Path) -> dict[str, object]:
    """Options from ``<folder>/variant.toml`` (empty when absent), validated."""
    path, data = _read_variant_toml(folder)
    data = {k: v for k, v in data.items() if k != PARAMS_KEY}
    for key, value in data.items():
        if key not in VARIANT_OPTIONS:
            raise ConfigError(f"{path}: {key}: unknown option; allowed: "
                              f"{', '.join(sorted(VARIANT_OPTIONS))}")
        allowed = VARIANT_OPTIONS[key]
        if allowed is not None and value not in allowed:
            raise ConfigError(f"{path}: {key}: {value!r} is not one of {', '.join(allowed)}")
    return {k: v for k, v in data.items() if k != "description"}


def load_variant(name: str, experiment: Experiment | None = None) -> Variant:
    """Resolve a variant name (or a point ``name{k=v}``) to its templates and options.

    A parametrised variant's templates carry its values as render variables
    (`Templates.params`; ``templates.baked()`` writes them in for an export); the returned
    `Variant.name` is the point's canonical label (only non-default values listed).

    Both templates are compiled here, in the renderer's sandbox and under its limits, so a
    template that cannot be compiled fails once, at load, naming the variant and the file.

    Raises:
        ConfigError: no such variant, an unknown parameter or a value outside its domain.
        TemplateError: a template does not compile (syntax, nesting depth, length, time).
    """
    base, raw = parse_label(name)
    folder = variant_folder(base, experiment)
    if folder is None:
        if raw:
            raise ConfigError(f"templates: {name!r}: the built-in templates declare no parameters")
        return Variant(name, None, Templates.default(), base=base)
    declared = read_variant_params(folder)
    values = resolve_point(declared, raw, f"templates: {name!r}")
    label = point_label(base, values, declared) if raw else name
    check_variant_files(folder, (COMPACTION_TEMPLATE, COMPACTION_SUMMARY_TEMPLATE))
    source = Templates.from_dir(folder)
    where = {file: f"{base}/{file}" for file in (COMPACTION_TEMPLATE, COMPACTION_SUMMARY_TEMPLATE)}
    for text, file in ((source.compaction, COMPACTION_TEMPLATE),
                       (source.summary, COMPACTION_SUMMARY_TEMPLATE)):
        check_template(text, where[file], reads=file == COMPACTION_TEMPLATE)
    params: dict[str, object] = {**values}
    templates = Templates(source.compaction, source.summary, label, params=params)
    return Variant(label, folder, templates, read_variant_options(folder), params=values,
                   base=base, declared=declared, raw_templates=source)


def canonical_name(name: str, experiment: Experiment | None = None) -> str:
    """The canonical label of a variant name (points list only their non-default values)."""
    base, raw = parse_label(name)
    if not raw:
        return name
    folder = variant_folder(base, experiment)
    declared = read_variant_params(folder)
    return point_label(base, resolve_point(declared, raw, f"templates: {name!r}"), declared)
