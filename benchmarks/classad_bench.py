"""condorpy's ClassAd engine against HTCondor's (classad2) on the same work.

Work: the ``use POLICY : Desktop`` expressions (START, SUSPEND, CONTINUE, PREEMPT,
WANT_SUSPEND, KILL), parsed once, evaluated against a slot ad (MY) and a job ad
(TARGET); parsing those expressions from text, and long or generated ones with a
distinct literal appended on every call (no cache can answer); reading a 108-attribute
job ad as ``condor_q -l`` prints it and matching it against a slot. Prints microseconds
per operation for both engines and the ratio condorpy / classad2 (below 1.0: condorpy is
faster). Parsing is measured without condorpy's parse cache (``parse_expr_uncached``);
one extra row shows a cache hit, and the "cold" rows parse with the parser's memo of
pieces emptied before every parse (what a fresh process or a text of unseen names sees).

    .venv/bin/python benchmarks/classad_bench.py [--refresh] [--seconds S] [--compare REV]

``--compare REV`` measures the condorpy of a git revision (``git archive``) beside this
tree's in the same run: each side runs in a process of its own, and the rounds of a row
alternate between them and classad2 (best round of each), with the machine's load
printed before and after.

``--refresh`` re-reads the expressions from HTCondor's own configuration templates
(via htcondor2.param, CONDOR_CONFIG pointing at ``use POLICY : Desktop``) and prints
them; the copies below were taken that way from htcondor 25.14.1.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]

DESKTOP: dict[str, str] = {
    "START": "((KeyboardIdle > 15 * 60) && ( ((LoadAvg - CondorLoadAvg) <= 0.3) || (State != \"Unclaimed\" && State != \"Owner\")) )",
    "SUSPEND": "((KeyboardIdle < 60) || ( (IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0) > 120) && ifThenElse(JobStart =!= UNDEFINED, (time() - JobStart), 0) > 90))",
    "CONTINUE": "(((LoadAvg - CondorLoadAvg) <= 0.3) && ((time() - EnteredCurrentActivity) > 10) && (KeyboardIdle > 5 * 60))",
    "PREEMPT": "(((Activity == \"Suspended\") && ((time() - EnteredCurrentActivity) > 10 * 60)) || (SUSPEND && (WANT_SUSPEND == False)))",
    "WANT_SUSPEND": "((TARGET.ImageSize <  (15 * 1024)) || ((KeyboardIdle < 60) == False) || (TARGET.JobUniverse == 5) ) && ( ((KeyboardIdle < 60) || ( (IfThenElse(CpuBusyValue is 1, time() - CpuBusyTime, 0) > 120) && ifThenElse(JobStart =!= UNDEFINED, (time() - JobStart), 0) > 90)))",
    "KILL": "False",
}


# A job ad as ``condor_q -l`` prints it (old format, 108 attributes): mostly literals,
# a few expressions (Requirements, PeriodicHold, RequestMemory, ...). "4211" (the
# cluster id, in several attributes) is replaced by a counter so no two reads are alike.
JOB_AD = """\
Arguments = "-n 100 --seed 42 input.dat"
AutoClusterAttrs = "_condor_RequestCpus,_condor_RequestDisk,_condor_RequestGPUs,_condor_RequestMemory,RequestCpus,RequestDisk,RequestGPUs,RequestMemory,JobUniverse,LastCheckpointPlatform,NumCkpts,MachineLastMatchTime,Rank,Requirements,DiskUsage,FileSystemDomain"
AutoClusterId = 17
BufferBlockSize = 32768
BufferSize = 524288
ClusterId = 4211
Cmd = "/home/alice/analysis/run_analysis.sh"
CommittedSlotTime = 0
CommittedSuspensionTime = 0
CommittedTime = 0
CompletionDate = 0
CondorPlatform = "$CondorPlatform: X86_64-Ubuntu_22.04 $"
CondorVersion = "$CondorVersion: 25.14.1 2025-10-01 BuildID: 812345 PackageID: 25.14.1-1 $"
CoreSize = 0
CpusProvisioned = 1
CumulativeRemoteSysCpu = 0.0
CumulativeRemoteUserCpu = 0.0
CumulativeSlotTime = 0
CumulativeSuspensionTime = 0
CurrentHosts = 0
DiskProvisioned = 1048576
DiskUsage = 2500
DiskUsage_RAW = 2401
EncryptExecuteDirectory = false
EnteredCurrentStatus = 1732370000
Environment = "OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1 HOME=/home/alice"
Err = "logs/run.4211.0.err"
ExecutableSize = 25
ExecutableSize_RAW = 23
ExitBySignal = false
ExitStatus = 0
FileSystemDomain = "cs.example.edu"
GlobalJobId = "submit.cs.example.edu#4211.0#1732370000"
ImageSize = 12500
ImageSize_RAW = 12288
In = "/dev/null"
Iwd = "/home/alice/analysis"
JobBatchName = "analysis-sweep"
JobCurrentStartDate = 1732370100
JobLeaseDuration = 2400
JobNotification = 0
JobPrio = 0
JobRunCount = 1
JobStartDate = 1732370100
JobStatus = 2
JobSubmitMethod = 0
JobUniverse = 5
KillSig = "SIGTERM"
LastHoldReasonCode = 0
LastJobLeaseRenewal = 1732370400
LastJobStatus = 1
LastMatchTime = 1732370090
LastSuspensionTime = 0
LeaveJobInQueue = false
Log = "logs/run.4211.log"
MachineAttrCpus0 = 1
MachineAttrSlotWeight0 = 1
MaxHosts = 1
MemoryProvisioned = 2048
MemoryUsage = ((ResidentSetSize + 1023) / 1024)
MinHosts = 1
MyType = "Job"
NiceUser = false
NumCkpts = 0
NumCkpts_RAW = 0
NumJobCompletions = 0
NumJobMatches = 1
NumJobStarts = 1
NumRestarts = 0
NumShadowStarts = 1
NumSystemHolds = 0
OnExitHold = false
OnExitRemove = true
Out = "logs/run.4211.0.out"
Owner = "alice"
PeriodicHold = (JobStatus == 2 && (time() - JobCurrentStartDate) > 86400) || (MemoryUsage > 2 * RequestMemory)
PeriodicRelease = (HoldReasonCode == 34 && NumJobStarts < 5) && ((time() - EnteredCurrentStatus) > 600)
PeriodicRemove = (JobStatus == 5 && (time() - EnteredCurrentStatus) > 7 * 24 * 3600)
ProcId = 0
QDate = 1732369900
Rank = 0.0
RemoteSysCpu = 0.0
RemoteUserCpu = 0.0
RemoteWallClockTime = 0.0
RequestCpus = 1
RequestDisk = DiskUsage
RequestMemory = ifThenElse(MemoryUsage =!= undefined,MemoryUsage,(ImageSize + 1023) / 1024)
Requirements = (TARGET.Arch == "X86_64") && (TARGET.OpSys == "LINUX") && (TARGET.Disk >= RequestDisk) && (TARGET.Memory >= RequestMemory) && (TARGET.Cpus >= RequestCpus) && ((TARGET.FileSystemDomain == MY.FileSystemDomain) || (TARGET.HasFileTransfer))
ResidentSetSize = 180000
ResidentSetSize_RAW = 176512
RootDir = "/"
ServerTime = 1732370500
ShadowBday = 1732370095
ShouldTransferFiles = "IF_NEEDED"
StreamErr = false
StreamOut = false
SubmitEventNotes = "sweep point 17"
TargetType = "Machine"
TotalSuspensions = 0
TransferIn = false
TransferInputSizeMB = 0
User = "alice@cs.example.edu"
UserLog = "/home/alice/analysis/logs/run.4211.log"
WantCheckpoint = false
WantRemoteIO = true
WantRemoteSyscalls = false
WhenToTransferOutput = "ON_EXIT"
x509UserProxyExpiration = 1732456300
"""


def refresh() -> dict[str, str]:
    with tempfile.TemporaryDirectory() as d:
        cfg = os.path.join(d, "condor_config")
        with open(cfg, "w") as f:
            f.write("use POLICY : Desktop\n")
        code = ("import htcondor2, json; print(json.dumps({k: htcondor2.param.get(k) for k in "
                + repr(list(DESKTOP)) + "}))")
        out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "CONDOR_CONFIG": cfg},
                             capture_output=True, text=True, check=True).stdout
    return dict(json.loads(out))


def slot_attrs(now: int) -> dict[str, Any]:
    return {
        "Name": "slot1@ep.example.org", "State": "Claimed", "Activity": "Busy",
        "KeyboardIdle": 1200, "LoadAvg": 1.02, "CondorLoadAvg": 0.99, "CpuBusyTime": 0,
        "CpuBusyValue": 0, "JobStart": now - 300, "EnteredCurrentActivity": now - 300,
        "Memory": 4096, "Cpus": 1,
    }


def job_attrs() -> dict[str, Any]:
    return {"ImageSize": 12000, "JobUniverse": 5, "RequestMemory": 2048, "Owner": "alice"}


def _calibrate(fn: Callable[[], Any], budget: float) -> int:
    n = 50
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if time.perf_counter() - t0 >= budget:
            return n
        n *= 2


def _run(fn: Callable[[], Any], n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    return time.perf_counter() - t0


def cold_clearer() -> Callable[[], None]:
    """What empties the parser's memo of pieces, in this tree or an older revision's."""
    from condorpy.classad import quickparse
    clear = getattr(quickparse, "clear_memo", None)
    if clear is not None:
        return clear  # type: ignore[no-any-return]
    memo, start = quickparse._MEMO, quickparse._MEMO_START  # (revisions before clear_memo)
    return lambda: (memo.clear(), memo.update(start))  # type: ignore[func-returns-value]


Row = tuple[str, Callable[[], Any], Callable[[], Any]]


def build_rows(exprs: dict[str, str]) -> list[Row]:
    """(label, condorpy's operation, classad2's) for every row, in this process's
    condorpy."""
    import classad2
    from condorpy.classad import CallContext, ClassAd, parse_expr
    from condorpy.classad.expr import parse_expr_uncached
    from condorpy.errors import ClassAdSyntaxError

    now = int(time.time())
    c_slot, c_job = ClassAd(slot_attrs(now)), ClassAd(job_attrs())
    r_slot, r_job = classad2.ClassAd(slot_attrs(now)), classad2.ClassAd(job_attrs())
    for name, text in exprs.items():
        c_slot.set_expr(name, text)
        r_slot[name] = classad2.ExprTree(text)
    ctx = CallContext()
    rows: list[Row] = []

    def row(label: str, ours: Callable[[], Any], ref: Callable[[], Any]) -> None:
        rows.append((label, ours, ref))

    for name, text in exprs.items():
        ce, re_ = parse_expr(text), classad2.ExprTree(text)
        cv = ce.evaluate(c_slot, c_job, ctx)
        rv = re_.eval(r_slot, r_job)
        if cv != rv:
            print(f"  ! {name}: condorpy {cv!r} classad2 {rv!r}", file=sys.stderr)
        row(f"eval {name}", lambda ce=ce: ce.evaluate(c_slot, c_job, ctx),
            lambda re_=re_: re_.eval(r_slot, r_job))
    # START against the slot ad alone (no TARGET), as the reference notes quote it
    cs, rs = parse_expr(exprs["START"]), classad2.ExprTree(exprs["START"])
    row("eval START, MY only", lambda: cs.evaluate(c_slot, None, ctx), lambda: rs.eval(r_slot))
    for name, text in exprs.items():
        row(f"parse {name}", lambda text=text: parse_expr_uncached(text),
            lambda text=text: classad2.ExprTree(text))
    # the same with nothing remembered of earlier parses
    clear = cold_clearer()

    def cold(text: str) -> Any:
        clear()
        return parse_expr_uncached(text)

    for name, text in exprs.items():
        if len(text) >= 100:
            row(f"parse {name}, cold", lambda text=text: cold(text),
                lambda text=text: classad2.ExprTree(text))
    # what repeated parsing of the same text costs through parse_expr (its cache)
    start = exprs["START"]
    row("parse START, cache hit", lambda: parse_expr(start), lambda: classad2.ExprTree(start))
    c_job.set_expr("Requirements", "TARGET.Memory >= RequestMemory && TARGET.Cpus >= 1")
    r_job["Requirements"] = classad2.ExprTree("TARGET.Memory >= RequestMemory && TARGET.Cpus >= 1")
    req_c = c_job.lookup("Requirements")
    req_r = classad2.ExprTree("TARGET.Memory >= RequestMemory && TARGET.Cpus >= 1")
    assert req_c is not None
    row("eval job Requirements", lambda: req_c.evaluate(c_job, c_slot, ctx),
        lambda: req_r.eval(r_job, r_slot))
    # Parsing long texts nobody has seen before: each call appends a distinct literal, so
    # neither condorpy's cache nor any in the reference can answer.
    counter = itertools.count()
    longs = {f"long {k}": t for k, t in exprs.items() if len(t) >= 100}
    longs["gen 40-term mix"] = " && ".join(
        f"(TARGET.Attr{i} >= {i} * 1024 || ifThenElse(Name{i} =?= undefined, {i}.5, x) != \"s{i}\")"
        for i in range(10))
    longs["gen 300 owners"] = " || ".join(f'Owner == "user{i}"' for i in range(300))
    for label, text in longs.items():
        try:
            parse_expr_uncached(text)
        except ClassAdSyntaxError as e:  # (before condorpy took long chains)
            print(f"  ! parse {label}: condorpy refuses it: {e.reason}", file=sys.stderr)
            continue
        row(f"parse {label}", lambda text=text: parse_expr_uncached(f"{text} || {next(counter)}"),
            lambda text=text: classad2.ExprTree(f"{text} || {next(counter)}"))
    for label in ("gen 40-term mix", "gen 300 owners"):
        text = longs[label]
        row(f"parse {label}, cold", lambda text=text: cold(f"{text} || {next(counter)}"),
            lambda text=text: classad2.ExprTree(f"{text} || {next(counter)}"))
    # Reading a whole job ad and matching it: the slot's START and the job's
    # Requirements evaluated against it. "same exprs": only the ids vary (the jobs of a
    # submit file); "new exprs": Requirements and PeriodicHold are new texts as well.
    mslot = dict(slot_attrs(now), Arch="X86_64", OpSys="LINUX", Disk=10 ** 8,
                 FileSystemDomain="cs.example.edu", HasFileTransfer=True)
    m_c, m_r = ClassAd(mslot), classad2.ClassAd(mslot)
    m_c.set_expr("START", exprs["START"])
    m_r["START"] = classad2.ExprTree(exprs["START"])

    def job_text(fresh: bool) -> str:
        i = str(next(counter))
        text = JOB_AD.replace("4211", i)
        if fresh:
            text = text.replace(") || (", f") || ({i} < 0) || (")
        return text

    def ours(fresh: bool) -> Any:
        job = ClassAd.parse_old(job_text(fresh))
        return m_c.evaluate("START", job, ctx), job.evaluate("Requirements", m_c, ctx)

    def ref(fresh: bool) -> Any:
        job = classad2.parseOne(job_text(fresh))
        return (m_r["START"].eval(m_r, job), job["Requirements"].eval(job, m_r))

    for fresh in (False, True):
        if ours(fresh) != ref(fresh):
            print(f"  ! job ad: condorpy {ours(fresh)!r} classad2 {ref(fresh)!r}",
                  file=sys.stderr)
        row(f"read job ad+match, {'new' if fresh else 'same'} exprs",
            lambda fresh=fresh: ours(fresh), lambda fresh=fresh: ref(fresh))
    return rows


def worker(exprs: dict[str, str]) -> None:
    """Serve the parent: "cal I W S" (calls of row I's side W, 0 ours or 1 classad2,
    that take S seconds) and "run I W N" (seconds for N calls); the labels first."""
    rows = build_rows(exprs)
    print(json.dumps([label for label, _, _ in rows]), flush=True)
    for line in sys.stdin:
        cmd, i, w, arg = line.split()
        fn = rows[int(i)][1 + int(w)]
        if cmd == "cal":
            print(_calibrate(fn, float(arg)), flush=True)
        else:
            print(_run(fn, int(arg)), flush=True)


class Side:
    """A worker process running one checkout's condorpy."""

    def __init__(self, code: Path, exprs: dict[str, str]) -> None:
        env = dict(os.environ, PYTHONPATH=str(code))
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--worker", json.dumps(exprs)], env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.labels: list[str] = json.loads(self.ask(None))

    def ask(self, line: str | None) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        if line is not None:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
        return self.proc.stdout.readline()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait()


def measure(sides: list[Side], seconds: float, rounds: int = 7,
            only: str | None = None) -> list[tuple[str, list[float]]]:
    """For each row: microseconds per call of each side's condorpy, then classad2's
    (in the first side's process), timed in alternating rounds, best round of each: the
    machine is shared, and alternating exposes all to the same disturbances."""
    out = []
    main = sides[0]
    for i, label in enumerate(main.labels):
        if only and only not in label:
            continue
        runs: list[tuple[Side, int, int]] = []
        for side in sides:
            if label in side.labels:
                j = side.labels.index(label)
                runs.append((side, j, int(side.ask(f"cal {j} 0 {seconds / rounds / 2}"))))
        runs.append((main, i, int(main.ask(f"cal {i} 1 {seconds / rounds / 2}"))))
        best = [float("inf")] * len(runs)
        for _ in range(rounds):
            for k, (side, j, n) in enumerate(runs):
                w = 1 if k == len(runs) - 1 else 0
                best[k] = min(best[k], float(side.ask(f"run {j} {w} {n}")) / n)
        us = [b * 1e6 for b in best]
        if len(runs) < len(sides) + 1:  # a row the older revision lacks
            us = [float("nan")] * (len(sides) + 1 - len(runs)) + us
        out.append((label, us))
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--refresh", action="store_true")
    ap.add_argument("--seconds", type=float, default=0.3, help="time per measurement")
    ap.add_argument("--compare", metavar="REV", help="a git revision to measure beside")
    ap.add_argument("--rows", metavar="TEXT", help="only the rows whose label holds TEXT")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(json.loads(args.worker))
        return 0
    exprs = DESKTOP
    if args.refresh:
        exprs = refresh()
        print(json.dumps(exprs, indent=1))
    print("load:", os.getloadavg())
    with tempfile.TemporaryDirectory() as old:
        codes: list[tuple[str, Path]] = []
        if args.compare:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.compare,
                                      "condorpy"], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", old], input=archive.stdout, check=True)
            codes.append((args.compare, Path(old)))
        codes.insert(0, ("this tree", ROOT))
        sides = [Side(code, exprs) for _, code in codes]
        try:
            rows = measure(sides, args.seconds, only=args.rows)
        finally:
            for side in sides:
                side.close()
    names = [label for label, _ in codes]
    head = f"{'operation':<36}{'condorpy us':>12}{'classad2 us':>12}{'ratio':>8}"
    if len(codes) > 1:
        head = (f"{'operation':<36}{names[1][:10] + ' us':>14}{'this us':>10}{'classad2 us':>12}"
                f"{'ratio then':>11}{'ratio now':>10}")
    print(head)
    for label, us in rows:
        ref = us[-1]
        if len(codes) > 1:
            print(f"{label:<36}{us[1]:>14.2f}{us[0]:>10.2f}{ref:>12.2f}{us[1] / ref:>11.2f}"
                  f"{us[0] / ref:>10.2f}")
        else:
            print(f"{label:<36}{us[0]:>12.2f}{ref:>12.2f}{us[0] / ref:>8.2f}")
    for k, name in enumerate(names):
        ev = [us[k] / us[-1] for label, us in rows if label.startswith("eval")]
        pa = [us[k] / us[-1] for label, us in rows
              if label.startswith("parse") and "cache" not in label and us[k] == us[k]]
        rd = [us[k] / us[-1] for label, us in rows if label.startswith("read")]
        print(f"{name}: worst ratio eval {max(ev, default=0):.2f}  parse "
              f"{max(pa, default=0):.2f}  read {max(rd, default=0):.2f}"
              "  (goal: eval <= 0.5, every parse row <= 1.0)")
    print("load:", os.getloadavg())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
