"""Reading a text the way an agent reads it, whatever its layout: `read_units`.

A summary can put one fact under a markdown heading, on a ``key: value`` line, in a JSON
document, in a table cell, inside an XML-like tag or in a sentence of prose. `read_units` cuts
any text into *units*, one statement each (a line of a list item, a sentence or clause, a JSON
leaf, a table cell), and gives each the *label* of the field it stands under, however the
layout marks it:

- a markdown heading (``## Pending Tasks``, or a bold line alone), for the lines below it;
- a machine key (``pending_tasks.2: ...``; a key of a JSON document), for its value;
- a table's column header and its row's first cell, for each cell of the row;
- an XML-like tag (``<pending_task>...</pending_task>``), for the text inside it;
- a short lead-in before a colon (``Still pending: a; b``), for the clauses after it.

A file's record gives its units a *subject*, the path that a ``### path`` heading, a JSON
object's ``path`` key, a ``files.1.path`` line, a table row's path cell or a tag's ``path``
attribute names. Units of one field keep their order in it (`Unit.group`, `Unit.order`): the
order of a list is content; the order of the sections is layout, and is not kept.

Label words are compared by stem (`stem`), so ``Pending Tasks``, ``pending_tasks`` and
``pending task`` are one label.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import NamedTuple

from workbench.metrics._common import STOPWORDS, words
from workbench.metrics._files import FILE_EXTENSIONS

__all__ = ["Unit", "bare_text", "iter_clauses", "label_words", "path_like", "read_units", "stem"]

PATH_KEYS = frozenset({"path", "file", "file_path", "filename", "filepath"})
"""Keys (of JSON objects, key/value records, tag attributes) whose value is a record's subject."""
GENERIC_LABELS = frozenset({"field", "value", "key", "item", "text", "content", "entry",
                            "description", "detail", "details", "summary", "note", "notes"})
"""Words a layout uses for any field (a table's ``| field | value |`` header): no label."""
LEAD_WORDS = 6
"""A lead-in before a colon labels its clauses when it has at most this many words."""

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_BOLD_LINE = re.compile(r"^(\*\*|__)([^*_].*?)\1\s*:?\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+")
_FENCE = re.compile(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)")
_KEY_LINE = re.compile(r"^([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*)\s*[:=]\s?(.*)$")
_TAG = re.compile(r"<(/?)([A-Za-z][\w.-]*)((?:\s+[\w.-]+\s*=\s*\"[^\"]*\")*)\s*(/?)>")
_ATTR = re.compile(r"([\w.-]+)\s*=\s*\"([^\"]*)\"")
_CLOSING = re.compile(r"</([A-Za-z][\w.-]*)>")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[*_-])")
_CLAUSE = re.compile(r";\s+")
_JOIN = re.compile(r"^(?:and|then|also|or)\b[\s:,]*", re.IGNORECASE)
_LEAD = re.compile(r"([^:`]{1,60}?):\s+(\S.*)$", re.DOTALL)
_TABLE_RULE = re.compile(r"^:?-{2,}:?$")
_SPLIT_KEY = re.compile(r"[._\s-]+")
_ALNUM = re.compile(r"[^\W_]")
"""A letter or digit (``str.isalnum``'s characters: a word character that is not ``_``)."""


def stem(word: str) -> str:
    """A label word's stem: lowercased, a plural ending dropped (``tasks`` -> ``task``,
    ``fixes`` -> ``fix``, ``entries`` -> ``entry``)."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("sses", "xes", "ches", "shes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def label_words(text: str) -> frozenset[str]:
    """The stems of the label words of `text` (a heading, key, tag or column name): words of
    three letters or more that are not stopwords, numbers, paths or generic field names."""
    out = set()
    for word in words(_SPLIT_KEY.sub(" ", text)):
        if len(word) < 3 or word in STOPWORDS or word.isdigit() or path_like(word):
            continue
        s = stem(word)
        if s not in GENERIC_LABELS and word not in GENERIC_LABELS:
            out.add(s)
    return frozenset(out)


def path_like(token: str) -> bool:
    """True for a token that names a file: it holds a ``/`` with letters, or ends in a known
    file extension."""
    token = token.strip(".,;:)(`'\"")
    if not token or token.startswith("-") or "://" in token or " " in token:
        return False
    if "/" in token and _ALNUM.search(token):
        return True
    ext = token.rsplit(".", 1)[-1].lower() if "." in token else ""
    return ext in FILE_EXTENSIONS and len(token) > len(ext) + 1


class Unit(NamedTuple):
    """One statement of a text (immutable; a named tuple, built many times per text).

    Attributes:
        text: The statement, without the layout's markup (bullet, key, pipes, tags).
        label: Stems of the words of the field it stands under (`label_words`).
        subject: The path of the file record it belongs to, or ``""``.
        group: The field it is an item of (its label's stems, sorted and joined).
        order: Its place among the units of `group` in this text.
        body: Where its text starts after a lead-in that labels it (``Pending task: ``), or 0.
    """

    text: str
    label: frozenset[str] = frozenset()
    subject: str = ""
    group: str = ""
    order: int = 0
    body: int = 0


class _Reader:
    """The state of one reading: the headings, tags, key and table row the next line is
    under, and each group's running count."""

    def __init__(self) -> None:
        self.units: list[Unit] = []
        self.counts: dict[str, int] = {}
        self.headings: list[tuple[int, frozenset[str], str]] = []
        self.tags: list[tuple[str, frozenset[str], str]] = []
        self.key: tuple[frozenset[str], str] = (frozenset(), "")
        self.records: dict[str, str] = {}
        self.header: list[str] | None = None
        self.closing: set[str] = set()

    # ---- what the next line stands under ----------------------------------------------

    def _context(self) -> tuple[frozenset[str], str]:
        label: set[str] = set()
        subject = ""
        for _, words_, path in self.headings:
            label |= words_
            subject = path or subject
        for _, words_, path in self.tags:
            label |= words_
            subject = path or subject
        label |= self.key[0]
        return frozenset(label), self.key[1] or subject

    def add(self, text: str, label: frozenset[str] = frozenset(), subject: str = "",
            lead: frozenset[str] = frozenset(), body: int = 0) -> None:
        """One unit: `label` names its field (its group), `lead` adds the words of a lead-in
        that labels it, `body` is where its text starts after that lead-in."""
        stripped = text.strip()
        if not _ALNUM.search(stripped):  # nothing but punctuation and space
            return
        body = max(0, body - (len(text) - len(text.lstrip())))
        group = " ".join(sorted(label))
        order = self.counts.get(group, 0)
        self.counts[group] = order + 1
        self.units.append(Unit(stripped, label | lead, subject, group, order, body))

    # ---- text ---------------------------------------------------------------------------

    def prose(self, line: str, label: frozenset[str], subject: str) -> None:
        """A line of text: its sentences, each cut at semicolons into clauses. A lead-in
        (``Still pending: a; b``, and one after it: ``Pending task: Next: a``) labels the
        clauses of its sentence; where the layout gave no label, the line's first lead-in
        labels the whole line and names the field its units are items of (``Current work:
        ... . Still open: ...``)."""
        line_lead: frozenset[str] | None = None
        for sentence in _SENTENCE.split(_BULLET.sub("", line)):
            sentence = _BULLET.sub("", sentence.strip())
            leads: list[frozenset[str]] = []
            at = 0
            while len(leads) < 2:
                match = _LEAD.match(sentence, at)
                if not match or len(match.group(1).split()) > LEAD_WORDS:
                    break
                leads.append(label_words(match.group(1)))
                at = match.start(2)
            lead = frozenset().union(*leads)
            if line_lead is None:
                line_lead = leads[0] if leads and not label else frozenset()
            field = label or line_lead
            for n, clause in enumerate(_CLAUSE.split(sentence)):
                if n:  # "a; and b": the joining word is not part of b
                    clause = _JOIN.sub("", clause.strip())
                self.add(clause, field, subject, lead | field, at if n == 0 else 0)

    def text(self, text: str, label: frozenset[str] = frozenset(), subject: str = "") -> None:
        """Every line of a block of text (a JSON string, a tag's inner text)."""
        for line in text.splitlines():
            if line.strip():
                self.prose(line, label, subject)

    # ---- JSON ---------------------------------------------------------------------------

    def json(self, value: object, label: frozenset[str], subject: str) -> None:
        if isinstance(value, dict):
            path = next((v for k, v in value.items() if str(k).lower() in PATH_KEYS
                         and isinstance(v, str) and v.strip()), "")
            for key, item in value.items():
                inner = label | label_words(str(key))
                if str(key).lower() in PATH_KEYS and isinstance(item, str):
                    self.add(item, inner, item.strip())
                else:
                    self.json(item, inner, path.strip() or subject)
        elif isinstance(value, list):
            for item in value:
                self.json(item, label, subject)
        elif isinstance(value, str):
            self.text(value, label, subject)
        elif value is not None:
            self.add(json.dumps(value), label, subject)

    # ---- lines ------------------------------------------------------------------------

    def heading(self, level: int, text: str) -> None:
        while self.headings and self.headings[-1][0] >= level:
            self.headings.pop()
        self.key = (frozenset(), "")
        self.header = None
        plain = text.strip().strip("`*_ ")
        path = plain if path_like(plain) else ""
        self.headings.append((level, label_words(text) if not path else frozenset(), path))
        if path:
            label, _ = self._context()
            self.add(path, label, path)

    def table_row(self, cells: list[str]) -> None:
        label, subject = self._context()
        path = next((c.strip("` ") for c in cells if path_like(c.strip("` "))), "")
        first = cells[0] if cells and not path_like(cells[0].strip("` ")) else ""
        row_label = label_words(first) if first and len(first.split()) <= 4 else frozenset()
        for n, cell in enumerate(cells):
            head = self.header[n] if self.header and n < len(self.header) else ""
            if cell.strip("` ") == path and path:
                self.add(path, label | label_words(head), path)
            elif n > 0 or not row_label:
                self.prose(cell, label | label_words(head) | row_label, path or subject)

    def key_line(self, key: str, value: str) -> None:
        parts = key.split(".")
        prefix = ".".join(parts[:-1])
        label = label_words(" ".join(p for p in parts if not p.isdigit()))
        self.key = (frozenset(), "")
        base, inherited = self._context()
        path = value.strip().strip("`")
        if parts[-1] in PATH_KEYS and path_like(path):
            self.records[prefix] = path
            self.key = (label, path)
            self.add(path, base | label, path)
            return
        subject = self.records.get(prefix, "") if prefix else ""
        self.key = (label, subject)
        if value.strip():
            self.prose(value, base | label, subject or inherited)

    def tagged(self, line: str) -> None:
        """A line holding XML-like tags: the text between them under the open tags."""
        at = 0
        for match in _TAG.finditer(line):
            closing, name, attrs, self_closing = match.groups()
            if name not in self.closing:
                continue
            self._tag_text(line[at:match.start()])
            at = match.end()
            if closing:
                while self.tags and self.tags.pop()[0] != name:
                    pass
            elif not self_closing:
                values = dict(_ATTR.findall(attrs))
                path = next((v for k, v in values.items() if k.lower() in PATH_KEYS), "")
                extra = " ".join(v for k, v in values.items() if k.lower() not in PATH_KEYS)
                self.tags.append((name, label_words(f"{name} {extra}"), path))
                if path:
                    label, _ = self._context()
                    self.add(path, label, path)
        self._tag_text(line[at:])

    def _tag_text(self, text: str) -> None:
        if text.strip():
            label, subject = self._context()
            self.prose(text, label, subject)

    def lines(self, text: str) -> None:
        self.closing = set(_CLOSING.findall(text))
        rows = text.splitlines()
        n = 0
        while n < len(rows):
            line = rows[n]
            n += 1
            stripped = line.strip()
            fence = _FENCE.match(line)
            if fence:
                n = self._fenced(rows, n, fence.group(1), fence.group(2))
                continue
            if not stripped:
                self.header = None
                continue
            if stripped.startswith("|") and stripped.count("|") >= 2:
                cells = [c.strip() for c in stripped.strip("|").split("|")]
                if all(_TABLE_RULE.match(c) for c in cells if c):
                    continue
                following = rows[n].strip() if n < len(rows) else ""
                if following.startswith("|") and all(
                        _TABLE_RULE.match(c.strip()) for c in following.strip("|").split("|")
                        if c.strip()):
                    self.header = cells
                    continue
                self.table_row(cells)
                continue
            self.header = None
            heading = _HEADING.match(stripped) or _BOLD_LINE.match(stripped)
            if heading:
                level = len(heading.group(1)) if heading.group(1).startswith("#") else 7
                self.heading(level, heading.group(2))
                continue
            if self.closing and _TAG.search(stripped):
                self.tagged(stripped)
                continue
            key = _KEY_LINE.match(stripped)
            if key and ("_" in key.group(1) or re.search(r"\.\d", key.group(1))):
                self.key_line(key.group(1), key.group(2))
                continue
            label, subject = self._context()
            self.prose(stripped, label, subject)

    def _fenced(self, rows: list[str], n: int, marker: str, info: str) -> int:
        """The block from line `n` to its closing fence: a JSON document, else code lines."""
        body: list[str] = []
        while n < len(rows) and not rows[n].strip().startswith(marker):
            body.append(rows[n])
            n += 1
        block = "\n".join(body)
        label, subject = self._context()
        parsed = _json_document(block) if info.lower() in ("", "json") else None
        if parsed is not None:
            self.json(parsed, label, subject)
        else:
            for line in body:
                self.add(line, label, subject)
        return n + 1


def _json_document(text: str) -> object:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    return value if isinstance(value, dict | list) else None


def read_units(text: str) -> list[Unit]:
    """The units of `text`, in reading order (see the module docstring)."""
    reader = _Reader()
    document = _json_document(text)
    if document is not None:
        reader.json(document, frozenset(), "")
    else:
        reader.lines(text)
    return reader.units


def bare_text(text: str) -> str:
    """`text` compared as content: lowercased, whitespace collapsed, without the lead-ins
    that label it (``User intent: Next: x`` and ``Next: x`` are the same statement)."""
    plain = " ".join(text.lower().split())
    while (match := _LEAD.match(plain)) and len(match.group(1).split()) <= LEAD_WORDS:
        plain = match.group(2)
    return plain


def iter_clauses(text: str) -> Iterator[str]:
    """The clauses of one unit's text: split at commas and ``and``/``then`` joins, so a word
    is attributed to the path it stands beside (``a new module x.py, and call it from y.py``)."""
    for part in re.split(r",\s+|\s+(?:and|then|but)\s+", text):
        if part.strip():
            yield part.strip()
