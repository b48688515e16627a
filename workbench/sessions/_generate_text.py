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


def _dataclass(rng: random.Random) -> list[str]:
    name = class_name(rng)
    fields = rng.sample(NOUNS, rng.randint(3, 6))
    lines = ["@dataclasses.dataclass(frozen=True)", f"class {name}:",
             f'    """One {rng.choice(NOUNS)} row as the {rng.choice(NOUNS)} service '
             'returns it."""', ""]
    lines += [f"    {f}_id: str" if i == 0 else
              f"    {f}: {rng.choice(['int', 'str | None', 'float', 'bool'])} = "
              f"{rng.choice(['0', 'None', '0.0', 'False'])}" for i, f in enumerate(fields)]
    lines += ["", "    def key(self) -> str:",
              f'        return f"{{self.{fields[0]}_id}}:{{self.{fields[1]}}}"', "",
              "    @classmethod",
              f"    def from_row(cls, row: dict) -> {name}:",
              f'        return cls(**{{k: row[k] for k in '
              f'({", ".join(repr(f) for f in fields[1:3])},'
              f' "{fields[0]}_id") if k in row}})', "", ""]
    return lines


def _retrying(rng: random.Random, name: str) -> list[str]:
    noun = rng.choice(NOUNS)
    return [f"def {name}(client, {noun}_ids: list[str], *, attempts: int = "
            f"{rng.randint(2, 6)}) -> list[dict]:",
            f'    """Fetch each {noun} with retries; give up after ``attempts`` tries."""',
            "    fetched: list[dict] = []",
            f"    for {noun}_id in {noun}_ids:",
            "        for attempt in range(1, attempts + 1):",
            "            try:",
            f'                fetched.append(client.get(f"/{noun}s/{{{noun}_id}}", '
            f"timeout={rng.choice([2, 5, 10, 30])}))",
            "                break",
            "            except TimeoutError:",
            f'                logger.warning("{name}: %s attempt %d timed out", {noun}_id, '
            'attempt)',
            f"                time.sleep(min(2 ** attempt, {rng.choice([8, 16, 30])}))",
            "        else:",
            f'            raise RuntimeError(f"{noun} {{{noun}_id}} unreachable after '
            f'{{attempts}} attempts")',
            "    return fetched", "", ""]


def _repository(rng: random.Random) -> list[str]:
    name, noun = class_name(rng), rng.choice(NOUNS)
    table = f"{noun}_{rng.choice(NOUNS)}s"
    cols = rng.sample(NOUNS, 3)
    return [f"class {name}:", f'    """Reads and writes ``{table}`` rows."""', "",
            "    def __init__(self, conn) -> None:", "        self.conn = conn",
            "        self._cache: dict[str, dict] = {}", "",
            f"    def get(self, {noun}_id: str) -> dict | None:",
            f"        if {noun}_id in self._cache:", f"            return self._cache[{noun}_id]",
            "        row = self.conn.execute(",
            f'            "SELECT {", ".join(cols)} FROM {table} WHERE id = %s", ({noun}_id,)',
            "        ).fetchone()", "        if row is not None:",
            f"            self._cache[{noun}_id] = dict(row)", "        return row", "",
            "    def upsert(self, rows: list[dict]) -> int:",
            "        with self.conn.transaction():",
            "            for row in rows:", "                self.conn.execute(",
            f'                    "INSERT INTO {table} (id, {", ".join(cols)}) VALUES '
            f'(%s, %s, %s, %s) "',
            f'                    "ON CONFLICT (id) DO UPDATE SET {cols[0]} = EXCLUDED.{cols[0]}",',
            f'                    (row["id"], {", ".join(f"row.get({c!r})" for c in cols)}),',
            "                )", "        self._cache.clear()", "        return len(rows)", "", ""]


def _mapping(rng: random.Random) -> list[str]:
    name = f"{rng.choice(NOUNS).upper()}_{rng.choice(VERBS).upper()}_RULES"
    lines = [f"{name}: dict[str, tuple[int, str]] = {{"]
    for noun in rng.sample(NOUNS, rng.randint(4, 9)):
        lines.append(f'    "{noun}": ({rng.randint(1, 500)}, "{rng.choice(VERBS)}"),')
    return lines + ["}", "", ""]


def python_module(rng: random.Random, path: str, names: list[str], size: int) -> str:
    """A plausible Python module defining the functions `names`, about `size` blocks long.

    Blocks mix accumulating functions, dataclasses, retrying fetchers, repository classes and
    constant tables, so files read in a session do not all look alike.
    """
    imports = sorted({*rng.sample(LIBS, 3), "dataclasses", "logging", "time"})
    lines = [f'"""{path.rsplit("/", 1)[-1][:-3].replace("_", " ").title()}: '
             f'{rng.choice(VERBS)} and {rng.choice(VERBS)} {rng.choice(NOUNS)} records."""', "",
             "from __future__ import annotations", ""]
    lines += [f"import {lib}" for lib in imports]
    lines += ["from collections import defaultdict", "", "logger = logging.getLogger(__name__)",
              f"DEFAULT_{rng.choice(NOUNS).upper()}_TTL = {rng.randint(30, 3600)}", "", ""]
    blocks: list[str | None] = list(names)
    while len(blocks) < size:
        blocks.append(None)
    rng.shuffle(blocks)
    for name in blocks:
        if name is not None:
            lines += _function(rng, name, rng.randint(1, 4))
            continue
        kind = rng.random()
        if kind < 0.3:
            lines += _function(rng, ident(rng), rng.randint(1, 5))
        elif kind < 0.5:
            lines += _dataclass(rng)
        elif kind < 0.7:
            lines += _retrying(rng, ident(rng))
        elif kind < 0.88:
            lines += _repository(rng)
        else:
            lines += _mapping(rng)
    return "\n".join(lines).rstrip() + "\n"


def test_module(rng: random.Random, package: str, src_path: str, funcs: list[str],
                size: int) -> str:
    """A pytest module with `size` tests exercising `funcs` from `src_path`."""
    mod = src_path[4:-3].replace("/", ".")
    lines = [f'"""Tests for {mod}."""', "", "from __future__ import annotations", "",
             "import pytest", "", f"from {mod} import {', '.join(sorted(set(funcs)))}",
             f"from {package}.testing import load_fixture", "", ""]
    for _ in range(size):
        func, noun, other = rng.choice(funcs), rng.choice(NOUNS), rng.choice(NOUNS)
        amount = rng.randint(1, 90)
        if rng.random() < 0.3:
            lines += [f'@pytest.mark.parametrize("limit", [{rng.randint(1, 5)}, '
                      f'{rng.randint(10, 50)}, {rng.randint(60, 500)}])',
                      f"def test_{func}_respects_limit_{hex_id(rng)}(limit: int) -> None:",
                      f'    rows = [{{"{other}_id": str(i), "{noun}": 1}} for i in range(600)]',
                      f"    result = {func}(rows, limit=limit)",
                      '    assert sum(v for k, v in result.items() if k != "skipped") == limit',
                      "", ""]
        else:
            lines += [f"def test_{func}_{rng.choice(VERBS)}_{noun}_{hex_id(rng)}() -> None:",
                      f'    payload = load_fixture("{noun}_{rng.randint(1, 9)}.json")',
                      f"    result = {func}(payload[\"items\"], limit={rng.choice([10, 50, 100])})",
                      f'    assert result["skipped"] == {rng.randint(0, 4)}',
                      f'    assert result.get("{hex_id(rng, 8)}", 0) == {amount}', "", ""]
    return "\n".join(lines).rstrip() + "\n"


def numbered(text: str, start: int = 1) -> str:
    """`text` with right-aligned line numbers, as a read_file tool shows it."""
    return "\n".join(f"{n:>5}  {line}" for n, line in enumerate(text.splitlines(), start))


def _function_span(text: str, func: str) -> tuple[int, int]:
    start = text.index(f"def {func}(")
    end = text.find("\n\n\n", start)
    return start, len(text) if end < 0 else end


def guard_seen(text: str, func: str, seen: str = "seen") -> str:
    """`text` with `func` changed to skip keys it has already counted (in the set `seen`)."""
    start, end = _function_span(text, func)
    body = text[start:end]
    body = body.replace("    skipped = 0\n", f"    skipped = 0\n    {seen}: set[str] = set()\n", 1)
    body = body.replace("        if key is None:\n",
                        f"        if key is None or key in {seen}:\n", 1)
    body = body.replace("            continue\n",
                        f"            continue\n        {seen}.add(key)\n", 1)
    return text[:start] + body + text[end:]


def drop_empty_totals(text: str, func: str) -> str:
    """`text` with `func` returning only non-zero totals (the follow-up fix)."""
    start, end = _function_span(text, func)
    body = text[start:end].replace(
        "    return dict(totals)",
        '    return {k: v for k, v in totals.items() if v or k == "skipped"}', 1)
    return text[:start] + body + text[end:]


def edit_snippet(before: str, after: str, context: int = 1) -> tuple[str, str, int]:
    """The smallest ``(old, new, first_line)`` replacement turning `before` into `after`.

    `context` unchanged lines either side keep ``old`` unique in the file, as an editing tool
    needs.
    """
    a, b = before.splitlines(), after.splitlines()
    start = 0
    while start < min(len(a), len(b)) and a[start] == b[start]:
        start += 1
    end = 0
    while end < min(len(a), len(b)) - start and a[-1 - end] == b[-1 - end]:
        end += 1
    lo = max(0, start - context)
    old = "\n".join(a[lo:len(a) - end + context])
    new = "\n".join(b[lo:len(b) - end + context])
    return old, new, lo + 1


def regression_test(rng: random.Random, func: str, name: str) -> list[str]:
    """A regression test `name` feeding `func` the same key in two batches."""
    noun, other = rng.choice(NOUNS), rng.choice(NOUNS)
    key = hex_id(rng, 8)
    return ["", "", f"def {name}() -> None:",
            f'    """The same {noun} in two batches is counted once."""',
            f'    first = [{{"{other}_id": "{key}", "{noun}": {rng.randint(2, 60)}}}]',
            f'    second = [{{"{other}_id": "{key}", "{noun}": {rng.randint(2, 60)}}},',
            f'              {{"{other}_id": "{hex_id(rng, 8)}", "{noun}": 1}}]',
            f"    result = {func}(first + second, limit={rng.choice([10, 50, 100])})",
            f'    assert list(result).count("{key}") == 1',
            '    assert result["skipped"] == 0']
