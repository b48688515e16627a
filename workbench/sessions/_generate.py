"""Generated coding-agent sessions with planted facts: ground truth for "what did the summary forget".

`generate_session(seed, target_tokens)` writes a realistic session (user requests, assistant
prose, ``read_file`` / ``write_file`` / ``shell`` / ``search`` calls, failing tests with Python
tracebacks, fixes, a requirement changed mid-session) and returns the facts planted in it:
file paths, error strings quoted in failing tool results, identifiers, user constraints, and a
value that is later replaced (the old fact is then ``stale``). The same seed always gives the
same bytes: one `random.Random(seed)`, no clock, fixed ``created`` times.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from workbench.messages import Message
from workbench.sessions import _generate_text as gt
from workbench.sessions._session import Session
from workbench.tokens import default_estimator

GENERATOR_VERSION = 1
EPOCH = 1_735_689_600  # 2025-01-01T00:00:00Z; created times are offsets from it
CHANGE_AT = 0.45  # the requirement changes once this share of the target is written
SHIPPED: list[tuple[int, int]] = [(1, 5_000), (2, 12_000), (3, 25_000), (4, 50_000),
                                  (5, 90_000), (6, 150_000)]


@dataclass
class PlantedFact:
    """A fact planted in a generated session.

    Attributes:
        id: ``f01``, ``f02``...
        kind: ``path``, ``error``, ``identifier``, ``constraint`` or ``value``.
        text: The exact string planted; it occurs in the message at `message_index`.
        message_index: Index in ``session.messages`` where it first appears.
        stale: True when a later message replaced it (see `superseded_by`).
        superseded_by: The id of the fact that replaced it.
    """

    id: str
    kind: str
    text: str
    message_index: int
    stale: bool = False
    superseded_by: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def dataset_name(seed: int, target_tokens: int) -> str:
    """The shipped file stem for a seed and size: ``gen-005k-s1``."""
    return f"gen-{round(target_tokens / 1000):03d}k-s{seed}"


class _Writer:
    def __init__(self, seed: int, target: int) -> None:
        self.rng = random.Random(seed)
        self.seed, self.target = seed, target
        self.est = default_estimator()
        self.messages: list[Message] = []
        self.facts: list[PlantedFact] = []
        self.tokens = 0
        self.clock = EPOCH + self.rng.randint(0, 300 * 86400)
        self.project = gt.project_name(self.rng)
        self.files: dict[str, str] = {}

    # ---- primitives --------------------------------------------------------------------

    def add(self, msg: Message) -> int:
        self.clock += self.rng.randint(2, 75)
        msg.created = self.clock
        msg.id = f"msg-s{self.seed}-{len(self.messages):05d}"
        self.messages.append(msg)
        self.tokens += self.est.count_chat_tokens("", [msg])
        return len(self.messages) - 1

    def fact(self, kind: str, text: str, index: int) -> PlantedFact:
        assert text in message_text(self.messages[index]), (text, index)
        f = PlantedFact(f"f{len(self.facts) + 1:02d}", kind, text, index)
        self.facts.append(f)
        return f

    def call(self, say: str, name: str, args: dict[str, Any], result: str,
             is_error: bool = False) -> tuple[int, int]:
        call_id = f"call_{gt.hex_id(self.rng, 12)}"
        ask = Message.assistant(say) if say else Message(role="assistant")
        first = self.add(ask.with_tool_request(call_id, name, args))
        second = self.add(Message(role="user").with_tool_response(call_id, result,
                                                                 is_error=is_error))
        return first, second

    def module(self, path: str, names: list[str], budget: int) -> str:
        size = max(2, budget // 230)
        text = gt.python_module(self.rng, path, names, size)
        tokens = self.est.count_text_tokens(text)
        if tokens > budget and size > 2:
            size = max(2, int(size * budget / tokens))
            text = gt.python_module(self.rng, path, names, size)
        self.files[path] = text
        return text

    # ---- narrative ------------------------------------------------------------------------

    def intro(self) -> None:
        rng = self.rng
        self.package = self.project
        self.protected = f"migrations/{rng.randint(1, 99):04d}_backfill_{gt.hex_id(rng)}.sql"
        self.port = rng.randint(20000, 60999)
        self.main_path = gt.module_path(rng, self.package)
        self.main_func = gt.ident(rng)
        text = (
            f"I'm working on `{self.project}`, our internal {rng.choice(gt.NOUNS)} service. "
            f"The function `{self.main_func}` in {self.main_path} double-counts entries when "
            f"the same {rng.choice(gt.NOUNS)} shows up in two batches, and the nightly job "
            "reports inflated totals. Please find the cause, fix it and make sure the test "
            "suite passes.\n\nConstraints:\n"
            f"- never touch {self.protected}: it already ran in production.\n"
            f"- the dev server must use port {self.port}; other ports are taken on the CI box.\n"
            "- keep the public function signatures unchanged.")
        i = self.add(Message.user(text))
        self.fact("constraint", f"never touch {self.protected}", i)
        self.port_fact = self.fact("value", f"port {self.port}", i)
        self.fact("identifier", self.main_func, i)
        self.fact("path", self.main_path, i)

    def episode(self, path: str, func: str, budget: int) -> None:
        rng = self.rng
        others = [gt.module_path(rng, self.package) for _ in range(rng.randint(1, 3))]
        self.call(f"Let me find where `{func}` is called before changing it.", "search",
                  {"pattern": func, "path": "src/"}, gt.search_hits(rng, [path, *others], func))
        body = self.module(path, [func], int(budget * 0.26))
        self.call(f"Reading {path}.", "read_file", {"path": path}, gt.numbered(body))
        fixed = gt.guard_seen(body, func)
        self.call(
            f"`{func}` accumulates into `totals` without checking whether the key was already "
            f"counted in an earlier batch. I'll track seen keys and leave {self.protected} "
            "alone as you asked.", "write_file", {"path": path, "content": fixed},
            f"Wrote {len(fixed.encode())} bytes to {path}")
        error = gt.error_message(rng)
        test_path = f"tests/test_{path.rsplit('/', 1)[-1]}"
        failing = (gt.pytest_failure(rng, self.project, test_path, path, func, error,
                                     rng.randint(5, 40)) if rng.random() < 0.7 else
                   gt.python_traceback(rng, self.project, path, func, error))
        command = (f"python -m pytest -q {test_path}" if failing.startswith("=") else
                   f"python -m {path[4:-3].replace('/', '.')} --dry-run")
        _, j = self.call("Running the tests now.", "shell", {"command": command},
                         failing, is_error=True)
        self.fact("error", error, j)
        patch = gt.drop_empty_totals(fixed, func)
        self.files[path] = patch
        self.call(f"The failure is `{error}`. The fixture hands `{func}` entries whose key is "
                  "missing from the index, so the lookup must fall back instead of raising. "
                  "Adjusting the guard.", "write_file", {"path": path, "content": patch},
                  f"Wrote {len(patch.encode())} bytes to {path}")
        self.call("", "shell", {"command": f"python -m pytest -q {test_path}"},
                  gt.pytest_pass(rng, self.project, rng.randint(6, 41)))
        self.add(Message.assistant(
            f"Fixed: `{func}` now skips keys it has already counted and tolerates missing "
            f"index entries; {test_path} passes."))

    def next_request(self) -> tuple[str, str]:
        rng = self.rng
        path, func = gt.module_path(rng, self.package), gt.ident(rng)
        i = self.add(Message.user(rng.choice([
            f"Thanks. Next: `{func}` in {path} has the same batching problem, can you apply the "
            "same treatment there?",
            f"Good. Now look at {path}: `{func}` drops the last {rng.choice(gt.NOUNS)} when the "
            "batch size is a multiple of the limit. Fix that too.",
            f"Support says reports built by `{func}` ({path}) are off by one on month "
            "boundaries. Please investigate and fix.",
        ])))
        self.fact("identifier", func, i)
        self.fact("path", path, i)
        return path, func

    def change_requirement(self) -> None:
        rng = self.rng
        old = self.port
        self.port = rng.randint(20000, 60999)
        while self.port == old:
            self.port = rng.randint(20000, 60999)
        i = self.add(Message.user(
            f"Change of plan: ops moved things around, so the dev server must now use port "
            f"{self.port} instead of {old}. Update the config accordingly."))
        new = self.fact("value", f"port {self.port}", i)
        self.port_fact.stale, self.port_fact.superseded_by = True, new.id
        config = (f'[server]\nhost = "127.0.0.1"\nport = {self.port}\nworkers = '
                  f'{rng.randint(2, 8)}\n\n[database]\nurl = "postgresql://localhost/'
                  f'{self.project}"\npool_size = {rng.randint(5, 20)}\n')
        self.call(f"Updating config/dev.toml to port {self.port}.", "write_file",
                  {"path": "config/dev.toml", "content": config},
                  f"Wrote {len(config.encode())} bytes to config/dev.toml")

    def filler(self, budget: int) -> None:
        rng = self.rng
        path = gt.module_path(rng, self.package)
        body = self.module(path, [gt.ident(rng)], max(budget, 200))
        self.call(f"Before wrapping up, a last look at {path}, which imports the code I "
                  "changed, to be sure nothing else depends on the old behaviour.",
                  "read_file", {"path": path}, gt.numbered(body))

    def run(self) -> None:
        self.intro()
        path, func = self.main_path, self.main_func
        first, changed = True, False
        while True:
            if not changed and self.tokens >= CHANGE_AT * self.target:
                self.change_requirement()
                changed = True
                continue
            remaining = self.target - self.tokens
            if remaining < 2600 and not first:
                break
            if not first:
                path, func = self.next_request()
            first = False
            budget = min(remaining - 700, self.rng.randint(3000, 8000))
            self.episode(path, func, max(budget, 1500))
        if not changed:
            self.change_requirement()
        if self.target - self.tokens > 400:
            self.filler(int((self.target - self.tokens - 250) * 0.9))
        self.add(Message.assistant(
            f"All done: the fixes are in, the tests pass and the dev config uses port "
            f"{self.port}. I did not modify {self.protected}."))


def message_text(msg: Message) -> str:
    """Every string a message carries: text, tool-call arguments (JSON) and tool results."""
    parts = [msg.concat_text()]
    parts += [json.dumps(r.arguments, ensure_ascii=False) for r in msg.tool_requests()]
    parts += [str(v) for r in msg.tool_requests() for v in (r.arguments or {}).values()]
    parts += [r.text() for r in msg.tool_responses()]
    return "\n".join(parts)


def generate_session(seed: int, target_tokens: int, *,
                     name: str | None = None) -> tuple[Session, list[PlantedFact]]:
    """Generate a coding-agent session of about `target_tokens` (o200k) with planted facts.

    Args:
        seed: Fixes every byte of the result.
        target_tokens: The size to aim for (the result lands within a few percent).
        name: The session id; defaults to `dataset_name`.

    Returns:
        The session (``meta["planted_facts"]`` and ``meta["generator"]`` set) and the facts.
    """
    writer = _Writer(seed, target_tokens)
    writer.run()
    sid = name or dataset_name(seed, target_tokens)
    meta = {
        "generator": {"seed": seed, "target_tokens": target_tokens,
                      "version": GENERATOR_VERSION},
        "planted_facts": [f.to_dict() for f in writer.facts],
        "project": writer.project,
    }
    session = Session(id=sid, format="generated", path=f"datasets/{sid}.json",
                      messages=writer.messages, meta=meta)
    return session, writer.facts


def generate_dataset(out_dir: str | Path,
                     specs: Iterable[tuple[int, int]] = SHIPPED) -> dict[str, Any]:
    """Write one Goose-export JSON per ``(seed, target_tokens)`` plus ``manifest.json``.

    Entries of an existing manifest for other files are kept, so one seed can be added later.

    Returns:
        The manifest written.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    manifest_path = out / "manifest.json"
    entries: dict[str, dict[str, Any]] = {}
    if manifest_path.is_file():
        for entry in json.loads(manifest_path.read_text(encoding="utf-8")).get("sessions", []):
            entries[entry["file"]] = entry
    est = default_estimator()
    for seed, target in specs:
        session, facts = generate_session(seed, target)
        file = f"{session.id}.json"
        session.write_goose_json(out / file)
        entries[file] = {
            "file": file, "name": session.id, "format": "goose-json",
            "tokens": est.count_context_tokens(session.messages),
            "messages": len(session.messages),
            "tool_calls": sum(len(m.tool_requests()) for m in session.messages),
            "planted_facts": len(facts), "seed": seed, "target_tokens": target,
        }
    manifest = {"generator_version": GENERATOR_VERSION, "token_counter": "o200k_base (goose)",
                "sessions": sorted(entries.values(), key=lambda e: (e["target_tokens"], e["seed"]))}
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return manifest
