"""The one image the container tests and benchmark use: built offline (nothing can be
pulled here) from Debian's busybox-static, as ``docker import`` takes a root tar."""

from __future__ import annotations

import io
import tarfile

# the applets the tests' and the benchmark's jobs call, each a link to busybox
TOOLS = ("sh", "cat", "id", "echo", "sleep", "awk", "wc", "pwd", "ls", "true", "[")


def busybox_tar() -> bytes:
    """A root file system of busybox alone."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d in ("bin", "tmp", "etc", "proc", "sys", "dev"):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755
            tar.addfile(info)
        tar.add("/bin/busybox", "bin/busybox")
        for tool in TOOLS:
            info = tarfile.TarInfo(f"bin/{tool}")
            info.type, info.linkname = tarfile.SYMTYPE, "busybox"
            tar.addfile(info)
    return buf.getvalue()
