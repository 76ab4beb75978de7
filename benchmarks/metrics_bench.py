"""What the metrics cost, with 1024 busy d-slots of one partitionable slot.

1. One scrape: an HTTP GET of /metrics from prometheus-client's server, in this
   process, as Prometheus does it (goal: under 10 ms).
2. The policy cycle as the daemon runs it with metrics on (the cycle, the histogram
   observation and the snapshot published after it) and off (the cycle alone), cycles
   interleaved so that both see the same machine (goal: under 5 % apart).
3. Publishing one snapshot alone (the only metrics work on the event loop): on a quiet
   machine, and after a slot changed (the slots aggregated anew).

    .venv/bin/python benchmarks/metrics_bench.py [--slots N] [--cycles N] [--scrapes N]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from policy_bench import build  # noqa: E402

from condorpy.clock import ManualClock  # noqa: E402
from condorpy.config import Config  # noqa: E402
from condorpy.startd.metrics import Metrics, slot_figures  # noqa: E402

SCRAPE_GOAL_MS = 10.0
OVERHEAD_GOAL = 0.05


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--slots", type=int, default=1024)
    ap.add_argument("--cycles", type=int, default=40)
    ap.add_argument("--scrapes", type=int, default=200)
    args = ap.parse_args()
    eng = build(args.slots)
    clock = ManualClock(10.0)
    cfg = Config.from_text("CONDORPY_METRICS_ADDRESS = 127.0.0.1:0\n", source="<bench>",
                           env={})
    m = Metrics.from_config(cfg, eng, clock)
    m.owner_activity(100000, 100000, 0.0)
    m.start()
    bound = m.bound
    assert bound is not None
    url = f"http://127.0.0.1:{bound[1]}/metrics"
    body = urllib.request.urlopen(url).read()
    dyn = [ln for ln in body.decode().splitlines()
           if ln.startswith('condorpy_slots{activity="Busy",state="Claimed",type="dynamic"}')]
    assert dyn and float(dyn[0].split()[-1]) == args.slots, dyn

    # 1. scrapes
    scrape = []
    for _ in range(args.scrapes):
        t = time.perf_counter()
        with urllib.request.urlopen(url) as r:
            r.read()
        scrape.append((time.perf_counter() - t) * 1000)
    med = statistics.median(scrape)
    print(f"scrape over HTTP, {args.slots} busy d-slots, {len(body)} bytes: median "
          f"{med:.2f} ms, p90 {sorted(scrape)[int(len(scrape) * 0.9)]:.2f} ms, min "
          f"{min(scrape):.2f} ms over {args.scrapes}; goal {SCRAPE_GOAL_MS:.0f} ms; "
          f"ratio to goal {med / SCRAPE_GOAL_MS:.2f}")

    # 3. one publish alone
    pub = []
    for i in range(args.cycles * 5):
        t = time.perf_counter()
        m.publish(float(i), args.slots)
        pub.append((time.perf_counter() - t) * 1000)
    pub_med = statistics.median(pub)
    agg = []
    for _ in range(args.cycles * 5):
        t = time.perf_counter()
        slot_figures(eng)
        agg.append((time.perf_counter() - t) * 1000)
    agg_med = statistics.median(agg)
    print(f"publish one snapshot (event loop), slots unchanged: median {pub_med:.3f} ms; "
          f"slots aggregated anew after a change: median {agg_med:.3f} ms more, "
          f"{agg_med * 1000 / args.slots:.2f} us per slot")

    # 2. cycles, on and off interleaved (CPU time: what the cycle costs)
    on: list[float] = []
    off: list[float] = []
    now = 20.0
    for i in range(args.cycles * 2):
        now += 5
        with_metrics = i % 2 == 0
        c = time.process_time()
        t0 = time.perf_counter()
        out = eng.cycle(now)
        if with_metrics:
            m.stats.policy_cycle(time.perf_counter() - t0, now)
            for o in out:
                m.observe(o)
            m.after_step(args.slots)
        (on if with_metrics else off).append((time.process_time() - c) * 1000)
        assert not out, out[:3]
    m.close()
    on_med, off_med = statistics.median(on), statistics.median(off)
    ratio = on_med / off_med - 1
    print(f"policy cycle, {args.slots} busy d-slots (cpu): metrics on median "
          f"{on_med:.2f} ms, off median {off_med:.2f} ms over {args.cycles} cycles each; "
          f"difference {ratio * 100:+.1f} %; goal under {OVERHEAD_GOAL * 100:.0f} %; "
          f"ratio to goal {abs(ratio) / OVERHEAD_GOAL:.2f}")


if __name__ == "__main__":
    main()
