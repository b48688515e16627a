"""The first generator's writer (dataset version 2, the debugging shape): episodes of reading, testing, editing
and searching, steered toward a share of tokens in tool output (`TOOL_SHARE`), with one
requirement change (`CHANGE_AT`). `workbench.sessions._generate` picks it by version.
"""

from __future__ import annotations

from workbench.messages import Message
from workbench.sessions import _generate_output as go
from workbench.sessions import _generate_text as gt
from workbench.sessions._generate_base import (
    WriterBase,
)

__all__ = ["CHANGE_AT", "EPISODE_FIXED", "TOOL_SHARE", "V2Writer"]

EPISODE_FIXED = 3200  # tokens an episode spends on prose, edits and their fixed-size results
TOOL_SHARE = 0.76  # the share of tokens in tool results that episodes steer toward
CHANGE_AT = 0.45  # the requirement changes once this share of the target is written


class V2Writer(WriterBase):
    """Writes a version 1 or 2 session (see the module docstring)."""

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

    def episode(self, path: str, func: str, budget: int, first: bool) -> None:
        rng = self.rng
        end = self.tokens + budget
        small = budget < 6000
        # what the sized tool outputs may use; small episodes make smaller edits
        budget = max(budget - (EPISODE_FIXED * 3 // 4 if small else EPISODE_FIXED), 800)
        test_path = f"tests/test_{path.rsplit('/', 1)[-1]}"
        others = [gt.module_path(rng, self.package) for _ in range(rng.randint(2, 5))]
        tests = [test_path] + [f"tests/test_{p.rsplit('/', 1)[-1]}" for p in others]
        if first or rng.random() < 0.25:
            self.call("Getting a map of the code first.", "shell",
                      {"command": "find src tests -name '*.py' | xargs wc -l"},
                      self.fit(lambda n: go.tree_listing(rng, self.package,
                                                         [path, test_path, *others], n),
                               int(budget * 0.06), 14))
        self.call(rng.choice([
            f"Searching for `{func}` to see who calls it before I change anything.",
            f"Let me find every caller of `{func}` first: changing what it returns could "
            "break them.",
            f"I'll grep for `{func}` to find its definition, its callers and its tests."]),
            "search", {"pattern": func, "path": "."},
                  self.fit(lambda n: go.search_hits(rng, self.package, [path, *tests, *others],
                                                    func, n), int(budget * 0.05), 22, 3))
        body = self.module(path, [func], int(budget * 0.42))
        self.call(rng.choice([
            f"The definition is in {path}; reading the whole module to see how `{func}` "
            "builds its totals.",
            f"Opening {path}. The callers all pass whole batches, so the problem is likely "
            "inside the loop."]), "read_file", {"path": path}, gt.numbered(body))
        test_body = None
        if rng.random() < 0.6:
            test_body = self.fit(lambda n: gt.test_module(rng, self.package, path, [func], n),
                                 int(budget * 0.11), 75)
            self.call(f"And the existing tests in {test_path}, to see what the fixtures "
                      "contain.", "read_file", {"path": test_path}, gt.numbered(test_body))
        seen = self.fresh(lambda: f"seen_{rng.choice(gt.NOUNS)}_{gt.hex_id(rng)}")
        fixed = gt.guard_seen(body, func, seen)
        i = self.edit(f"`{func}` adds to `totals` without checking for keys counted in an "
                      f"earlier batch. I'll track them in a `{seen}` set; {self.protected} "
                      "stays untouched.", path, body, fixed, small)
        self.fact("identifier", seen, i)
        error = gt.error_message(rng)
        if rng.random() < 0.7:
            command = f"python -m pytest -v {' '.join(sorted(set(tests)))}"
            failing = self.fit(lambda n: go.pytest_failure(rng, self.project, tests, path, func,
                                                           error, n), int(budget * 0.18), 24, 5)
        else:
            command = f"python -m {path[4:-3].replace('/', '.')} --dry-run"
            failing = self.fit(lambda n: go.python_traceback(rng, self.project, path, func,
                                                             error, n), int(budget * 0.18), 34, 5)
        _, j = self.call(rng.choice(["Running the affected tests.",
                                     "Checking the change against the tests.",
                                     "Now the run that reproduced the report."]),
                         "shell", {"command": command}, failing, is_error=True)
        self.fact("error", error, j)
        patch = gt.drop_empty_totals(fixed, func)
        self.files[path] = patch
        # half the errors are quoted back, half live only in the tool result the ladder drops
        cause = (f"The run fails with `{error}`." if rng.random() < 0.5 else
                 f"The run fails with a {error.partition(':')[0]} inside `{func}`.")
        self.edit(f"{cause} The fixture holds entries whose key is missing from the index, so "
                  f"`{func}` must fall back instead of raising, and it should not report zero "
                  "totals.", path, fixed, patch, small)
        regression = f"test_{func}_counts_each_key_once"
        # steer toward TOOL_SHARE: write a test module (prose-side tokens) only when above it
        heavy = self.tool_tokens > TOOL_SHARE * self.tokens
        if not small and heavy and rng.random() < 0.85:
            new_test = f"tests/test_{func}_regression.py"
            content = self.fit(lambda n: gt.test_module(rng, self.package, path, [func], n),
                               int(budget * 0.12), 75)
            content += "\n".join(gt.regression_test(rng, func, regression)[1:]) + "\n"
            self.call(f"Writing {new_test}: `{regression}` plus cases for the missing-key "
                      "fallback.", "write_file", {"path": new_test, "content": content},
                      f"Wrote {len(content.encode())} bytes to {new_test}")
            tests.append(new_test)
        elif test_body is not None and not small:
            lines = test_body.rstrip("\n").splitlines()
            added = "\n".join(lines + gt.regression_test(rng, func, regression)) + "\n"
            self.edit(f"Adding `{regression}` so the double count cannot come back.",
                      test_path, test_body, added)
        else:
            regression = ""
        self.call("Re-running the tests.", "shell",
                  {"command": f"python -m pytest -v {' '.join(sorted(set(tests)))}"},
                  self.fit(lambda n: go.pytest_pass(rng, self.project, tests, n),
                           max(end - self.tokens - 500, 150), 22, 5))
        extra = 1.0 if small else rng.random() * 0.55 if heavy else 0.3 + rng.random() * 0.4
        if extra < 0.3:
            self.call("", "shell", {"command": f"git diff {path}"}, go.git_diff(path, body, patch))
        elif extra < 0.55:
            self.call("", "shell", {"command": "ruff check src tests && mypy src"},
                      go.lint_log(rng, rng.sample([path, *others], rng.randint(1, 3)),
                                  rng.randint(20, 90)))
        elif extra < 0.7:
            self.call("", "shell", {"command": "pip install -e '.[dev]'"},
                      self.fit(lambda n: go.install_log(rng, self.project, n),
                               int(budget * 0.08), 40))
        self.add(Message.assistant(
            f"Fixed `{func}` in {path}: it skips keys already counted (`{seen}`) and falls "
            "back when the index has no entry for a key, so it no longer raises on partial "
            f"fixtures. {test_path} and the neighbouring tests pass"
            + (f"; `{regression}` covers the double count." if regression else ".")))

    def next_request(self) -> tuple[str, str]:
        rng = self.rng
        path = self.fresh(lambda: gt.module_path(rng, self.package))
        func = self.fresh(lambda: gt.ident(rng))
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
        while self.port == old or f"port {self.port}" in "\n".join(self.corpus):
            self.port = rng.randint(20000, 60999)
        i = self.add(Message.user(
            f"Change of plan: ops moved things around, so the dev server must now use port "
            f"{self.port} instead of {old}. Update the config accordingly."))
        self.supersede(self.port_fact, "value", f"port {self.port}", i)
        config = (f'[server]\nhost = "127.0.0.1"\nport = {self.port}\nworkers = '
                  f'{rng.randint(2, 8)}\n\n[database]\nurl = "postgresql://localhost/'
                  f'{self.project}"\npool_size = {rng.randint(5, 20)}\n')
        self.call("Updating config/dev.toml.", "write_file",
                  {"path": "config/dev.toml", "content": config},
                  f"Wrote {len(config.encode())} bytes to config/dev.toml")
        self.call("Restarting the dev server to check it binds the new port.", "shell",
                  {"command": "make dev"},
                  self.fit(lambda n: go.server_log(rng, self.project, self.port, n),
                           max(150, min(1200, self.target // 20)), 30, 3))

    def filler(self, budget: int) -> None:
        rng = self.rng
        path = gt.module_path(rng, self.package)
        body = self.module(path, [gt.ident(rng)], max(budget, 200))
        self.call(f"A last look at {path}, which imports the changed code.",
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
            if remaining < 3200 and not first:
                break
            if not first:
                path, func = self.next_request()
            reserve = 400 if changed else 700 + min(1200, self.target // 20)
            budget = min(remaining - reserve, self.rng.randint(6000, 10000))
            self.episode(path, func, max(budget, 2600), first)
            first = False
        if not changed:
            self.change_requirement()
        if self.target - self.tokens > 300:
            self.filler(int((self.target - self.tokens - 250) * 0.9))
        self.add(Message.assistant(
            f"All done: the fixes are in, the tests pass and the dev config uses port "
            f"{self.port}. I did not modify {self.protected}."))
