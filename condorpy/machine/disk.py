"""Free disk under the execute directories, in KiB."""

from __future__ import annotations

import os
from pathlib import Path


def free_kb(path: Path) -> int:
    """Free KiB available to unprivileged users on the filesystem holding ``path``.

    A directory that does not exist yet (a fresh install before the startd made its
    execute directory) is measured at its nearest existing ancestor, which is the
    filesystem it will be created on.
    """
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        st = os.statvfs(p)
    except OSError:
        return 0
    return (st.f_bavail * st.f_frsize) // 1024
