"""Version-4 generated sessions: the memory probes of repeated compaction.

Version 3 (`workbench.sessions._generate_shapes`) plants facts and records what a summary
should keep. Version 4 writes sessions of the same shapes that a replay compacts many times,
and records three things more in ``meta`` (`MemoryWriter.ground_truth`):

- knowledge updates: the dev-server port changes three times and the batch limit twice, each
  change a planted fact that supersedes the one before (``stale`` / ``superseded_by``), so a
  context can hold the newest value, a stale one, or both;
- ``tasks``: every task the user asked for, with ``asked_at`` and ``done_at`` (the message
  index where the assistant says it is done; None for a task still pending), so a detector can
  tell finished work a summary lists as pending;
- ``abstentions``: questions about things the session never mentions (a password, a port, a
  sign-off, a retention period of names no message contains): "unknown" is the right answer.

The shipped sets are separate: version 4 sessions live in ``datasets/memory/`` with their own
manifest, outside ``dataset:all`` (`workbench.sessions._generate.MEMORY`).
"""

from __future__ import annotations

from workbench._json_types import JSONObject
from workbench.messages import Message
from workbench.sessions import _generate_prose as gp
from workbench.sessions import _generate_text as gt
from workbench.sessions._generate_shapes import MAIN_SHARE, ShapedWriter

__all__ = ["ABSTENTIONS", "UPDATES", "MemoryWriter"]

UPDATES: tuple[tuple[str, float], ...] = (("port", 0.2), ("limit", 0.3), ("port", 0.45),
                                          ("port", 0.65), ("limit", 0.8))
"""Knowledge updates: which value changes, at what share of the target."""
ABSTENTIONS: tuple[tuple[str, str], ...] = (
    ("What is the password of the `{x}` staging database?", "db_{h}"),
    ("Which port does the `{x}` metrics exporter listen on?", "exporter_{h}"),
    ("Who signed off on the `{x}` release?", "release_{h}"),
    ("How many days does the `{x}` bucket keep its objects?", "bucket_{h}"),
)
"""Questions no session answers, each about a name drawn fresh (no message contains it)."""
QUICK_TASK_CHANCE = 0.5
ABSTAIN_COUNT = 3


class MemoryWriter(ShapedWriter):
    """Writes one version-4 session of `shape` (see the module docstring)."""

    def __init__(self, seed: int, target: int, shape: str) -> None:
        super().__init__(seed, target, shape)
        self.tasks: list[JSONObject] = []
        self.abstentions: list[JSONObject] = []

    def quick_task(self) -> None:
        """A task the user asks for and the assistant finishes a few messages later."""
        rng = self.rng
        text = self.fresh(lambda: gp.task(rng))
        i = self.add(Message.user(f"Quick one before we go on: please {text}."))
        self.call(f"Doing it now: {text}.", "shell",
                  {"command": f"make task-{gt.hex_id(rng)}"}, "ok")
        j = self.add(Message.assistant(f"Done: {text}."))
        self.tasks.append({"id": f"k{len(self.tasks) + 1}", "text": text, "asked_at": i,
                           "done_at": j})

    def add_task(self) -> None:
        """A task for later (version 3's pending task), recorded as not done."""
        super().add_task()
        entry = self.pending[-1]
        self.tasks.append({"id": f"k{len(self.tasks) + 1}", "text": entry["text"],
                           "asked_at": entry["message_index"], "done_at": None})

    def abstain(self, count: int) -> None:
        """`count` questions whose answer the session never gives."""
        for n, (question, name) in enumerate(self.rng.sample(ABSTENTIONS, count), 1):
            subject = self.fresh(lambda: name.format(h=gt.hex_id(self.rng)))  # noqa: B023
            self.abstentions.append({"id": f"a{n}", "question": question.format(x=subject),
                                     "subject": subject})

    def ground_truth(self) -> JSONObject:
        """Version 3's keys, plus ``tasks`` and ``abstentions``."""
        return {**super().ground_truth(), "tasks": list(self.tasks),
                "abstentions": list(self.abstentions)}

    def run(self) -> None:
        rng = self.rng
        self.intro()
        main = self.episodes()
        wanted_decisions = min(4, 1 + self.target // 20_000)
        updates = list(UPDATES)
        first = True
        while True:
            # one update at most between two episodes, so no two come back to back
            if updates and self.tokens >= updates[0][1] * self.target:
                self.change_value(updates.pop(0)[0])
            remaining = self.target - self.tokens
            if remaining < 1500 and not first:
                break
            episode = (main[self.shape] if first or rng.random() < MAIN_SHARE[self.shape]
                       else self.debug_episode)
            episode(max(1200, min(remaining - 500, rng.randint(3000, 7000))))
            first = False
            if rng.random() < QUICK_TASK_CHANCE:
                self.quick_task()
            if len(self.decisions) < wanted_decisions and rng.random() < 0.4:
                self.decide()
            if len(self.pending) < 2 and rng.random() < 0.3:
                self.add_task()
        for which, _ in updates:
            self.change_value(which)
        if not self.errors:
            self.debug_episode(1500)
        while sum(1 for t in self.tasks if t["done_at"] is not None) < 2:
            self.quick_task()
        while not self.decisions:
            self.decide()
        while not self.pending:
            self.add_task()
        self.abstain(ABSTAIN_COUNT)
        still = "; ".join(str(t["text"]) for t in self.pending)
        self.add(Message.assistant(
            f"Done for today: the changes are in, the tests pass and the dev config uses port "
            f"{self.port}. I did not modify {self.protected}. Still open: {still}."))
