"""Generated coding-agent sessions with planted facts: ground truth for what a summary forgot.

`generate_session(seed, target_tokens)` writes a realistic session and returns the facts
planted in it. Like real agent sessions it is dominated by tool output (about three quarters
of the tokens: whole-module ``read_file`` results, verbose pytest logs with the failing
traceback, ``search`` listings, file trees, install and server logs); the rest is user
requests, short assistant notes and ``edit_file`` / ``write_file`` arguments. Planted facts:
file paths and identifiers in user messages, identifiers the assistant introduces in its own
text, error strings quoted in failing tool results, user constraints, and a value the user
later replaces (the old fact is then ``stale``). The same seed always gives the same bytes:
one `random.Random(seed)`, no clock, fixed ``created`` times.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple, TypedDict

from workbench._json_types import JSONObject
from workbench._storage import write_atomic
from workbench.messages import Message
from workbench.sessions._generate_base import (
    PlantedFact,
    WriterBase,
    message_text,
    tool_share,
)
from workbench.sessions._generate_memory import MemoryWriter
from workbench.sessions._generate_shapes import SHAPES, ShapedWriter
from workbench.sessions._generate_v2 import V2Writer
from workbench.sessions._session import Session, as_int, meta_list
from workbench.tokens import default_estimator

__all__ = ["DatasetSpec", "GENERATOR_VERSION", "MEMORY", "MEMORY_DIR", "MEMORY_VERSION",
           "PlantedFact", "SHAPES", "SHIPPED",
           "dataset_name", "generate_dataset", "generate_session", "message_text", "prose_tokens",
           "tool_share"]

GENERATOR_VERSION = 3
"""The generator of the shipped set (``datasets/``): the six `SHAPES` with full ground truth.
Version 2 (one shape, ``debugging``, planted facts only) is kept byte for byte: the first six
shipped files, which the recordings and the regression baseline key on, are version 2."""
MEMORY_VERSION = 4
"""The generator of the memory set (``datasets/memory/``, `MEMORY`): version 3's shapes plus
repeated knowledge updates, tasks marked done, and questions never answered
(`workbench.sessions._generate_memory`)."""
VERSIONS = (2, 3, 4)


class DatasetSpec(NamedTuple):
    """One generated session: its seed, target size, shape and generator version."""

    seed: int
    target_tokens: int
    shape: str = "debugging"
    version: int = GENERATOR_VERSION


def _v3(seed: int, target: int, shape: str) -> DatasetSpec:
    return DatasetSpec(seed, target, shape, 3)


SHIPPED: list[DatasetSpec] = [
    # version 2: the original six (recorded by the local models; the gate keys on them)
    *(DatasetSpec(seed, target, "debugging", 2) for seed, target in
      [(1, 5_000), (2, 12_000), (3, 25_000), (4, 50_000), (5, 90_000), (6, 150_000)]),
    # version 3: most small or medium, so the default run stays fast; a few large
    *(_v3(seed, target, "debugging") for seed, target in
      [(7, 6_000), (8, 9_000), (9, 14_000), (10, 20_000), (11, 32_000), (12, 100_000)]),
    *(_v3(seed, target, "feature") for seed, target in
      [(13, 7_000), (14, 8_000), (15, 11_000), (16, 16_000), (17, 24_000), (18, 40_000),
       (19, 70_000)]),
    *(_v3(seed, target, "refactor") for seed, target in
      [(20, 6_000), (21, 9_000), (22, 13_000), (23, 18_000), (24, 28_000), (25, 60_000),
       (26, 140_000)]),
    *(_v3(seed, target, "review") for seed, target in
      [(27, 5_000), (28, 7_000), (29, 10_000), (30, 15_000), (31, 22_000), (32, 45_000),
       (33, 80_000)]),
    *(_v3(seed, target, "tool-loop") for seed, target in
      [(34, 6_000), (35, 8_000), (36, 12_000), (37, 17_000), (38, 26_000), (39, 36_000),
       (40, 120_000)]),
    *(_v3(seed, target, "discussion") for seed, target in
      [(41, 12_000), (42, 14_000), (43, 16_000), (44, 19_000), (45, 23_000), (46, 30_000),
       (47, 42_000), (48, 55_000)]),
]


MEMORY_DIR = "datasets/memory"
"""Where the memory set lives, with its own manifest: outside ``dataset:all``, so the default
run and the regression gate never see it; an experiment selects it as ``dataset:memory``."""
MEMORY: list[DatasetSpec] = [
    DatasetSpec(seed, target, shape, MEMORY_VERSION) for seed, target, shape in
    [(49, 24_000, "debugging"), (50, 30_000, "feature"), (51, 36_000, "refactor"),
     (52, 28_000, "review"), (53, 40_000, "tool-loop"), (54, 32_000, "discussion")]]
"""The memory set: one session per shape, 24k-40k tokens, so an 8k window compacts each many
times."""


def dataset_name(seed: int, target_tokens: int, version: int = GENERATOR_VERSION) -> str:
    """The shipped file stem for a seed and size: ``gen-005k-s1`` (``mem-024k-s49`` for the
    memory set's version)."""
    prefix = "mem" if version == MEMORY_VERSION else "gen"
    return f"{prefix}-{round(target_tokens / 1000):03d}k-s{seed}"


def generate_session(seed: int, target_tokens: int, *, name: str | None = None,
                     shape: str = "debugging", version: int = GENERATOR_VERSION,
                     ) -> tuple[Session, list[PlantedFact]]:
    """Generate a coding-agent session of about `target_tokens` (o200k) with planted facts.

    Args:
        seed: Fixes every byte of the result (with `shape` and `version`).
        target_tokens: The size to aim for (the result lands within a few percent).
        name: The session id; defaults to `dataset_name`.
        shape: One of `SHAPES` (version 2 writes ``debugging`` only).
        version: The generator version: 3 (the default), 2 (the original six files) or 4
            (the memory set).

    Returns:
        The session (``meta["planted_facts"]`` and ``meta["generator"]`` set; version 3 also
        sets ``shape``, ``errors``, ``files_changed``, ``pending_tasks`` and ``decisions``;
        version 4 also ``tasks`` and ``abstentions``) and the facts.

    Raises:
        ValueError: an unknown shape or version, or a shape version 2 cannot write.
    """
    if version not in VERSIONS:
        raise ValueError(f"generator version {version!r}: this generator writes "
                         f"{', '.join(map(str, VERSIONS))}")
    if shape not in SHAPES:
        raise ValueError(f"shape {shape!r} is not one of {', '.join(SHAPES)}")
    if version == 2 and shape != "debugging":
        raise ValueError(f"generator version 2 writes the debugging shape only, not {shape!r}")
    writer: WriterBase
    if version == 2:
        writer = V2Writer(seed, target_tokens)
        writer.run()
    else:
        writer = _calibrated(seed, target_tokens, shape, version)
    sid = name or dataset_name(seed, target_tokens, version)
    meta: JSONObject = {
        "generator": {"seed": seed, "target_tokens": target_tokens, "version": version},
        "planted_facts": [f.to_dict() for f in writer.facts],
        "project": writer.project,
    }
    if isinstance(writer, ShapedWriter):
        meta.update(writer.ground_truth())
    folder = MEMORY_DIR if version == MEMORY_VERSION else "datasets"
    session = Session(id=sid, format="generated", path=f"{folder}/{sid}.json",
                      messages=writer.messages, meta=meta)
    return session, writer.facts


AIM_TRIES = 4
AIM_TOLERANCE = 0.06


def _calibrated(seed: int, target: int, shape: str, version: int = 3) -> ShapedWriter:
    """The version-3 (or 4) session closest to `target`: a shape's fixed costs (its first
    episode, the closing messages) overshoot small targets, so the writer is rerun from the same
    seed aiming lower (or higher) until the size is within `AIM_TOLERANCE` (deterministic)."""
    kind = MemoryWriter if version == MEMORY_VERSION else ShapedWriter
    est = default_estimator()
    aim, best, best_gap = target, None, 0.0
    for _ in range(AIM_TRIES):
        writer = kind(seed, aim, shape)
        writer.run()
        tokens = est.count_context_tokens(writer.messages)
        gap = abs(tokens - target) / target
        if best is None or gap < best_gap:
            best, best_gap = writer, gap
        if gap <= AIM_TOLERANCE:
            break
        aim = max(500, round(aim * target / max(tokens, 1)))
    assert best is not None
    return best


def prose_tokens(messages: list[Message]) -> int:
    """Context tokens of `messages` without their tool-result messages: what is left once
    Goose's ladder has removed every tool response (o200k, `count_context_tokens`)."""
    kept = [m for m in messages if not m.has_tool_response()]
    return default_estimator().count_context_tokens(kept)


TRUTH_KEYS = ("errors", "files_changed", "pending_tasks", "decisions", "tasks", "abstentions")
"""The ground-truth keys of ``meta`` (beside ``planted_facts``) copied into the manifest
entry's ``truth`` when the session has them (version 3: the first four; version 4: all)."""


def manifest_entry(session: Session, spec: DatasetSpec) -> JSONObject:
    """The manifest entry of a generated session: measured figures, shape and ground truth."""
    est = default_estimator()
    meta = session.meta
    truth = {"planted_facts": meta["planted_facts"],
             **{k: meta[k] for k in TRUTH_KEYS if k in meta}}
    return {
        "file": f"{session.id}.json", "name": session.id, "format": "goose-json",
        "shape": spec.shape, "version": spec.version,
        "tokens": est.count_context_tokens(session.messages),
        "tokens_without_tool_output": prose_tokens(session.messages),
        "messages": len(session.messages),
        "tool_calls": sum(len(m.tool_requests()) for m in session.messages),
        "planted_facts": len(meta_list(session, "planted_facts")),
        **{k: len(meta_list(session, k)) for k in TRUTH_KEYS if k in meta},
        "seed": spec.seed, "target_tokens": spec.target_tokens,
        "tool_share": round(tool_share(session.messages), 3),
        "truth": truth,
    }


SpecTuple = tuple[int, int] | tuple[int, int, str] | tuple[int, int, str, int]
"""``(seed, target[, shape[, version]])``, a `DatasetSpec` written short."""


def as_spec(spec: DatasetSpec | SpecTuple) -> DatasetSpec:
    """A `DatasetSpec` from one, or from ``(seed, target[, shape[, version]])``."""
    return spec if isinstance(spec, DatasetSpec) else DatasetSpec(*spec)



class DatasetManifest(TypedDict):
    """``manifest.json`` of a generated dataset: one entry per session file."""

    generator_version: int
    token_counter: str
    sessions: list[JSONObject]


def generate_dataset(out_dir: str | Path,
                     specs: Iterable[DatasetSpec | SpecTuple] = SHIPPED) -> DatasetManifest:
    """Write one Goose-export JSON per spec plus ``manifest.json``.

    Args:
        out_dir: The folder (created if missing).
        specs: `DatasetSpec` values, or ``(seed, target[, shape[, version]])`` tuples (the
            current version and the ``debugging`` shape by default).

    Entries of an existing manifest for other files are kept, so one seed can be added later.

    Returns:
        The manifest written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    entries: dict[str, JSONObject] = {}
    if manifest_path.is_file():
        for entry in json.loads(manifest_path.read_text(encoding="utf-8")).get("sessions", []):
            entries[entry["file"]] = entry
    for spec in map(as_spec, specs):
        session, _ = generate_session(spec.seed, spec.target_tokens, shape=spec.shape,
                                      version=spec.version)
        session.write_goose_json(out / f"{session.id}.json")
        entry = manifest_entry(session, spec)
        entries[str(entry["file"])] = entry
    version = max((as_int(e.get("version") or GENERATOR_VERSION) for e in entries.values()),
                  default=GENERATOR_VERSION)
    manifest: DatasetManifest = {
        "generator_version": version, "token_counter": "o200k_base (goose)",
        "sessions": sorted(entries.values(),
                           key=lambda e: (as_int(e["target_tokens"]), as_int(e["seed"])))}
    write_atomic(manifest_path, json.dumps(manifest, indent=1) + "\n")
    return manifest
