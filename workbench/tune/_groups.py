"""What the search and the proposer share: a group of tune points that send one prompt."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PromptGroup:
    """Tune points (labels) whose compaction prompts are identical, so they rise or fall
    together in successive halving.

    Attributes:
        key: What the points share (the distinct prompt, or ``proposal:<name>``).
        labels: The variant labels in the group.
    """

    key: str
    labels: list[str]
