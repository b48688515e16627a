"""Text builders for the session generator: names, Python modules, tests, tracebacks, prose.

Everything draws from the `random.Random` it is given, so a seed fixes every byte. The
vocabulary is generic backend-service code; the random hex suffixes make the planted names
impossible to guess from the rest of the session.
"""

from __future__ import annotations

import random

NOUNS = ["ledger", "invoice", "tenant", "shard", "ticket", "quota", "cursor", "batch", "rollup",
         "webhook", "session", "token", "bucket", "manifest", "snapshot", "schedule", "payout",
         "audit", "catalog", "profile", "metric", "lease", "replica", "digest", "channel"]
VERBS = ["reconcile", "resolve", "flush", "expand", "compact", "validate", "merge", "rebuild",
         "dispatch", "normalize", "hydrate", "prune", "serialize", "refresh", "settle", "route"]
ADJECTIVES = ["amber", "brisk", "cobalt", "dusty", "ember", "fjord", "gusty", "hazel", "ivory",
              "jolly", "keen", "lunar", "mossy", "nimble", "opal", "prairie", "quartz", "russet"]
ERROR_TYPES = ["KeyError", "ValueError", "TypeError", "RuntimeError", "AssertionError",
               "LookupError"]
LIBS = ["json", "logging", "itertools", "collections", "dataclasses", "datetime", "hashlib",
        "pathlib", "typing", "functools"]


def hex_id(rng: random.Random, n: int = 4) -> str:
    """`n` random lowercase hex digits."""
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def ident(rng: random.Random) -> str:
    """A snake_case function name with an unguessable suffix (``settle_quota_3f9a``)."""
    return f"{rng.choice(VERBS)}_{rng.choice(NOUNS)}_{hex_id(rng)}"


def class_name(rng: random.Random) -> str:
    """A CamelCase class name with an unguessable suffix."""
    return f"{rng.choice(NOUNS).title()}{rng.choice(NOUNS).title()}{hex_id(rng).upper()}"


def project_name(rng: random.Random) -> str:
    """A project (and package) name such as ``cobalt_ledger``."""
    return f"{rng.choice(ADJECTIVES)}_{rng.choice(NOUNS)}"


def module_path(rng: random.Random, package: str) -> str:
    """A source path inside the package (``src/<package>/<noun>_<hex>.py``)."""
    return f"src/{package}/{rng.choice(NOUNS)}_{hex_id(rng)}.py"


def error_message(rng: random.Random) -> str:
    """A distinctive exception line (``ValueError: ...``) that only this session contains."""
    kind = rng.choice(ERROR_TYPES)
    templates = [
        f"checksum mismatch for shard {rng.randint(3, 97)} (expected 0x{hex_id(rng, 8)})",
        f"'{rng.choice(NOUNS)}_{hex_id(rng, 6)}'",
        f"cannot settle {rng.choice(NOUNS)} {rng.randint(1000, 9999)}: "
        f"lease {hex_id(rng, 6)} expired",
        f"unexpected state {rng.choice(ADJECTIVES).upper()}_{rng.randint(10, 99)} "
        f"in {rng.choice(NOUNS)} pipeline",
    ]
    return f"{kind}: {rng.choice(templates)}"


def _function(rng: random.Random, name: str, depth: int) -> list[str]:
    arg = rng.choice(NOUNS)
    other = rng.choice(NOUNS)
    lines = [f"def {name}({arg}s: list[dict], *, limit: int = {rng.choice([10, 50, 100, 500])})"
             f" -> dict[str, int]:",
             f'    """{name.split("_")[0].title()} the {arg}s against the {other} index.',
             "",
             f"    Entries without a ``{other}_id`` are skipped and counted in ``skipped``.",
             '    """',
             "    totals: dict[str, int] = defaultdict(int)",
             "    skipped = 0"]
    lines += [f"    for item in {arg}s[:limit]:",
              f'        key = item.get("{other}_id")',
              "        if key is None:",
              "            skipped += 1",
              "            continue"]
    for _ in range(depth):
        field = rng.choice(NOUNS)
        op = rng.choice(["+=", "-=", "="])
        lines += [f'        if item.get("{field}") is not None:',
                  f'            totals[key] {op} int(item["{field}"])']
    lines += ['    totals["skipped"] = skipped',
              f'    logger.debug("{name}: %d keys, %d skipped", len(totals), skipped)',
              "    return dict(totals)", "", ""]
    return lines


def python_module(rng: random.Random, path: str, names: list[str], size: int) -> str:
    """A plausible Python module defining the functions `names`, about `size` functions long."""
    imports = sorted(rng.sample(LIBS, 3))
    lines = [f'"""{path.rsplit("/", 1)[-1][:-3].replace("_", " ").title()}: '
             f'{rng.choice(VERBS)} and {rng.choice(VERBS)} {rng.choice(NOUNS)} records."""', "",
             "from __future__ import annotations", ""]
    lines += [f"import {lib}" for lib in imports]
    lines += ["from collections import defaultdict", "",
              "logger = logging.getLogger(__name__)" if "logging" in imports
              else "logger = __import__('logging').getLogger(__name__)",
              f"DEFAULT_{rng.choice(NOUNS).upper()}_TTL = {rng.randint(30, 3600)}", "", ""]
    all_names = list(names)
    while len(all_names) < size:
        all_names.append(ident(rng))
    rng.shuffle(all_names)
    for name in all_names:
        lines += _function(rng, name, rng.randint(1, 4))
    return "\n".join(lines).rstrip() + "\n"


def numbered(text: str, start: int = 1) -> str:
    """`text` with right-aligned line numbers, as a read_file tool shows it."""
    return "\n".join(f"{n:>5}  {line}" for n, line in enumerate(text.splitlines(), start))


def pytest_failure(rng: random.Random, project: str, test_path: str, src_path: str,
                   func: str, error: str, passed: int) -> str:
    """A pytest session whose one failure ends in `error` (``Type: message``)."""
    test_name = f"test_{func}"
    etype, _, emsg = error.partition(": ")
    line_src, line_test = rng.randint(20, 140), rng.randint(10, 90)
    rule = "=" * 30
    return "\n".join([
        f"{rule} test session starts {rule}",
        "platform linux -- Python 3.11.9, pytest-8.2.1, pluggy-1.5.0",
        f"rootdir: /home/dev/{project}",
        "configfile: pyproject.toml",
        f"collected {passed + 1} items", "",
        f"{test_path} {'.' * (passed // 2)}F{'.' * (passed - passed // 2)}"
        f"{' ' * 10}[100%]", "",
        f"{'=' * 35} FAILURES {'=' * 35}",
        f"{'_' * 20} {test_name} {'_' * 20}", "",
        f"    def {test_name}():",
        f"        payload = load_fixture(\"{rng.choice(NOUNS)}_{rng.randint(1, 9)}.json\")",
        f">       result = {func}(payload[\"items\"], limit={rng.choice([10, 50])})", "",
        f"{test_path}:{line_test}: ",
        "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _", "",
        f"{src_path}:{line_src}: in {func}",
        f"    raise {etype}({emsg!r})" if etype != "KeyError" else f"    return index[{emsg}]",
        f"E   {error}", "",
        f"{rule} short test summary info {rule}",
        f"FAILED {test_path}::{test_name} - {error}",
        f"{'=' * 25} 1 failed, {passed} passed in {rng.randint(20, 190) / 100:.2f}s {'=' * 25}",
    ])


def python_traceback(rng: random.Random, project: str, src_path: str, func: str,
                     error: str) -> str:
    """A plain ``python -m`` traceback ending in `error`."""
    mod = src_path[4:-3].replace("/", ".")
    return "\n".join([
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
        f"(exit status 1; module {mod})",
    ])


def pytest_pass(rng: random.Random, project: str, count: int) -> str:
    """A green pytest run."""
    rule = "=" * 30
    return "\n".join([
        f"{rule} test session starts {rule}",
        "platform linux -- Python 3.11.9, pytest-8.2.1, pluggy-1.5.0",
        f"rootdir: /home/dev/{project}",
        f"collected {count} items", "",
        f"{'.' * count}{' ' * 10}[100%]", "",
        f"{'=' * 30} {count} passed in {rng.randint(20, 300) / 100:.2f}s {'=' * 30}",
    ])


def search_hits(rng: random.Random, paths: list[str], needle: str) -> str:
    """``grep -rn`` style output listing `needle` in some of `paths`."""
    hits = []
    for path in paths:
        for _ in range(rng.randint(1, 3)):
            hits.append(f"{path}:{rng.randint(5, 200)}:    result = {needle}(rows, limit=50)")
    return "\n".join(hits)


def _function_span(text: str, func: str) -> tuple[int, int]:
    start = text.index(f"def {func}(")
    end = text.find("\n\n\ndef ", start)
    return start, len(text) if end < 0 else end


def guard_seen(text: str, func: str) -> str:
    """`text` with `func` changed to skip keys it has already counted."""
    start, end = _function_span(text, func)
    body = text[start:end]
    body = body.replace("    skipped = 0\n", "    skipped = 0\n    seen: set[str] = set()\n", 1)
    body = body.replace("        if key is None:\n", "        if key is None or key in seen:\n", 1)
    body = body.replace("            continue\n", "            continue\n        seen.add(key)\n", 1)
    return text[:start] + body + text[end:]


def drop_empty_totals(text: str, func: str) -> str:
    """`text` with `func` returning only non-zero totals (the follow-up fix)."""
    start, end = _function_span(text, func)
    body = text[start:end].replace(
        "    return dict(totals)",
        '    return {k: v for k, v in totals.items() if v or k == "skipped"}', 1)
    return text[:start] + body + text[end:]
