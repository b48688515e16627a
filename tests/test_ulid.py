"""`new_ulid`: the workbench's one id maker (runs, attempts, sent calls)."""

from __future__ import annotations

import os
import time

import pytest

from workbench._ulid import new_ulid
from workbench.models._billing import new_call_id

CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def test_ids_are_26_crockford_characters_in_the_order_they_were_made() -> None:
    ids = [new_ulid() for _ in range(5000)] + [new_call_id() for _ in range(5000)]

    assert len(set(ids)) == 10_000
    assert ids == sorted(ids)  # many share a millisecond: those count up
    assert all(len(i) == 26 and set(i) <= set(CROCKFORD) for i in ids)


def test_an_id_starts_with_the_milliseconds_it_was_made_at() -> None:
    before = int(time.time() * 1000)
    made = new_ulid()
    after = int(time.time() * 1000)

    value = 0
    for char in made:
        value = value * 32 + CROCKFORD.index(char)
    assert before <= value >> 80 <= after


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_count_up_from_its_parents_last_id(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(time, "time", lambda: 1_800_000_000.0)  # one millisecond for both
    new_ulid()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, then out without running the parent's teardown
        os.write(write, new_ulid().encode())
        os._exit(0)
    os.waitpid(pid, 0)
    child = os.read(read, 26).decode()
    os.close(read)
    os.close(write)
    parent = new_ulid()

    assert len(child) == 26 and child[:10] == parent[:10] and child != parent
