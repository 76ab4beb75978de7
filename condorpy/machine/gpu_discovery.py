"""``python -m condorpy.machine.gpu_discovery [options]``: what the startd would detect.

Takes condor_gpu_discovery's arguments and prints its output, so an administrator can
check GPU detection (or a ``-simulate`` set-up) without starting the daemon.
"""

from __future__ import annotations

import sys

from condorpy.machine.gpus import discover
from condorpy.machine.roots import HostRoots


def main(argv: list[str]) -> int:
    try:
        sys.stdout.write(discover(argv, HostRoots()))
    except ValueError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
