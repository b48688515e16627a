"""Storage faults injected into a real ``workbench`` subprocess (no root, no special mount).

`FAULT_WRAPPER` is run as ``python -c FAULT_WRAPPER <workbench arguments>``; environment
variables choose the fault, confined to one folder (``FAULT_FOLDER``, the run folder):

- ``FAULT_DB_PAGES=N``: a results store in the folder may grow by N pages more than it held
  when it was opened (SQLite's own ``max_page_count``, which fails a write exactly as a full
  disk does: ``SQLITE_FULL``, "database or disk is full").
- ``FAULT_FILE_WRITES=N``: after N writes into files of the folder, a write stores half of its
  bytes and fails with ``ENOSPC``, as a filling disk does.
- ``FAULT_READ_ONLY=1``: every file or folder the workbench creates in the folder fails with
  ``EROFS``, and SQLite opens stores there read-only (a read-only mount, which the tests cannot
  make without root; ``chmod`` does not stop root).
"""

from __future__ import annotations

FAULT_WRAPPER = r'''
import errno, os, sys, types
folder = os.path.realpath(os.environ["FAULT_FOLDER"])

def inside(path):
    real = os.path.realpath(path)
    return real == folder or real.startswith(folder + os.sep)

import workbench.harness.results._store as store
try:
    import workbench._storage as storage
except ImportError:  # a workbench from before atomic writes: its files are not patched
    storage = types.SimpleNamespace()

pages = int(os.environ.get("FAULT_DB_PAGES") or 0)
if pages:
    real_connect = store.connect

    def connect(path):
        db = real_connect(path)
        if inside(path):
            count = db.execute("PRAGMA page_count").fetchone()[0]
            db.execute(f"PRAGMA max_page_count = {count + pages}")
        return db

    store.connect = connect

writes = int(os.environ.get("FAULT_FILE_WRITES") or -1)
read_only = os.environ.get("FAULT_READ_ONLY") == "1"
real_os = os


class FaultyOs(types.ModuleType):
    def __getattr__(self, name):
        return getattr(real_os, name)

    def open(self, path, flags, mode=0o777):
        if read_only and inside(path) and flags & (real_os.O_WRONLY | real_os.O_RDWR):
            raise OSError(errno.EROFS, real_os.strerror(errno.EROFS), str(path))
        return real_os.open(path, flags, mode)

    def write(self, fd, data):
        global writes
        path = real_os.readlink(f"/proc/self/fd/{fd}")
        if writes >= 0 and inside(path):
            if writes == 0:
                real_os.write(fd, bytes(data[: len(data) // 2]))
                raise OSError(errno.ENOSPC, real_os.strerror(errno.ENOSPC))
            writes -= 1
        return real_os.write(fd, data)


storage.os = FaultyOs("os")
if read_only:
    import pathlib
    import sqlite3

    real_mkdir = pathlib.Path.mkdir

    def mkdir(self, *args, **kwargs):
        if inside(self) and not self.exists():
            raise OSError(errno.EROFS, real_os.strerror(errno.EROFS), str(self))
        return real_mkdir(self, *args, **kwargs)

    pathlib.Path.mkdir = mkdir
    real_sqlite_connect = sqlite3.connect

    def ro_connect(database, *args, **kwargs):
        if not kwargs.get("uri") and inside(database):
            database, kwargs["uri"] = pathlib.Path(database).resolve().as_uri() + "?mode=ro", True
        return real_sqlite_connect(database, *args, **kwargs)

    sqlite3.connect = ro_connect
    import workbench.harness.run._lock as lock
    lock.os = FaultyOs("os")

sys.argv = ["workbench", *sys.argv[1:]]
from workbench.cli import main
main()
'''
