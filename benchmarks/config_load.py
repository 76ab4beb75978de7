"""How long condorpy takes to read a configuration and to look knobs up.

Prints figures; asserts nothing. Run: .venv/bin/python benchmarks/config_load.py
"""

from __future__ import annotations

import time
from pathlib import Path

from condorpy.config import Config, DetectedFacts

ETC = Path(__file__).resolve().parents[1] / "etc"
FACTS = DetectedFacts(full_hostname="bench.example.org", cpus=64, cores=32,
                      physical_cpus=32, memory_mb=256000)


def _per_call(fn: object, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()  # type: ignore[operator]
    return (time.perf_counter() - start) / n


def main() -> None:
    text = (ETC / "condor_config").read_text() + "\n" + "\n".join(
        p.read_text() for p in sorted((ETC / "config.d").glob("*.example")))
    load = _per_call(lambda: Config.from_text(text, detected=FACTS), 50)
    print(f"read shipped config + all examples: {load * 1e3:8.2f} ms per load")
    cfg = Config.from_text(text, detected=FACTS)
    names = cfg.names()
    cold = _per_call(lambda: [Config.from_text(text, detected=FACTS).get("START")], 20)
    print(f"load + first START look-up:         {cold * 1e3:8.2f} ms")
    start = time.perf_counter()
    for name in names:
        cfg.get(name)
    first = (time.perf_counter() - start) / len(names)
    start = time.perf_counter()
    for name in names:
        cfg.get(name)
    again = (time.perf_counter() - start) / len(names)
    print(f"first expansion of {len(names)} knobs:    {first * 1e6:8.2f} us per knob")
    print(f"repeated look-up (cached):          {again * 1e6:8.2f} us per knob")
    print(f"ratio first/cached:                 {first / again:8.1f}x")


if __name__ == "__main__":
    main()
