"""The pieces a version-3 generated session is written with (`workbench.sessions._generate_shapes`
writes the episodes and the session from them): the ground truth it records (errors, changed
files, decisions, pending tasks) and the narrative pieces (requests, failing and green test
runs, a value the user replaces).
"""


from __future__ import annotations

from workbench._json_types import JSONObject
from workbench.messages import Message
from workbench.sessions import _generate_output as go
from workbench.sessions import _generate_prose as gp
from workbench.sessions import _generate_text as gt
from workbench.sessions._generate_base import WriterBase

__all__ = ["ShapedPieces"]


class ShapedPieces(WriterBase):
    """What a version-3 session is written with: its ground truth and the narrative pieces its
    episodes are made of (`ShapedWriter` writes the episodes and the session)."""

    def __init__(self, seed: int, target: int, shape: str) -> None:
        super().__init__(seed, target)
        self.shape = shape
        self.package = self.project
        self.errors: list[JSONObject] = []
        self.changes: dict[str, JSONObject] = {}
        self.pending: list[JSONObject] = []
        self.decisions: list[JSONObject] = []
        self.topics: set[str] = set()

    # ---- ground truth ------------------------------------------------------------------

    def error(self, text: str, index: int) -> None:
        self.fact("error", text, index)
        self.errors.append({"text": text, "message_index": index})

    def changed(self, path: str, change: str, how: str, index: int) -> None:
        """Record a change; a file has one entry: created wins over later edits, a deletion
        is the last word, and the first two descriptions are kept."""
        entry = self.changes.get(path)
        if entry is None:
            self.changes[path] = {"path": path, "change": change, "how": how,
                                  "message_index": index}
            return
        if change == "deleted":
            entry["change"] = "deleted"
        told = str(entry["how"])
        if how not in told and told.count("; ") < 1:
            entry["how"] = f"{told}; {how}"

    def decide(self) -> None:
        d = gp.decision(self.rng, self.topics)
        i = self.add(Message.assistant(gp.decision_sentence(self.rng, d)))
        fact = self.fact("decision", d.choice, i)
        self.decisions.append({"id": f"d{len(self.decisions) + 1}", "topic": d.topic,
                               "choice": d.choice, "alternative": d.alternative,
                               "reason": d.reason, "message_index": i, "fact": fact.id})

    def add_task(self) -> None:
        text = self.fresh(lambda: gp.task(self.rng))
        i = self.add(Message.user(self.rng.choice([
            f"Not now, but before we close this out we still need to {text}.",
            f"Adding to the list for later: {text}. Don't do it yet.",
            f"One more item for after this fix: {text}.",
        ])))
        fact = self.fact("task", text, i)
        self.pending.append({"id": f"t{len(self.pending) + 1}", "text": text,
                             "message_index": i, "fact": fact.id})

    def ground_truth(self) -> JSONObject:
        """The version-3 meta keys (besides ``planted_facts`` and ``generator``)."""
        return {"shape": self.shape, "errors": list(self.errors),
                "files_changed": list(self.changes.values()),
                "pending_tasks": list(self.pending), "decisions": list(self.decisions)}

    # ---- narrative pieces --------------------------------------------------------------

    def intro(self) -> None:
        rng = self.rng
        self.protected = f"migrations/{rng.randint(1, 99):04d}_backfill_{gt.hex_id(rng)}.sql"
        self.port = rng.randint(20000, 60999)
        self.limit = rng.randint(1000, 9999)
        goal = {"debugging": "chasing bugs in the nightly totals",
                "feature": "adding the features from this sprint's board",
                "refactor": "cleaning up module boundaries before the next release",
                "review": "reviewing and merging the open branches",
                "tool-loop": "hunting a flaky test that keeps failing CI",
                "discussion": "designing the next version of the pipeline"}[self.shape]
        i = self.add(Message.user(
            f"I'm working on `{self.project}`, our internal {rng.choice(gt.NOUNS)} service; "
            f"today we are {goal}.\n\nConstraints:\n"
            f"- never touch {self.protected}: it already ran in production.\n"
            f"- the dev server must use port {self.port}; other ports are taken on the CI box.\n"
            f"- keep every batch at or under batch limit {self.limit} rows.\n"
            "- keep the public function signatures unchanged."))
        self.fact("constraint", f"never touch {self.protected}", i)
        self.port_fact = self.fact("value", f"port {self.port}", i)
        self.limit_fact = self.fact("value", f"batch limit {self.limit}", i)

    def request(self, text: str, path: str | None = None, func: str | None = None) -> int:
        i = self.add(Message.user(text))
        if func:
            self.fact("identifier", func, i)
        if path:
            self.fact("path", path, i)
        return i

    def new_path(self) -> str:
        return self.fresh(lambda: gt.module_path(self.rng, self.package))

    def new_func(self) -> str:
        return self.fresh(lambda: gt.ident(self.rng))

    def failing_run(self, tests: list[str], path: str, func: str, budget: int) -> str:
        rng = self.rng
        error = self.fresh(lambda: gt.error_message(rng))
        if rng.random() < 0.7:
            command = f"python -m pytest -v {' '.join(sorted(set(tests)))}"
            out = self.fit(lambda n: go.pytest_failure(rng, self.project, tests, path, func,
                                                       error, n), budget, 24, 5)
        else:
            command = f"python -m {path[4:-3].replace('/', '.')} --dry-run"
            out = self.fit(lambda n: go.python_traceback(rng, self.project, path, func, error,
                                                         n), budget, 34, 5)
        _, j = self.call(rng.choice(["Running the affected tests.", "Checking the change.",
                                     "Now the run that reproduced the report."]),
                         "shell", {"command": command}, out, is_error=True)
        self.error(error, j)
        return error

    def green_run(self, tests: list[str], budget: int) -> None:
        self.call(self.rng.choice(["Re-running the tests.", "And the tests again."]), "shell",
                  {"command": f"python -m pytest -v {' '.join(sorted(set(tests)))}"},
                  self.fit(lambda n: go.pytest_pass(self.rng, self.project, tests, n),
                           max(budget, 150), 22, 5))

    def _fresh_number(self, old: int, low: int, high: int, corpus: str) -> int:
        """A number in [low, high] other than `old` that the session has not mentioned yet."""
        value = old
        while value == old or str(value) in corpus:
            value = self.rng.randint(low, high)
        return value

    def change_value(self, which: str) -> None:
        rng = self.rng
        corpus = "\n".join(self.corpus)
        if which == "port":
            old, self.port = self.port, self._fresh_number(self.port, 20000, 60999, corpus)
            i = self.add(Message.user(
                f"Change of plan: ops moved things around, so the dev server must now use port "
                f"{self.port} instead of {old}. Update the config accordingly."))
            self.port_fact = self.supersede(self.port_fact, "value", f"port {self.port}", i)
            config = (f'[server]\nhost = "127.0.0.1"\nport = {self.port}\nworkers = '
                      f'{rng.randint(2, 8)}\n')
            how = f"sets the dev server port to {self.port}"
            j, _ = self.call(f"Writing config/dev.toml, which {how}.", "write_file",
                             {"path": "config/dev.toml", "content": config},
                             f"Wrote {len(config.encode())} bytes to config/dev.toml")
            self.changed("config/dev.toml", "created", how, j)
            return
        old, self.limit = self.limit, self._fresh_number(self.limit, 1000, 9999, corpus)
        i = self.add(Message.user(
            f"The DBA says {old} rows per batch still locks too long: use batch limit "
            f"{self.limit} from now on."))
        self.limit_fact = self.supersede(self.limit_fact, "value", f"batch limit {self.limit}", i)
        self.add(Message.assistant(f"Noted: batches stay at or under {self.limit} rows."))
