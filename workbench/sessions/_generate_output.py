"""Tool-output builders for the session generator: test logs, grep listings, trees, builds.

Real coding-agent sessions are dominated by what the tools print, so these builders produce
long, realistic output whose length the caller chooses (a line or item count). Every builder
draws only from the `random.Random` it is given, so a seed fixes every byte.
"""

from __future__ import annotations

import difflib
import random

from workbench.sessions._generate_text import ADJECTIVES, NOUNS, VERBS, hex_id

PYTEST_HEADER = "platform linux -- Python 3.11.9, pytest-8.2.1, pluggy-1.5.0"
PLUGINS = "plugins: anyio-4.4.0, cov-5.0.0, asyncio-0.23.7, xdist-3.6.1"
PACKAGES = ["attrs", "click", "pydantic", "pydantic-core", "sqlalchemy", "httpx", "anyio",
            "structlog", "orjson", "tenacity", "python-dateutil", "psycopg", "redis", "rich",
            "typing-extensions", "idna", "certifi", "sniffio", "h11", "greenlet", "pluggy",
            "packaging", "iniconfig", "coverage", "freezegun", "hypothesis", "respx"]


def test_name(rng: random.Random) -> str:
    """A pytest test function name (``test_prunes_stale_lease``)."""
    return (f"test_{rng.choice(VERBS)}{rng.choice(['s', 'es', ''])}_{rng.choice(ADJECTIVES)}_"
            f"{rng.choice(NOUNS)}")


def test_ids(rng: random.Random, test_files: list[str], count: int) -> list[str]:
    """`count` pytest node ids spread over `test_files`, some parametrized."""
    ids = []
    for _ in range(count):
        node = f"{rng.choice(test_files)}::{test_name(rng)}"
        if rng.random() < 0.3:
            node += f"[{rng.choice(NOUNS)}-{rng.randint(1, 500)}]"
        ids.append(node)
    return sorted(ids)


def _progress(ids: list[str], failed: str | None) -> list[str]:
    lines = []
    total = len(ids)
    for n, node in enumerate(ids, 1):
        status = "FAILED" if node == failed else "PASSED"
        lines.append(f"{node} {status}".ljust(78) + f"[{100 * n // total:>3}%]")
    return lines


def _session_head(project: str, count: int) -> list[str]:
    rule = "=" * 30
    return [f"{rule} test session starts {rule}", PYTEST_HEADER,
            "cachedir: .pytest_cache", f"rootdir: /home/dev/{project}",
            "configfile: pyproject.toml", PLUGINS, "asyncio: mode=Mode.AUTO",
            f"collecting ... collected {count} items", ""]


def _source_lines(rng: random.Random, func: str) -> list[str]:
    arg, other = rng.choice(NOUNS), rng.choice(NOUNS)
    return ["    totals: dict[str, int] = defaultdict(int)",
            f"    index = load_index({other}_path)",
            f"    for item in {arg}s[:limit]:",
            f'        key = item.get("{other}_id")',
            "        if key is None:",
            "            continue",
            "        ref = index[key]",
            f'        totals[ref] += int(item.get("{rng.choice(NOUNS)}", 0))']


def pytest_failure(rng: random.Random, project: str, test_files: list[str], src_path: str,
                   func: str, error: str, passed: int) -> str:
    """A verbose pytest run: `passed` PASSED lines, one failure ending in `error`, the log.

    Args:
        rng: The generator's random source.
        project: Project folder name (``/home/dev/<project>``).
        test_files: Test modules the node ids are spread over; the first holds the failure.
        src_path: The source file the traceback ends in.
        func: The function under test.
        error: The exception line (``Type: message``), quoted verbatim twice.
        passed: How many tests pass.
    """
    failing = f"{test_files[0]}::test_{func}"
    ids = test_ids(rng, test_files, passed)
    ids.insert(rng.randint(0, len(ids)), failing)
    etype, _, emsg = error.partition(": ")
    line_src, line_test = rng.randint(20, 140), rng.randint(10, 90)
    fixture = f"{rng.choice(NOUNS)}_{rng.randint(1, 9)}.json"
    lines = _session_head(project, len(ids)) + _progress(ids, failing) + [
        "", f"{'=' * 35} FAILURES {'=' * 35}", f"{'_' * 28} test_{func} {'_' * 28}", "",
        f"{rng.choice(NOUNS)}_store = <{project}.store.MemoryStore object at "
        f"0x7f{hex_id(rng, 10)}>",
        "", f"    def test_{func}({rng.choice(NOUNS)}_store):",
        f'        payload = load_fixture("{fixture}")',
        f"        {rng.choice(NOUNS)}_store.seed(payload[\"index\"])",
        f">       result = {func}(payload[\"items\"], limit={rng.choice([10, 50, 100])})", "",
        f"{test_files[0]}:{line_test}: ", "_ " * 39, "",
        f"{rng.choice(NOUNS)}s = [{{'{rng.choice(NOUNS)}_id': '{hex_id(rng, 8)}', "
        f"'amount': {rng.randint(1, 999)}}}, ...]", "",
        f"    def {func}(...):"]
    lines += _source_lines(rng, func)
    lines += [f">       raise {etype}({emsg!r})" if etype != "KeyError"
              else f">       return index[{emsg}]", f"E       {error}", "",
              f"{src_path}:{line_src}: {etype}", "-" * 30 + " Captured log call " + "-" * 30]
    for _ in range(rng.randint(3, 8)):
        lines.append(f"DEBUG    {project}.{rng.choice(NOUNS)}:{rng.choice(NOUNS)}.py:"
                     f"{rng.randint(10, 300)} {rng.choice(VERBS)} {rng.choice(NOUNS)} "
                     f"{hex_id(rng, 8)} ({rng.randint(1, 90)} entries)")
    rule = "=" * 30
    lines += ["", f"{rule} short test summary info {rule}",
              f"FAILED {failing} - {error}",
              f"{'=' * 22} 1 failed, {passed} passed in {rng.randint(80, 900) / 100:.2f}s "
              f"{'=' * 22}"]
    return "\n".join(lines)


def pytest_pass(rng: random.Random, project: str, test_files: list[str], count: int) -> str:
    """A green verbose pytest run of `count` tests."""
    ids = test_ids(rng, test_files, count)
    rule = "=" * 30
    return "\n".join(_session_head(project, count) + _progress(ids, None) + [
        "", f"{rule} {count} passed in {rng.randint(80, 900) / 100:.2f}s {rule}"])


def python_traceback(rng: random.Random, project: str, src_path: str, func: str,
                     error: str, log_lines: int) -> str:
    """A ``python -m`` run: `log_lines` of logging output, then a traceback ending in `error`."""
    mod = src_path[4:-3].replace("/", ".")
    lines = []
    second, day = rng.randint(0, 3000), rng.randint(1, 28)
    for _ in range(log_lines):
        second += rng.randint(0, 4)
        level = rng.choice(["INFO", "INFO", "INFO", "DEBUG", "WARNING"])
        lines.append(f"2025-03-{day:02d} 02:{second // 60 % 60:02d}:"
                     f"{second % 60:02d},{rng.randint(0, 999):03d} {level:<7} {mod}: "
                     f"{rng.choice(VERBS)} {rng.choice(NOUNS)} batch {rng.randint(1, 400)} "
                     f"({rng.randint(1, 5000)} rows, {rng.randint(1, 900)} ms)")
    lines += [
        "Traceback (most recent call last):",
        '  File "<frozen runpy>", line 198, in _run_module_as_main',
        '  File "<frozen runpy>", line 88, in _run_code',
        f'  File "/home/dev/{project}/{src_path}", line {rng.randint(150, 260)}, in <module>',
        "    main()",
        f'  File "/home/dev/{project}/{src_path}", line {rng.randint(100, 149)}, in main',
        f"    report = {func}(records)",
        f'  File "/home/dev/{project}/{src_path}", line {rng.randint(20, 99)}, in {func}',
        "    totals[key] += int(item[field])",
        error,
        f"(exit status 1; module {mod})"]
    return "\n".join(lines)


def search_hits(rng: random.Random, package: str, paths: list[str], needle: str,
                count: int) -> str:
    """``grep -rn`` output: the definition of `needle`, its imports and `count` call sites."""
    hits = [f"{paths[0]}:{rng.randint(20, 200)}:def {needle}("]
    shapes = [f"    result = {needle}(rows, limit=50)",
              f"from {package}.{{mod}} import {needle}",
              f"        totals.update({needle}(batch, limit=limit))",
              f"    assert {needle}([]) == {{\"skipped\": 0}}",
              f"    # {needle} runs once per {{noun}} batch",
              f"            merged = {needle}(chunk, limit=self.limit)",
              f"    return {needle}([r for r in records if r.get(\"{{noun}}_id\")])"]
    for _ in range(count):
        path = rng.choice(paths)
        mod = path.rsplit("/", 1)[-1][:-3]
        shape = rng.choice(shapes).replace("{mod}", mod).replace("{noun}", rng.choice(NOUNS))
        hits.append(f"{path}:{rng.randint(5, 400)}:{shape}")
    return "\n".join(hits)


def tree_listing(rng: random.Random, package: str, known: list[str], count: int) -> str:
    """``find src tests -name '*.py' | xargs wc -l`` style listing with `known` among them."""
    names = set(known)
    while len(names) < count + len(known):
        noun = rng.choice(NOUNS)
        names.add(rng.choice([f"src/{package}/{noun}_{hex_id(rng)}.py",
                              f"src/{package}/{noun}/__init__.py",
                              f"src/{package}/{noun}/{rng.choice(VERBS)}.py",
                              f"tests/test_{noun}_{hex_id(rng)}.py"]))
    rows = [(rng.randint(8, 900), name) for name in sorted(names)]
    lines = [f"{n:>6} {name}" for n, name in rows]
    lines.append(f"{sum(n for n, _ in rows):>6} total")
    return "\n".join(lines)


def install_log(rng: random.Random, project: str, count: int) -> str:
    """``pip install -e '.[dev]'`` output with `count` requirement lines."""
    lines = [f"Obtaining file:///home/dev/{project}",
             "  Installing build dependencies ... done",
             "  Checking if build backend supports build_editable ... done",
             "  Getting requirements to build editable ... done",
             "  Preparing editable metadata (pyproject.toml) ... done"]
    for _ in range(count):
        pkg = rng.choice(PACKAGES)
        version = f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 12)}"
        lines.append(f"Requirement already satisfied: {pkg}>={version} in "
                     f"./.venv/lib/python3.11/site-packages (from {project}==0.{rng.randint(1, 9)}"
                     f".0) ({version})")
    lines += [f"Building wheels for collected packages: {project}",
              f"  Building editable for {project} (pyproject.toml) ... done",
              f"  Created wheel for {project}: filename={project}-0.4.0-0.editable-py3-none-any"
              f".whl size={rng.randint(3000, 9000)} sha256={hex_id(rng, 64)}",
              f"Successfully built {project}", f"Successfully installed {project}-0.4.0"]
    return "\n".join(lines)


def lint_log(rng: random.Random, paths: list[str], sources: int) -> str:
    """``ruff check`` findings on `paths` then a clean ``mypy`` run over `sources` files."""
    codes = [("F401", "`{lib}` imported but unused"), ("E501", "Line too long (104 > 100)"),
             ("B006", "Do not use mutable data structures for argument defaults"),
             ("SIM108", "Use ternary operator instead of `if`-`else`-block"),
             ("UP006", "Use `list` instead of `List` for type annotation")]
    lines = []
    for path in paths:
        code, text = rng.choice(codes)
        lines.append(f"{path}:{rng.randint(3, 300)}:{rng.randint(1, 60)}: {code} "
                     + text.replace("{lib}", rng.choice(["json", "itertools", "hashlib"])))
    lines += [f"Found {len(paths)} errors.",
              f"[*] {sum(1 for p in paths if p)} fixable with the `--fix` option.",
              f"Success: no issues found in {sources} source files"]
    return "\n".join(lines)


def git_diff(path: str, before: str, after: str) -> str:
    """``git diff`` of one file."""
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), f"a/{path}",
                                f"b/{path}", n=3, lineterm="")
    return f"diff --git a/{path} b/{path}\n" + "\n".join(diff)


def server_log(rng: random.Random, project: str, port: int, requests: int) -> str:
    """A dev server starting on `port` and serving `requests` requests."""
    lines = [f"INFO:     Will watch for changes in these directories: ['/home/dev/{project}/src']",
             f"INFO:     Uvicorn running on http://127.0.0.1:{port} (Press CTRL+C to quit)",
             f"INFO:     Started reloader process [{rng.randint(1000, 60000)}] using WatchFiles",
             f"INFO:     Started server process [{rng.randint(1000, 60000)}]",
             "INFO:     Waiting for application startup.",
             f"INFO:     {project}.db: pool ready ({rng.randint(5, 20)} connections)",
             "INFO:     Application startup complete."]
    for _ in range(requests):
        method = rng.choice(["GET", "GET", "GET", "POST", "PUT"])
        status = rng.choice(["200 OK", "200 OK", "200 OK", "201 Created", "204 No Content",
                             "404 Not Found"])
        lines.append(f"INFO:     127.0.0.1:{rng.randint(40000, 65000)} - \"{method} /api/v1/"
                     f"{rng.choice(NOUNS)}s/{hex_id(rng, 8)} HTTP/1.1\" {status}")
    return "\n".join(lines)
