"""Version-3 generated sessions: six shapes of coding-agent work, with full ground truth.

Version 2 (`workbench.sessions._generate`) writes one shape, a run of bug fixes, and plants
facts only. Version 3 writes sessions of one of `SHAPES` and records, besides the planted facts,
everything a reader of the compacted context should still know (`ShapedWriter.ground_truth`):

- ``errors``: every exact error line a failing tool result printed, with its message index;
- ``files_changed``: one entry per file the agent created, edited or deleted (``path``,
  ``change``, ``how``: what changed, in the words the session uses);
- ``pending_tasks``: what the user asked for later and nobody did (``id``, ``text``);
- ``decisions``: what was decided and why (``id``, ``topic``, ``choice``, ``alternative``,
  ``reason``), stated in one sentence of the session;
- ``planted_facts``: paths, identifiers, constraints, values (two of which the user later
  replaces: ``stale`` / ``superseded_by``), errors, and one ``decision`` and ``task`` fact per
  decision and pending task (the short name each one carries in backticks).

Shapes (the episode each session is mostly made of):

- ``debugging``: find a bug, read the module, fix it, a failing run, fix again, green tests;
- ``feature``: write a new module and its tests, wire it into an existing one;
- ``refactor``: rename a function across callers, move it to a new module, delete the old one;
- ``review``: read a branch's diff, write review comments and decisions, address them;
- ``tool-loop``: hunt a flaky test through many short test runs, greps and log reads;
- ``discussion``: long design notes and plans with little tool output, so the history
  without tool output outgrows an 8k window (Goose's ladder, which drops tool output only,
  cannot save it).

Each non-debugging shape mixes in a debugging episode now and then, as real sessions do.
"""

from __future__ import annotations

from collections.abc import Callable

from workbench.messages import Message
from workbench.sessions import _generate_output as go
from workbench.sessions import _generate_prose as gp
from workbench.sessions import _generate_text as gt
from workbench.sessions._generate_pieces import ShapedPieces

SHAPES: tuple[str, ...] = ("debugging", "feature", "refactor", "review", "tool-loop",
                           "discussion")
MAIN_SHARE = {"debugging": 1.0, "feature": 0.75, "refactor": 0.75, "review": 0.75,
              "tool-loop": 0.8, "discussion": 0.85}
"""How often a shape's own episode is drawn (the rest are debugging episodes)."""
CHANGE_AT = 0.45  # the first requirement change, as a share of the target
SECOND_CHANGE_AT = 0.7


class ShapedWriter(ShapedPieces):
    """Writes one version-3 session of `shape`; `ground_truth()` is what it recorded."""

    # ---- episodes ----------------------------------------------------------------------

    def debug_episode(self, budget: int) -> None:
        rng = self.rng
        path, func = self.new_path(), self.new_func()
        self.request(rng.choice([
            f"`{func}` in {path} double-counts entries when the same key shows up in two "
            "batches. Please find the cause and fix it.",
            f"Support says reports built by `{func}` ({path}) are off by one on month "
            "boundaries. Please investigate and fix.",
            f"Next: `{func}` in {path} drops the last {rng.choice(gt.NOUNS)} when the batch is "
            "a multiple of the limit. Fix that too."]), path, func)
        room = max(budget - 1800, 700)
        test_path = f"tests/test_{path.rsplit('/', 1)[-1]}"
        others = [gt.module_path(rng, self.package) for _ in range(rng.randint(1, 4))]
        tests = [test_path] + [f"tests/test_{p.rsplit('/', 1)[-1]}" for p in others]
        self.call(f"Searching for `{func}` to see its callers first.", "search",
                  {"pattern": func, "path": "."},
                  self.fit(lambda n: go.search_hits(rng, self.package, [path, *tests, *others],
                                                    func, n), int(room * 0.07), 22, 3))
        body = self.module(path, [func], int(room * 0.45))
        self.call(f"Reading {path}.", "read_file", {"path": path}, gt.numbered(body))
        seen = self.fresh(lambda: f"seen_{rng.choice(gt.NOUNS)}_{gt.hex_id(rng)}")
        fixed = gt.guard_seen(body, func, seen)
        how = f"`{func}` skips keys already counted, tracked in a `{seen}` set"
        i = self.edit(f"The loop never remembers which keys it counted. Fix: {how}.", path,
                      body, fixed, budget < 5000)
        self.fact("identifier", seen, i)
        self.changed(path, "edited", how, i)
        error = self.failing_run(tests, path, func, int(room * 0.22))
        patch = gt.drop_empty_totals(fixed, func)
        self.files[path] = patch
        cause = (f"The run fails with `{error}`." if rng.random() < 0.5 else
                 f"The run fails with a {error.partition(':')[0]} inside `{func}`.")
        how2 = f"`{func}` no longer reports zero totals"
        j = self.edit(f"{cause} Second fix: {how2}.", path, fixed, patch, budget < 5000)
        self.changed(path, "edited", how2, j)
        self.green_run(tests, int(room * 0.18))
        self.add(Message.assistant(f"Fixed `{func}` in {path}; the tests pass."))

    def feature_episode(self, budget: int) -> None:
        rng = self.rng
        existing, new, func = self.new_path(), self.new_path(), self.new_func()
        noun, other = rng.choice(gt.NOUNS), rng.choice(gt.NOUNS)
        self.request(f"New feature: add `{func}` in a new module {new} that groups {noun}s "
                     f"by {other}, and call it from {existing}.", new, func)
        room = max(budget - 1600, 700)
        body = self.module(existing, [gt.ident(rng)], int(room * 0.35))
        self.call(f"Reading {existing} to see where the new step fits.", "read_file",
                  {"path": existing}, gt.numbered(body))
        content = self.fit(lambda n: gt.python_module(rng, new, [func], n), int(room * 0.2), 200)
        how = f"new module defining `{func}`, which groups {noun}s by {other}"
        i, _ = self.call(f"Writing {new}: {how}.", "write_file",
                         {"path": new, "content": content},
                         f"Wrote {len(content.encode())} bytes to {new}")
        self.changed(new, "created", how, i)
        module = new[4:-3].replace("/", ".")
        anchor = "from collections import defaultdict"
        wired = body.replace(anchor, f"{anchor}\nfrom {module} import {func}", 1)
        how2 = f"imports `{func}` from {module} and calls it after each batch"
        j = self.edit(f"Wiring it in: {existing} {how2}.", existing, body, wired)
        self.changed(existing, "edited", how2, j)
        test_path = f"tests/test_{new.rsplit('/', 1)[-1]}"
        tests = self.fit(lambda n: gt.test_module(rng, self.package, new, [func], n),
                         int(room * 0.12), 75)
        k, _ = self.call(f"Writing {test_path}: tests for `{func}`.", "write_file",
                         {"path": test_path, "content": tests},
                         f"Wrote {len(tests.encode())} bytes to {test_path}")
        self.changed(test_path, "created", f"tests for `{func}`", k)
        if rng.random() < 0.6:
            error = self.failing_run([test_path], new, func, int(room * 0.15))
            self.add(Message.assistant(f"`{error.partition(':')[0]}`: the grouping forgot "
                                       "entries without a key; handling them now."))
        self.green_run([test_path], int(room * 0.12))
        self.add(Message.assistant(f"`{func}` is in {new}, wired into {existing}, with tests."))

    def refactor_episode(self, budget: int) -> None:
        rng = self.rng
        old_path, new_path, old, new = (self.new_path(), self.new_path(), self.new_func(),
                                        self.new_func())
        self.request(f"Refactor: rename `{old}` to `{new}` everywhere and move it from "
                     f"{old_path} into {new_path}; delete {old_path} afterwards.", old_path, old)
        self.fact("identifier", new, len(self.messages) - 1)
        room = max(budget - 2200, 700)
        callers = [self.new_path() for _ in range(rng.randint(2, 4))]
        self.call(f"Finding every use of `{old}`.", "search", {"pattern": old, "path": "."},
                  self.fit(lambda n: go.search_hits(rng, self.package, [old_path, *callers],
                                                    old, n), int(room * 0.08), 22, 3))
        body = self.module(old_path, [old], int(room * 0.4))
        self.call(f"Reading {old_path}.", "read_file", {"path": old_path}, gt.numbered(body))
        moved = body.replace(old, new)
        how = f"holds `{new}`, moved here from {old_path}"
        i, _ = self.call(f"Creating {new_path}, which {how}.", "write_file",
                         {"path": new_path, "content": moved},
                         f"Wrote {len(moved.encode())} bytes to {new_path}")
        self.changed(new_path, "created", how, i)
        old_mod, new_mod = (p[4:-3].replace("/", ".") for p in (old_path, new_path))
        anchor = "from collections import defaultdict"
        for caller in callers[:-1]:
            def build(n: int, path: str = caller) -> str:
                return gt.python_module(rng, path, [gt.ident(rng)], n)

            text = self.fit(build, int(room * 0.04), 200)
            before = text.replace(anchor, f"{anchor}\nfrom {old_mod} import {old}", 1)
            after = text.replace(anchor, f"{anchor}\nfrom {new_mod} import {new}", 1)
            how2 = f"imports `{new}` from {new_mod} instead of `{old}`"
            j = self.edit(f"{caller} {how2}.", caller, before, after, True)
            self.changed(caller, "edited", how2, j)
        gone = f"removed because `{new}` now lives in {new_path}"
        j, _ = self.call(f"Deleting {old_path}, {gone}.", "shell",
                         {"command": f"git rm {old_path}"}, f"rm '{old_path}'")
        self.changed(old_path, "deleted", gone, j)
        error = f"ImportError: cannot import name '{old}' from '{old_mod}'"
        log = self.fit(lambda n: go.python_traceback(rng, self.project, callers[-1], old, error,
                                                     n), int(room * 0.15), 34, 5)
        _, k = self.call("Running the import check.", "shell",
                         {"command": f"python -m {callers[-1][4:-3].replace('/', '.')}"},
                         log, is_error=True)
        self.error(error, k)
        text = self.fit(lambda n: gt.python_module(rng, callers[-1], [gt.ident(rng)], n),
                        int(room * 0.04), 200)
        how3 = f"imports `{new}` from {new_mod}; it was the caller the search missed"
        m = self.edit(f"{callers[-1]} still imported the old name: it now {how3}.", callers[-1],
                      text.replace(anchor, f"{anchor}\nfrom {old_mod} import {old}", 1),
                      text.replace(anchor, f"{anchor}\nfrom {new_mod} import {new}", 1), True)
        self.changed(callers[-1], "edited", how3, m)
        self.green_run([f"tests/test_{p.rsplit('/', 1)[-1]}" for p in [new_path, *callers]],
                       int(room * 0.15))
        self.add(Message.assistant(f"`{old}` is now `{new}` in {new_path}; {old_path} is gone."))

    def review_episode(self, budget: int) -> None:
        rng = self.rng
        branch = self.fresh(lambda: f"feature/{rng.choice(gt.NOUNS)}-{gt.hex_id(rng)}")
        i = self.request(f"Please review the branch `{branch}` before I merge it.")
        self.fact("identifier", branch, i)
        room = max(budget - 2400, 700)
        path = self.new_path()
        body = self.module(path, [gt.ident(rng)], int(room * 0.5))
        self.call("Reading the branch's diff.", "shell",
                  {"command": f"git diff main...{branch}"}, go.git_diff(path, "", body))
        comments = gp.review_comments(rng, [path], rng.randint(4, 9))
        self.add(Message.assistant(f"Review of `{branch}`:\n{comments}\n\n"
                                   + gp.paragraph(rng, rng.randint(2, 5))))
        self.decide()
        self.add(Message.user("Agreed. Fix comments 1 and 2 on the branch; the rest can wait."))
        func = next(line.split("(")[0][4:] for line in body.splitlines()
                    if line.startswith("def ")) if "\ndef " in body else None
        if func:
            after = gt.drop_empty_totals(body, func) if "return dict(totals)" in body else None
            if after and after != body:
                how = f"`{func}` no longer returns zero totals, as review comment 1 asked"
                j = self.edit(f"Comment 1: {how}.", path, body, after)
                self.changed(path, "edited", how, j)
        self.call("", "shell", {"command": "ruff check src tests && mypy src"},
                  go.lint_log(rng, [path], rng.randint(20, 90)))
        self.green_run([f"tests/test_{path.rsplit('/', 1)[-1]}"], int(room * 0.2))

    def loop_episode(self, budget: int) -> None:
        rng = self.rng
        path, func = self.new_path(), self.new_func()
        test_path = f"tests/test_{path.rsplit('/', 1)[-1]}"
        self.request(f"`test_{func}` in {test_path} fails about one run in five on CI. Find "
                     f"out why; the code is `{func}` in {path}.", path, func)
        rounds = rng.randint(6, 12)
        each = max(int((budget - 400 * rounds) / rounds), 150)
        failed = False
        for n in range(rounds):
            step = rng.random()
            if step < 0.5 or n == rounds - 1:
                if not failed and (n >= 2 and rng.random() < 0.5 or n == rounds - 2):
                    self.failing_run([test_path], path, func, each)
                    failed = True
                else:
                    self.call(f"Run {n + 1}: the test alone, {rng.randint(10, 50)} times.",
                              "shell", {"command": f"python -m pytest -v {test_path} -k "
                                        f"test_{func} --count={rng.randint(10, 50)}"},
                              self.fit(lambda k: go.pytest_pass(rng, self.project, [test_path],
                                                                k), each, 22, 5))
            elif step < 0.75:
                self.call("Checking who else touches its state.", "search",
                          {"pattern": func, "path": "."},
                          self.fit(lambda k: go.search_hits(rng, self.package, [path, test_path],
                                                            func, k), each, 22, 3))
            else:
                self.call("The worker log from the last CI run.", "shell",
                          {"command": f"tail -n 400 logs/ci-{gt.hex_id(rng)}.log"},
                          self.fit(lambda k: go.server_log(rng, self.project, self.port, k),
                                   each, 30, 3))
        body = self.module(path, [func], max(300, min(each, 1500)))
        seen = self.fresh(lambda: f"seen_{rng.choice(gt.NOUNS)}_{gt.hex_id(rng)}")
        how = f"`{func}` keeps a fresh `{seen}` set per call instead of module state"
        i = self.edit(f"Found it: state leaked between runs. Fix: {how}.", path, body,
                      gt.guard_seen(body, func, seen), True)
        self.fact("identifier", seen, i)
        self.changed(path, "edited", how, i)
        self.green_run([test_path], min(each, 800))

    def discussion_episode(self, budget: int) -> None:
        rng = self.rng
        topic = rng.choice(gt.NOUNS)
        note = max(2, int(budget * 0.36) // 110)
        self.add(Message.user(f"Design question about the {topic} pipeline. Here is what I "
                              f"see:\n\n{gp.design_note(rng, note)}\n\nWhat would you do?"))
        if rng.random() < 0.4:
            path = self.new_path()
            body = self.module(path, [gt.ident(rng)], int(budget * 0.15))
            self.call(f"Reading {path} first, since the {topic} logic lives there.",
                      "read_file", {"path": path}, gt.numbered(body))
        self.add(Message.assistant(f"My plan for the {topic} pipeline:\n\n"
                                   + gp.design_note(rng, max(2, int(budget * 0.36) // 110))))
        self.decide()
        self.add(Message.user(gp.paragraph(rng, rng.randint(2, 6))))

    # ---- the session -------------------------------------------------------------------

    def episodes(self) -> dict[str, Callable[[int], None]]:
        """Each shape's own episode writer."""
        return {"debugging": self.debug_episode, "feature": self.feature_episode,
                "refactor": self.refactor_episode, "review": self.review_episode,
                "tool-loop": self.loop_episode, "discussion": self.discussion_episode}

    def run(self) -> None:
        rng = self.rng
        self.intro()
        main = self.episodes()
        wanted_decisions = min(4, 1 + self.target // 40_000)
        wanted_tasks = min(3, 1 + self.target // 30_000)
        changes = ["port", "limit"]
        first = True
        while True:
            if changes and self.tokens >= (CHANGE_AT if len(changes) == 2 else
                                           SECOND_CHANGE_AT) * self.target:
                self.change_value(changes.pop(0))
                continue
            remaining = self.target - self.tokens
            if remaining < 1500 and not first:
                break
            episode = (main[self.shape] if first or rng.random() < MAIN_SHARE[self.shape]
                       else self.debug_episode)
            episode(max(1200, min(remaining - 500, rng.randint(3500, 9000))))
            first = False
            if len(self.decisions) < wanted_decisions and rng.random() < 0.4:
                self.decide()
            if len(self.pending) < wanted_tasks and rng.random() < 0.4:
                self.add_task()
        for which in changes:
            self.change_value(which)
        if not self.errors:  # every session quotes at least one exact error
            self.debug_episode(1500)
        while len(self.decisions) < 1:
            self.decide()
        while len(self.pending) < wanted_tasks:
            self.add_task()
        still = "; ".join(str(t["text"]) for t in self.pending)
        self.add(Message.assistant(
            f"Done for today: the changes are in, the tests pass and the dev config uses port "
            f"{self.port}. I did not modify {self.protected}. Still open: {still}."))
