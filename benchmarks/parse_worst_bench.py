"""The worst cases of untrusted ClassAd text (issue 25): seconds to parse, compile and
evaluate, or to refuse (classad/parser_limits.py), and the length of the error.

    PYTHONPATH=. .venv/bin/python benchmarks/parse_worst_bench.py

Run it with another checkout first on PYTHONPATH for the figures before.
"""
import time
from condorpy.classad import ClassAd, parse_expr
from condorpy.errors import CondorpyError
ad = ClassAd.parse_old("a = 1")
EXPRS = {
    "parens_100k": "(" * 100_000 + "1" + ")" * 100_000,
    "parens_9k": "(" * 9_000 + "1" + ")" * 9_000,
    "cond_100k": "a ? " * 100_000 + "1" + " : 2" * 100_000,
    "string_50MB": '"' + "a" * 50_000_000 + '"',
    "list_1M": "{" + ",".join(["1"] * 1_000_000) + "}",
    "list_100k": "{" + ",".join(["1"] * 100_000) + "}",
    "sum_1M": "+".join(["a"] * 1_000_000),
    "sum_100k": "+".join(["a"] * 100_000),
    "sum_9k": "+".join(["a"] * 9_000),
}
ADS = {
    "old_ad_string_50MB": 'A = "' + "a" * 50_000_000 + '"\n',
    "old_ad_1M_lines": "".join(f"a{i} = {i}\n" for i in range(1_000_000)),
    "old_ad_100k_lines": "".join(f"a{i} = {i}\n" for i in range(100_000)),
}
def run(name, fn):
    t0 = time.perf_counter()
    try:
        fn(); out = "ok"
    except CondorpyError as exc:
        out = f"refused ({len(str(exc))} chars): " + str(exc)[:70].replace("\n", " ")
    except BaseException as exc:
        out = f"CRASH {type(exc).__name__}"
    print(f"{name:22s} {time.perf_counter()-t0:7.3f} s {out}", flush=True)
for name, text in EXPRS.items():
    run(name, lambda: ad.eval_expr(parse_expr(text)))
for name, text in ADS.items():
    run(name, lambda: ClassAd.parse_old(text, source="submitted job ad 0"))
