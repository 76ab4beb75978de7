"""The job store's faults, as the project's errors (no SQLite here: a client that only
names them, the submit path's records, does not load the sqlite3 module; the mapping
from SQLite's errors is in :mod:`.store_errors`)."""

from __future__ import annotations

from condorpy.errors import QueueError

SALVAGE_HINT = ("stop the daemon and run `condorpy store salvage` on the file to copy "
                "out every job that still reads into a new store")


class StoreFault(QueueError):
    """An error SQLite or the operating system raised in the store; ``cause`` is
    their own words."""

    def __init__(self, message: str, *, path: str, cause: str) -> None:
        super().__init__(message, path=path)
        self.cause = cause


class StoreFull(StoreFault):
    """The store could not grow: its file system (or SQLite's page limit) is full.
    Nothing of the refused change was kept; the store works again once there is room."""


class StoreIOError(StoreFault):
    """The operating system refused a read or write of the store or its log files
    (permissions, attributes, a failing disk)."""


class StoreDamaged(StoreFault):
    """A page or row of the store does not read: the file is damaged."""


class StoreBusy(StoreFault):
    """Another process holds the store's lock."""


class StoreConstraint(StoreFault):
    """A row broke one of the store's constraints (a key given twice): the caller's
    input, which it names in its own words."""
