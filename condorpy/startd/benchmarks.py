"""The machine benchmarks the startd runs for RUNBENCHMARKS when HTCondor's
``condor_mips`` and ``condor_kflops`` are not installed.

``python -m condorpy.startd.benchmarks mips`` prints ``Mips = N`` (millions of
Dhrystone-like integer operations per second), ``... kflops`` prints ``KFlops = N``
(thousands of floating-point operations per second solving a dense linear system, as
Linpack does), each followed by a ``--`` line, as HTCondor's programs do. The figures
are relative (they measure this interpreter on this machine), which is all the policy
uses them for.
"""

from __future__ import annotations

import sys
import time

_SECONDS = 0.3       # how long each measurement runs


def mips(seconds: float = _SECONDS) -> int:
    ops = 0
    a, b, c = 1, 2, 3
    end = time.perf_counter() + seconds
    start = time.perf_counter()
    while True:
        for _ in range(10000):
            # A Dhrystone-like mix: assignments, integer arithmetic, comparisons.
            a = (b + c) & 0xFFFF
            b = a ^ (c << 1)
            c = (a * 3 + b) % 1009
            if a > b:
                c += 1
        ops += 10000 * 8
        now = time.perf_counter()
        if now >= end:
            break
    return max(1, int(ops / (now - start) / 1e6))


def kflops(seconds: float = _SECONDS) -> int:
    n = 40
    flops = 0
    start = time.perf_counter()
    end = start + seconds
    seed = 1325
    while True:
        a = []
        for _i in range(n):
            row = []
            for _j in range(n):
                seed = (3125 * seed) % 65536
                row.append((seed - 32768.0) / 16384.0)
            a.append(row)
        b = [sum(r) for r in a]
        # Gaussian elimination with partial pivoting, then back substitution.
        for k in range(n):
            p = max(range(k, n), key=lambda i: abs(a[i][k]))
            a[k], a[p] = a[p], a[k]
            b[k], b[p] = b[p], b[k]
            pivot = a[k][k] or 1e-12
            for i in range(k + 1, n):
                f = a[i][k] / pivot
                ri, rk = a[i], a[k]
                for j in range(k, n):
                    ri[j] -= f * rk[j]
                b[i] -= f * b[k]
        x = [0.0] * n
        for i in range(n - 1, -1, -1):
            s = b[i] - sum(a[i][j] * x[j] for j in range(i + 1, n))
            x[i] = s / (a[i][i] or 1e-12)
        flops += (2 * n ** 3) // 3 + 2 * n ** 2
        now = time.perf_counter()
        if now >= end:
            break
    return max(1, int(flops / (now - start) / 1e3))


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0].lower() not in ("mips", "kflops"):
        print("usage: python -m condorpy.startd.benchmarks mips|kflops", file=sys.stderr)
        return 2
    if argv[0].lower() == "mips":
        print(f"Mips = {mips()}")
    else:
        print(f"KFlops = {kflops()}")
    print("--")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
