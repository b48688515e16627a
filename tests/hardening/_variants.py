"""Hostile template variants and the spec that runs them, shared by the render-bound tests."""

from __future__ import annotations

import json
from pathlib import Path

DOUBLED = ("{% set n = namespace(a=[1], b=[1]) %}{% for i in range(64) %}"
           "{% set n.a = [n.a, n.a] %}{% set n.b = [n.b, n.b] %}{% endfor %}")
"""Two lists that each hold their previous value twice, 64 levels deep: a few kilobytes in
memory, 2**64 items when walked."""
MEMORY_BOMB = ("{% set n = namespace(l=[]) %}{% for i in range(10000) %}"
               "{% set n.l = n.l + [('x' * 8000000) ~ i] %}{% endfor %}{{ messages }}"
               "{{ n.l|length }}")
"""Each step builds a new 8 MB string, within every size limit: 80 GB by the end."""


def write_variant_spec(folder: Path, name: str, sessions: list[str],
                       variants: dict[str, str], *lines: str) -> Path:
    """Write each variant's ``compaction.md`` into ``folder/<variant>/`` and a spec running
    the extractive model over `sessions` with the default variant and those; returns it."""
    for variant, source in variants.items():
        (folder / variant).mkdir()
        (folder / variant / "compaction.md").write_text(source, encoding="utf-8")
    spec = folder / "spec.toml"
    spec.write_text("\n".join([
        f"name = {json.dumps(name)}", 'models = ["extractive"]', *lines,
        "sessions = " + json.dumps(sessions),
        "templates = " + json.dumps(["default", *variants])]) + "\n", encoding="utf-8")
    return spec
