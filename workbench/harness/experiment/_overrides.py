"""Command-line overrides of an experiment: ``--model``, ``--template``, ``--window``,
``--sessions``, ``--limit`` and ``--set key=value`` (``workbench run``, ``tune``, ``regress``).

Each of ``--model``, ``--template``, ``--window`` and ``--sessions`` replaces the spec's list
(repeat the option for several); ``--limit N`` keeps the first N sessions in the spec's order;
``--set`` sets any other field by its key path (``concurrency=2``, ``verdict.rule=max-recall``,
``models[0].concurrency=1``), its value read as TOML (``true``, ``3``, ``"text"``, ``[1, 2]``)
or, when it does not read, as text. The result is validated like a TOML file, so a bad value
fails with the key it names. A ``--model`` that names an entry of the spec (its name, label or
model string) keeps that entry whole, with its parameters and recording; anything else is a
new model string.

An overridden run is a different experiment, so it gets its own run folder: the spec's name
plus `Overrides.digest` (``runs/default-1a2b3c4d``), and its ``spec.toml`` records the spec as
run.
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

from workbench._suggest import did_you_mean
from workbench.errors import ConfigError
from workbench.harness.experiment._cells import ALL_DATASETS, read_manifest
from workbench.harness.experiment._spec import CACHE_PREFIXES, Experiment
from workbench.harness.experiment._toml import TOMLValue
from workbench.models._spec import check_model_string

SOURCE = "command line"
"""How errors name where an overridden value came from."""
_INDEX = re.compile(r"^(?P<key>[A-Za-z_][A-Za-z0-9_]*)(?:\[(?P<index>\d+)\])?$")


@dataclass(frozen=True)
class Overrides:
    """What the command line changes in a spec (empty: nothing)."""

    models: tuple[str, ...] = ()
    templates: tuple[str, ...] = ()
    windows: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()
    limit: int | None = None
    sets: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return any(bool(v) for v in asdict(self).values())

    def describe(self) -> str:
        """The overrides as the options that set them (``--model extractive --limit 3``)."""
        parts = [f"--{flag} {v}" for flag, values in (
            ("model", self.models), ("template", self.templates), ("window", self.windows),
            ("sessions", self.sessions), ("set", self.sets)) for v in values]
        if self.limit is not None:
            parts.append(f"--limit {self.limit}")
        return " ".join(parts)

    def digest(self) -> str:
        """8 hex digits of sha256 over the overrides (sessions as absolute paths)."""
        data = asdict(self)
        data["sessions"] = [_session_path(s) for s in self.sessions]
        text = json.dumps(data, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:8]

    def run_name(self, experiment: Experiment) -> str:
        """The overridden run's folder name: the spec's name plus `digest`."""
        return f"{experiment.name}-{self.digest()}"

    def apply(self, experiment: Experiment) -> Experiment:
        """`experiment` with the overrides applied, validated like a spec file.

        Raises:
            ConfigError: a value the spec would refuse (naming the key), an unknown key, a
                ``--set`` that is not ``key=value``, or an unknown model (with the closest
                name among the spec's entries).
        """
        if not self:
            return experiment
        data = experiment.to_dict(secrets=True)
        if experiment.base_dir is not None:
            data["base_dir"] = experiment.base_dir
        if self.models:
            data["models"] = [m for name in self.models for m in _models(name, experiment)]
        if self.templates:
            data["templates"] = list(self.templates)
        if self.windows:
            data["windows"] = list(self.windows)
        if self.sessions:
            data["sessions"] = [_session_path(s) for s in self.sessions]
        if self.limit is not None:
            data["limit"] = self.limit
        for item in self.sets:
            key, sep, value = item.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"{SOURCE}: --set {item!r}: write key=value, e.g. "
                                  "--set concurrency=2 or --set verdict.rule=max-recall")
            _set_path(data, key.strip(), _value(value.strip()), item)
        return Experiment.from_dict(data, source=SOURCE)


def _session_path(text: str) -> str:
    """A ``--sessions`` value: a dataset name stays a name; a path or glob is made absolute
    against the working folder (it was typed there, not beside the spec)."""
    if text == ALL_DATASETS or text in read_manifest():
        return text
    path = Path(text).expanduser()
    return str(path if path.is_absolute() else Path.cwd() / path)


def _bare(model: str) -> str:
    for prefix in CACHE_PREFIXES:
        if model.startswith(prefix):
            return model[len(prefix):]
    return model


def _models(name: str, experiment: Experiment) -> list[object]:
    """The spec entries `name` names (by name or label, else by model string), or a new one."""
    entries = experiment.to_dict(secrets=True)["models"]
    assert isinstance(entries, list)  # to_dict always lists the models
    by_label = [i for i, m in enumerate(experiment.models) if name in (m.label, m.name)]
    by_model = [i for i, m in enumerate(experiment.models)
                if name == m.model or _bare(name) == _bare(m.model)]
    chosen = by_label or by_model
    if chosen:
        return [entries[i] for i in chosen]
    try:
        check_model_string(name, {})
    except ConfigError as exc:
        known = [m.label for m in experiment.models]
        raise ConfigError(f"{SOURCE}: --model {name!r}{did_you_mean(name, known)}: {exc} "
                          f"(the spec's models: {', '.join(known)})") from None
    return [name]


def _value(text: str) -> TOMLValue:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _set_path(data: dict[str, object], key: str, value: TOMLValue, item: str) -> None:
    parts = key.split(".")
    target: object = data
    for number, part in enumerate(parts):
        match = _INDEX.match(part)
        if match is None:
            raise ConfigError(f"{SOURCE}: --set {item!r}: cannot read the key {key!r}")
        last = number == len(parts) - 1
        name, index = match["key"], match["index"]
        if not isinstance(target, dict):
            raise ConfigError(f"{SOURCE}: --set {item!r}: {'.'.join(parts[:number])} is not a "
                              f"table, so it has no {'.'.join(parts[number:])!r}")
        if index is None:
            if last:
                target[name] = value
                return
            nested = target.setdefault(name, {})
            if not isinstance(nested, dict):
                raise ConfigError(f"{SOURCE}: --set {item!r}: {name} is not a table, so it "
                                  f"has no {'.'.join(parts[number + 1:])!r}")
            target = nested
            continue
        items = target.get(name)
        position = int(index)
        if not isinstance(items, list) or position >= len(items):
            size = len(items) if isinstance(items, list) else 0
            raise ConfigError(f"{SOURCE}: --set {item!r}: {name} has {size} entries; "
                              f"{name}[{position}] is not one of them")
        if last:
            items[position] = value
            return
        if isinstance(items[position], str):  # a shorthand entry: its table form
            field = "model" if name == "models" else "path" if name == "sessions" else "name"
            items[position] = {field: items[position]}
        target = items[position]
