"""`new_ulid`: the one maker of the workbench's ids (runs, attempts, sent calls).

An id is ULID-shaped: 48 bits of milliseconds then 80 random bits, 26 characters of Crockford
base32, so ids sort by the time they were made. Within one millisecond a process counts up
from the last id instead of drawing again, so its ids also sort in the order it made them;
a forked child starts its own sequence (it would otherwise count up from its parent's last
id, the same ids as its parent's next).
"""

from __future__ import annotations

import os
import random
import threading
import time

__all__ = ["new_ulid"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_PAIRS = tuple(high + low for high in _CROCKFORD for low in _CROCKFORD)
"""The two characters of every 10-bit value: an id is 13 look-ups, not 26."""
_PAIR_SHIFTS = tuple(range(120, -1, -10))
_RANDOM_BITS = 80
_RANDOM = random.Random(os.urandom(16))  # ids must differ, not be secret: one seed a process
_lock = threading.Lock()
_last = [0, 0]  # the last id's milliseconds and random part


def _forked() -> None:
    _RANDOM.seed(os.urandom(16))
    _last[:] = [0, 0]


os.register_at_fork(after_in_child=_forked)


def new_ulid() -> str:
    """A new 26-character id, later than every id this process made before."""
    with _lock:
        ms = int(time.time() * 1000)
        if ms <= _last[0]:
            ms, rand = _last[0], _last[1] + 1
        else:
            rand = _RANDOM.getrandbits(_RANDOM_BITS)
        _last[:] = [ms, rand]
    value = (ms << _RANDOM_BITS) | (rand & ((1 << _RANDOM_BITS) - 1))
    return "".join([_PAIRS[(value >> shift) & 1023] for shift in _PAIR_SHIFTS])
