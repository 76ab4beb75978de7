"""The harness of the policy differential (test_policy_differential.py: the owner's and
the schedd's part; test_policy_admin_differential.py: the admin tools' and the
negotiator's): the startd policy as HTCondor 23.9.6's own condor_startd runs it, and
condorpy's.

One reference pool, two execution points in it: HTCondor's condor_startd (the pool's
own) and a condorpy daemon, both given the same policy knobs. Owner activity reaches
both the same way, through a startd cron job that reads one file (``OwnerActive``,
``OwnerPreempt``), so a scenario's timeline is a series of writes to that file and of
the pool's admin tools (condor_vacate, condor_drain) sent to both. Each scenario submits
one job to each side with condor_submit, waits until both run, plays its timeline and
then compares, side by side:

- the (state, activity) path of the job's slot, from the StartLog of each
  (HTCondor's "Changing state and activity" lines, condorpy's transition lines);
- the delay of each step from the timeline's start (within a tolerance: both poll
  every second, the cron job runs every second);
- the job's user-log events (their codes, in order);
- the JobStatus values the schedd showed, in order.

Where condorpy differs on purpose the scenario says so (docs/policy.md lists them);
everything else must agree.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pytest

from tests.pool.refpool import PoolUnavailable, RefPool
from tests.startd.daemon_helpers import Daemon, wait_for

HOST = "condorpy-policy.example"
# Both sides: the owner's activity comes from a file, through a startd cron job that
# runs every second; policy is evaluated every second.
POLICY = """
STARTD_CRON_JOBLIST = OWNER
STARTD_CRON_OWNER_EXECUTABLE = /bin/cat
STARTD_CRON_OWNER_ARGS = {owner}
STARTD_CRON_OWNER_PERIOD = 1
STARTD_CRON_OWNER_MODE = Periodic
POLLING_INTERVAL = 1
UPDATE_INTERVAL = 5
START = (OwnerActive =!= True) && (OwnerPreempt =!= True) && (OwnerBlocks =!= True)
# (both default to False: the owner's slot stays Unclaimed)
IS_OWNER = OwnerBlocks =?= True
# PREEMPT is evaluated for a busy job only when WANT_SUSPEND is false (both startds)
WANT_SUSPEND = OwnerActive =?= True
SUSPEND = OwnerActive =?= True
CONTINUE = OwnerActive =!= True
PREEMPT = OwnerPreempt =?= True
RANK = ifThenElse(TARGET.PolicyRank =?= True, 10, 0)
WANT_VACATE = True
KILL = OwnerKills =?= True
# each job says how long it may retire (+PolicyRetire): one configuration for all
MAXJOBRETIREMENTTIME = ifThenElse(isUndefined(TARGET.PolicyRetire), 3600, TARGET.PolicyRetire)
# and how long it may take to vacate (+PolicyVacate)
MachineMaxVacateTime = ifThenElse(isUndefined(TARGET.PolicyVacate), 2, TARGET.PolicyVacate)
"""

CONDORPY = """
COLLECTOR_HOST = {collector}
NETWORK_INTERFACE = 127.0.0.1
FULL_HOSTNAME = {host}
UID_DOMAIN = vm
FILESYSTEM_DOMAIN = vm
SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_DEFAULT_INTEGRITY = REQUIRED
ALLOW_ADMINISTRATOR = *
use FEATURE : PartitionableSlot
NUM_CPUS = 2
MEMORY = 2048
"""

SIDES = ("htcondor", "condorpy")
# what each side's job asks for, so that the negotiator gives each its own startd
WHERE = {"htcondor": '!regexp("condorpy", TARGET.CondorVersion)',
         "condorpy": 'regexp("condorpy", TARGET.CondorVersion)'}
TOLERANCE_S = 3.0


@dataclass
class Side:
    name: str
    address: str
    startlog: Callable[[], str]
    jobdir: Path
    cluster: int = 0
    statuses: list[str] = field(default_factory=list)
    more: list[int] = field(default_factory=list)     # jobs a timeline submitted

    def userlog(self) -> str:
        try:
            return (self.jobdir / "job.log").read_text()
        except OSError:
            return ""

    def events(self) -> list[str]:
        """The user log's event codes, but image-size updates (006): when they come is
        the starter's update cadence, not the policy's."""
        return [e for e in re.findall(r"^(\d{3}) \(", self.userlog(), re.M) if e != "006"]


@dataclass
class Pools:
    pool: RefPool
    daemon: Daemon
    owner: Path
    schedd_stopped: bool = False      # (condor_q would hang: the queue is not watched)

    def set_owner(self, active: bool = False, preempt: bool = False,
                  blocks: bool = False, kills: bool = False) -> None:
        tmp = self.owner.with_suffix(".tmp")
        tmp.write_text(f"OwnerActive = {active}\nOwnerPreempt = {preempt}\n"
                       f"OwnerBlocks = {blocks}\nOwnerKills = {kills}\n")
        tmp.chmod(0o644)
        os.replace(tmp, self.owner)


# one step of a scenario's timeline, done to both sides
Action = Callable[[Pools, list[Side]], None]


@pytest.fixture(scope="module")
def pools() -> Iterator[Pools]:
    # a pool of its own (an overlay of the built chroot), started with the policy
    worker = os.environ.get("PYTEST_XDIST_WORKER") or "main"
    pool = RefPool(instance=f"{worker}-policy")
    try:
        owner = pool.shared / "policy-owner"
        pool.start(extra=POLICY.format(owner=owner))
    except PoolUnavailable as exc:
        if os.environ.get("CONDORPY_REQUIRE_POOL") == "1":
            pytest.fail(f"reference pool unavailable: {exc}")
        pytest.skip(f"reference pool unavailable: {exc}")
    base = Path(pool.shared.parent / f"{pool.shared.name}-policy-daemon")
    shutil.rmtree(base, ignore_errors=True)
    daemon = Daemon(base, CONDORPY.format(collector=pool.collector, host=HOST)
                    + POLICY.format(owner=owner), cpus=2)
    p = Pools(pool, daemon, owner)
    p.set_owner()
    try:
        daemon.start()
        # both execution points in the collector before any job is submitted
        wait_for(lambda: len(pool.condor("condor_status", "-startd", "-af", "Name",
                                         check=False).stdout.split()) >= 2, 60,
                 lambda: pool.condor("condor_status", "-any", check=False).stdout
                 + daemon.output())
        yield p
    finally:
        daemon.stop()
        daemon.kill_leftovers()
        pool.close()
        shutil.rmtree(base, ignore_errors=True)


# ------------------------------------------------------------------ the StartLogs
_STAMP = r"(\d\d/\d\d/\d\d \d\d:\d\d:\d\d)(?:\.\d+)?"
_HTC = re.compile(_STAMP + r" (?:\(.*?\) )?(slot\d+(?:_\d+)?): Changing "
                  r"(state and activity|state|activity): (\S+) -> (\S+)")
_CPY = re.compile(_STAMP + r" (slot\d+(?:_\d+)?): (\w+)/(\w+) \(transition (\w+)")


def _when(stamp: str) -> float:
    return datetime.strptime(stamp, "%m/%d/%y %H:%M:%S").timestamp()


def htcondor_path(text: str, since: float) -> list[tuple[float, str, str]]:
    """(time, slot, State/Activity) for every change in HTCondor's StartLog."""
    where: dict[str, list[str]] = {}
    out = []
    for line in text.splitlines():
        m = _HTC.match(line)
        if not m:
            continue
        stamp, slot, what, old, new = m.groups()
        # every slot starts Owner/Idle, and a partitionable slot logs only its state
        # changes until a drain: its activity is Idle until a line says otherwise
        cur = where.setdefault(slot, ["Owner", "Idle"])
        if what == "state and activity":
            cur[:] = new.split("/")
        elif what == "state":
            cur[0] = new
        else:
            cur[1] = new
        t = _when(stamp)
        if t >= since:
            out.append((t, slot, "/".join(cur)))
    return out


def condorpy_path(text: str, since: float) -> list[tuple[float, str, str]]:
    out = []
    for line in text.splitlines():
        m = _CPY.match(line)
        if m and _when(m.group(1)) >= since:
            out.append((_when(m.group(1)), m.group(2), f"{m.group(3)}/{m.group(4)}"))
    return out


def job_path(changes: list[tuple[float, str, str]]) -> list[tuple[float, str]]:
    """The dynamic slots' path, from the job's start on: each d-slot's claim, run and
    end (HTCondor's Owner -> Delete of a d-slot left out: it is the d-slot's removal,
    which condorpy does without a state)."""
    out = []
    for t, slot, sa in changes:
        if "_" not in slot or sa.startswith("Delete"):
            continue
        if sa.split("/")[0] in ("Unclaimed", "Matched"):
            continue
        out.append((t, sa))
    return out


def pslot_path(changes: list[tuple[float, str, str]]) -> list[tuple[float, str]]:
    """The partitionable slot's path (IS_OWNER, draining)."""
    return [(t, sa) for t, slot, sa in changes if slot == "slot1"]


# ------------------------------------------------------------------ scenarios
SLEEP = "executable = /bin/sleep\narguments = 600"
# a job that ignores SIGTERM: only the hard kill ends it
STUBBORN = ("executable = /bin/sh\n"
            "arguments = \"-c 'trap : TERM; while true; do sleep 1; done'\"")


def submit_job(pools: Pools, side: Side, job: str, extra: str, log: str = "job.log") -> int:
    side.jobdir.mkdir(parents=True, exist_ok=True)
    side.jobdir.chmod(0o1777)
    (side.jobdir / "job.sub").write_text(f"""\
{job}
log = {log}
should_transfer_files = NO
requirements = {WHERE[side.name]}
{extra}
queue
""")
    res = pools.pool.condor("condor_submit", "job.sub", user="alice", cwd=str(side.jobdir))
    m = re.search(r"submitted to cluster (\d+)", res.stdout)
    assert m, res.stdout
    return int(m.group(1))


def _status(pools: Pools, side: Side) -> str:
    res = pools.pool.condor("condor_q", str(side.cluster), "-af", "JobStatus", check=False)
    return res.stdout.strip()


def _watch(pools: Pools, sides: list[Side]) -> None:
    if pools.schedd_stopped:
        return
    for s in sides:
        st = _status(pools, s)
        if st and (not s.statuses or s.statuses[-1] != st):
            s.statuses.append(st)


def htcondor_address(pool: RefPool) -> str:
    res = pool.condor("condor_status", "-startd", "-const",
                      '!regexp("condorpy", CondorVersion)', "-af", "MyAddress")
    return res.stdout.split()[0]


def condorpy_address(d: Daemon) -> str:
    m = re.search(r"as (<127\.0\.0\.1:\d+\?[^>]*noUDP>)", d.whole_log())
    assert m, d.output()
    return m.group(1)


@dataclass
class Result:
    path: dict[str, list[tuple[float, str]]]
    events: dict[str, list[str]]
    statuses: dict[str, list[str]]
    pslot: dict[str, list[tuple[float, str]]]


def run(pools: Pools, name: str, submit_extra: str,
        timeline: list[tuple[float, Action]],
        done: Callable[[Side], bool], settle: float = 3.0, job: str = SLEEP,
        cleanup: tuple[Action, ...] = ()) -> Result:
    """Submit one job to each side, wait until both run, play ``timeline`` (seconds
    from its start, an action on both sides), wait until ``done`` holds for both, and
    return what each side did."""
    pool, daemon = pools.pool, pools.daemon
    pools.set_owner()
    root = pool.shared / f"policy-{name}"
    shutil.rmtree(root, ignore_errors=True)
    sides = [Side("htcondor", htcondor_address(pool),
                  lambda: pool.log("StartLog"), root / "htcondor"),
             Side("condorpy", condorpy_address(daemon),
                  lambda: (daemon.state / "log" / "StartLog").read_text(errors="replace"),
                  root / "condorpy")]
    try:
        for s in sides:
            s.cluster = submit_job(pools, s, job, submit_extra)

        def running() -> bool:
            _watch(pools, sides)
            return all("001" in s.events() and s.statuses[-1:] == ["2"] for s in sides)
        wait_for(running, 120, lambda: _why(pools, sides))
        # a second whole to start on: the StartLogs stamp seconds
        time.sleep(1.0 - time.time() % 1.0)
        t0 = time.time()
        for at, action in timeline:
            while time.time() < t0 + at:
                _watch(pools, sides)
                time.sleep(0.2)
            action(pools, sides)

        def finished() -> bool:
            _watch(pools, sides)
            return all(done(s) for s in sides)
        wait_for(finished, 60, lambda: _why(pools, sides))
        end = time.time() + settle
        while time.time() < end:
            _watch(pools, sides)
            time.sleep(0.2)
        since = t0 - 1
        changes = {"htcondor": htcondor_path(sides[0].startlog(), since),
                   "condorpy": condorpy_path(sides[1].startlog(), since)}

        def rel(path: list[tuple[float, str]]) -> list[tuple[float, str]]:
            return [(round(t - t0), sa) for t, sa in path]
        result = Result({k: rel(job_path(v)) for k, v in changes.items()},
                        {s.name: s.events() for s in sides},
                        {s.name: s.statuses for s in sides},
                        {k: rel(pslot_path(v)) for k, v in changes.items()})
        print(f"{name}: {result}")      # shown with a failure
        return result
    finally:
        for action in cleanup:
            action(pools, sides)
        pools.set_owner()
        for s in sides:
            for cluster in [s.cluster, *s.more]:
                if cluster:
                    pool.condor("condor_rm", str(cluster), check=False)
        # nothing of this scenario may be left running when the next one starts
        wait_for(lambda: all(not _status(pools, s) and not any(
            pool.condor("condor_q", str(c), "-af", "JobStatus", check=False).stdout.strip()
            for c in s.more) for s in sides), 60,
                 lambda: _why(pools, sides))


def _why(pools: Pools, sides: list[Side]) -> str:
    out = [f"{s.name}: statuses {s.statuses}, events {s.events()}" for s in sides]
    out.append("condorpy: " + pools.daemon.output()[-2500:])
    out.append("HTCondor StartLog: " + pools.pool.log("StartLog")[-2500:])
    return "\n".join(out)


def owner(active: bool = False, preempt: bool = False, blocks: bool = False,
          kills: bool = False) -> Action:
    """The owner comes (``active``: SUSPEND), asks for the machine back (``preempt``:
    PREEMPT), keeps new jobs off (``blocks``: START false), wants a vacating job
    killed (``kills``: KILL), or goes."""
    return lambda pools, sides: pools.set_owner(active, preempt, blocks, kills)


def after(cond: Callable[[Side], bool], action: Action, timeout: float = 30.0) -> Action:
    """``action`` once ``cond`` holds for both sides: a step that needs the one before
    it to have happened (a job suspended before the owner leaves) waits for it, so a
    busy machine that slows both startds alike does not skip a state. The delays are
    still compared: the step happens at the same time for both."""
    def act(pools: Pools, sides: list[Side]) -> None:
        def both() -> bool:
            _watch(pools, sides)
            return all(cond(s) for s in sides)
        wait_for(both, timeout, lambda: _why(pools, sides))
        action(pools, sides)
    return act


def suspended(s: Side) -> bool:
    return s.statuses[-1:] == ["7"]


def tool(*argv: str) -> Action:
    """An admin tool run against both startds at once: one after the other, the second
    startd would hear of it a whole tool run later (seconds on a busy machine), which
    the delay comparison would take for the startd's own slowness."""
    def act(pools: Pools, sides: list[Side]) -> None:
        def one(s: Side) -> None:
            where = [s.address] if argv[0] == "condor_drain" else ["-addr", s.address]
            pools.pool.condor(*argv, *where)
        with ThreadPoolExecutor(len(sides)) as ex:
            for f in [ex.submit(one, s) for s in sides]:
                f.result()
    return act


def _steps_match(cpy: list[tuple[float, str]], htc: list[tuple[float, str]]) -> bool:
    """The same states and activities, step by step."""
    return [sa for _, sa in cpy] == [sa for _, sa in htc]


def same_path(r: Result, timed: int | None = None, aligned: bool = False) -> None:
    """Both sides took the same (state, activity) path, each step up to the end of the
    first claim (or the first ``timed`` steps) at about the same delay from the
    timeline's start. When a requeued job is matched again is the negotiator's and the
    collector's business; when a job's own retirement ends hangs on when it started,
    which the negotiator decides too."""
    htc, cpy = r.path["htcondor"], r.path["condorpy"]
    assert _steps_match(cpy, htc), f"paths differ:\n htcondor {htc}\n condorpy {cpy}"
    if aligned and htc and cpy:
        # ``aligned``: delays from each side's first step, when the first step is an
        # admin tool's effect: when a startd takes up a command is its own business
        # (HTCondor's has been seen to start a drain 5 s late on a busy machine)
        htc = [(t - htc[0][0], sa) for t, sa in htc]
        cpy = [(t - cpy[0][0], sa) for t, sa in cpy]
    first = [sa for _, sa in htc].index("Owner/Idle") + 1 if ("Owner/Idle" in
                                                               [sa for _, sa in htc]) \
        else len(htc)
    first = first if timed is None else timed
    late = [(a, b) for a, b in list(zip(htc, cpy))[:first] if abs(a[0] - b[0]) > TOLERANCE_S]
    assert not late, f"delays differ:\n htcondor {htc}\n condorpy {cpy}"


def settled(statuses: list[str]) -> list[str]:
    """The queue's JobStatus changes from the first run on (whether a poll of condor_q
    saw the job idle before it was matched is chance), less a Running (2) between
    Suspended (7) and Idle (1): a job evicted while suspended is continued first, and
    the shadow hears of the eviction a moment later; whether a poll falls in that
    moment is chance too, on either side (the user log's 011 and 004 events are
    compared exactly)."""
    out: list[str] = []
    statuses = statuses[statuses.index("2"):] if "2" in statuses else statuses
    for i, st in enumerate(statuses):
        if st == "2" and out[-1:] == ["7"] and statuses[i + 1:i + 2] == ["1"]:
            continue
        out.append(st)
    return out


def same_statuses(r: Result) -> None:
    assert settled(r.statuses["condorpy"]) == settled(r.statuses["htcondor"]), r.statuses


def retiring(s: Side) -> bool:
    """The side's newest dynamic-slot change (from its StartLog) is to Claimed/Retiring."""
    read = htcondor_path if s.name == "htcondor" else condorpy_path
    return [sa for _, sa in job_path(read(s.startlog(), 0))[-1:]] == ["Claimed/Retiring"]


def pslot_is(sa: str) -> Callable[[Side], bool]:
    """The side's partitionable slot's newest change (from its StartLog) is to ``sa``."""
    def cond(s: Side) -> bool:
        read = htcondor_path if s.name == "htcondor" else condorpy_path
        return [x for _, x in pslot_path(read(s.startlog(), 0))[-1:]] == [sa]
    return cond


def evicted(s: Side) -> bool:
    """The job was evicted and is idle in the queue."""
    return "004" in s.events() and s.statuses[-1:] == ["1"]


def evicted_and_back(s: Side) -> bool:
    """The job was evicted and has run again."""
    ev = s.events()
    return "004" in ev and ev.count("001") >= 2 and s.statuses[-1:] == ["2"]


def same_pslot(r: Result, aligned: bool = False) -> None:
    htc, cpy = r.pslot["htcondor"], r.pslot["condorpy"]
    assert _steps_match(cpy, htc), f"p-slot paths differ:\n htcondor {htc}\n condorpy {cpy}"
    if aligned and htc and cpy:      # as same_path's
        htc = [(t - htc[0][0], sa) for t, sa in htc]
        cpy = [(t - cpy[0][0], sa) for t, sa in cpy]
    late = [(a, b) for a, b in zip(htc, cpy) if abs(a[0] - b[0]) > TOLERANCE_S]
    assert not late, f"p-slot delays differ:\n htcondor {htc}\n condorpy {cpy}"


def slots_of(pools: Pools, side: Side) -> list[tuple[str, ...]]:
    """Each slot of a side as condor_status -direct shows it, its host left out."""
    res = pools.pool.condor("condor_status", "-direct", side.address, "-af", "Name",
                            "SlotType", "Cpus", "Memory", "State", "Activity")
    return sorted(tuple([line.split()[0].split("@")[0], *line.split()[1:]])
                  for line in res.stdout.splitlines() if line.strip())


def _schedd_pids(pool: RefPool) -> list[int]:
    """The pool's condor_schedd (a process whose root is the pool's chroot)."""
    root = os.path.realpath(pool.root)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{entry}/root") == root and \
                    Path(f"/proc/{entry}/comm").read_text().strip() == "condor_schedd":
                found.append(int(entry))
        except OSError:
            pass
    return found


def schedd(stop: bool) -> Action:
    """The one schedd both sides' claims belong to stops (SIGSTOP: it hears nothing,
    answers nothing) or goes on."""
    def act(pools: Pools, sides: list[Side]) -> None:
        pids = _schedd_pids(pools.pool)
        assert pids, "no condor_schedd in the pool"
        for pid in pids:
            os.kill(pid, signal.SIGSTOP if stop else signal.SIGCONT)
        pools.schedd_stopped = stop
    return act
