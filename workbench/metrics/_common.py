"""Text helpers and the result shape shared by the retention probes."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from workbench._memo import memo

_WORD = re.compile(r"[a-z0-9_]+(?:[.'-][a-z0-9_]+)*")
_WORD_PARTS = re.compile(r"[.'-]")

# Common English function words and chat filler; a content word must be none of these.
STOPWORDS = frozenset("""
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing done down during each else even ever every
few for from further get gets got had has have having he her here hers him his how however i if in
into is it its itself just let like make many may me might more most much must my need needs no nor
not now of off on once only or other our ours out over own please really same shall she should so
some such than that the their theirs them then there these they this those through thus to too
under until up upon us use used using very via want wants was we well were what when where which
while who whom why will with within without would yes yet you your yours thanks thank okay sure
could would should into onto also just still then this that these those there here what which
""".split())


def normalize_ws(text: str) -> str:
    """Collapse every run of whitespace to one space and strip the ends (what ``\\s+`` ->
    ``" "`` and a strip give: `str.split` cuts at the same characters, in one pass)."""
    return " ".join(text.split())


def words(text: str) -> list[str]:
    """Lowercased word tokens (letters, digits, ``_``; inner dots, dashes, apostrophes kept)."""
    return _WORD.findall(text.lower())


def content_words(text: str, min_len: int = 4) -> list[str]:
    """Distinct lowercased non-stopwords of at least `min_len` characters, in order."""
    seen: dict[str, None] = {}
    for w in words(text):
        if len(w) >= min_len and w not in STOPWORDS:
            seen.setdefault(w, None)
    return list(seen)


def word_set(text: str) -> set[str]:
    """The set of `words` of `text`, plus the parts of dotted or dashed words (a new set; the
    last few texts' sets are remembered, since every probe of a cell asks for its summary's:
    the run memo's ``word_sets``)."""
    return set(memo().word_sets.get_or(text, lambda: _word_set(text)))


def _word_set(text: str) -> frozenset[str]:
    # A word never holds whitespace, so the words of the distinct whitespace-separated pieces
    # are the text's words: a long context repeats its pieces, and each is read once.
    out = set(_WORD.findall(" ".join(set(text.lower().split()))))
    # each distinct joined word once; its parts are never empty (`_WORD` puts a separator
    # only between two runs of word characters)
    for w in [w for w in out if "." in w or "-" in w or "'" in w]:
        out.update(_WORD_PARTS.split(w))
    return frozenset(out)


@dataclass
class ProbeResult:
    """What one probe found: how many items the session had and which the summary kept.

    Attributes:
        total: Items the session had.
        recalled: Items the summary kept.
        missing: The items the summary forgot, as short strings.
        extra: Probe-specific numbers (weaker matches, overlap scores).
        kinds: Per kind of content, ``(recalled, total)``, when the probe's items come in kinds
            that different summary fields carry (planted constraints, values, identifiers...).
            Then `recall` weighs every kind alike, so a summary that drops the one field
            holding a kind loses that kind's share however few items it has.
    """

    total: int
    recalled: int
    missing: list[str] = field(default_factory=list)
    extra: dict[str, float | int | None] = field(default_factory=dict)
    kinds: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def recall(self) -> float | None:
        """The mean over `kinds` of each kind's recalled / total (without kinds, `recalled /
        total`), or None when the session had no items."""
        if not self.total:
            return None
        if self.kinds:
            shares = [done / count for done, count in self.kinds.values() if count]
            return sum(shares) / len(shares)
        return self.recalled / self.total

    def as_metrics(self, prefix: str) -> dict[str, float | int | None]:
        """``{prefix}_total``, ``{prefix}_recalled``, ``{prefix}_recall`` plus the extras."""
        out: dict[str, float | int | None] = {
            f"{prefix}_total": self.total,
            f"{prefix}_recalled": self.recalled,
            f"{prefix}_recall": self.recall,
        }
        out.update(self.extra)
        return out
