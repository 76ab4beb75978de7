"""Where starters write their own log: one file per slot, ``$(STARTER_LOG).<slot>`` in
LOG (``StarterLog.slot1_1``), as HTCondor's startd names it by default
(STARTER_LOG_NAME_APPEND = Slot). A starter's standard output and error go there.

A file over MAX_STARTER_LOG bytes is moved to ``<name>.old`` (one old file, HTCondor's
MAX_NUM_STARTER_LOG default) when the next starter for that slot opens it; a starter
does not rotate the file under itself, so a file can exceed the limit by one job's
starter output. MAX_STARTER_LOG = 0 never rotates.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from condorpy.config import KnobReader
from condorpy.config.typed import log_size_value


@dataclass(frozen=True)
class StarterLogs:
    base: str            # STARTER_LOG, the slot's name appended
    max_bytes: int       # MAX_STARTER_LOG; 0: never rotate

    def path_for(self, slot: str) -> str:
        return f"{self.base}.{slot}"


def starter_logs(cfg: KnobReader, log_dir: Path) -> StarterLogs:
    """STARTER_LOG and MAX_STARTER_LOG. ``log_dir`` is the LOG the daemon uses: when a
    personal daemon had to move LOG, a STARTER_LOG in the configured LOG moves with it."""
    configured = cfg.get("STARTER_LOG") or "StarterLog"
    base = Path(configured)
    if not base.is_absolute() or str(base.parent) == (cfg.get("LOG") or ""):
        base = log_dir / base.name
    text = cfg.get("MAX_STARTER_LOG") or "0"
    size = log_size_value(text)
    if size is None:
        raise cfg.invalid("MAX_STARTER_LOG", "a size in bytes, such as 10 Mb or 500 Kb")
    return StarterLogs(str(base), size)


def open_starter_log(path: str, max_bytes: int) -> int:
    """The log's descriptor for appending, after moving a full file to ``.old``."""
    if max_bytes > 0:
        try:
            if os.stat(path).st_size >= max_bytes:
                os.replace(path, path + ".old")
        except FileNotFoundError:
            pass
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
