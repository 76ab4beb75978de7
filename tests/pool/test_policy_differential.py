"""The startd policy as HTCondor 23.9.6's own condor_startd runs it, and condorpy's.

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

pytestmark = pytest.mark.pool
# about eight minutes on one worker (each scenario runs its timeline in real time):
# the pool lane starts it first
POOL_LONG_MODULE = True

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


def _submit(pools: Pools, side: Side, job: str, extra: str, log: str = "job.log") -> int:
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


def _htcondor_address(pool: RefPool) -> str:
    res = pool.condor("condor_status", "-startd", "-const",
                      '!regexp("condorpy", CondorVersion)', "-af", "MyAddress")
    return res.stdout.split()[0]


def _condorpy_address(d: Daemon) -> str:
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
    sides = [Side("htcondor", _htcondor_address(pool),
                  lambda: pool.log("StartLog"), root / "htcondor"),
             Side("condorpy", _condorpy_address(daemon),
                  lambda: (daemon.state / "log" / "StartLog").read_text(errors="replace"),
                  root / "condorpy")]
    try:
        for s in sides:
            s.cluster = _submit(pools, s, job, submit_extra)

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


def _settled(statuses: list[str]) -> list[str]:
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
    assert _settled(r.statuses["condorpy"]) == _settled(r.statuses["htcondor"]), r.statuses


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


# ------------------------------------------------------------------ tests
def test_suspend_and_continue(pools: Pools) -> None:
    r = run(pools, "suspend", "", [(1, owner(active=True)), (5, after(suspended, owner()))],
            lambda s: s.events().count("011") >= 1 and s.statuses[-1:] == ["2"])
    same_path(r)
    assert r.path["htcondor"][0][1] == "Claimed/Suspended"
    assert r.events["condorpy"] == r.events["htcondor"] == ["000", "001", "010", "011"]
    same_statuses(r)
    assert _settled(r.statuses["htcondor"]) == ["2", "7", "2"]


def test_preempt_while_suspended_without_retirement_resumes_then_evicts(pools: Pools) -> None:
    # Issue 23 item 8a: suspended, then PREEMPT with no retirement time: HTCondor goes
    # through Claimed/Retiring, the job is unsuspended before the eviction, and the job
    # is matched again once the owner has gone.
    r = run(pools, "suspend-preempt", "+PolicyRetire = 0",
            [(1, owner(active=True)),
             (4, after(suspended, owner(active=True, preempt=True))),
             (9, after(lambda s: "004" in s.events(), owner()))],
            evicted_and_back)
    same_path(r)
    assert [sa for _, sa in r.path["htcondor"]][:4] == [
        "Claimed/Suspended", "Claimed/Retiring", "Preempting/Vacating", "Owner/Idle"]
    assert r.events["condorpy"] == r.events["htcondor"]
    assert r.events["htcondor"][:6] == ["000", "001", "010", "011", "004", "001"]
    same_statuses(r)


def test_preempt_with_retirement_retires_then_vacates(pools: Pools) -> None:
    # PREEMPT with retirement time: the job runs on for its retirement (25 s of run
    # time) less the vacate time (MachineMaxVacateTime 2), then is vacated.
    r = run(pools, "preempt-retire", "+PolicyRetire = 25",
            [(1, owner(preempt=True)), (30, owner())], evicted_and_back)
    same_path(r, timed=1)
    for side in SIDES:
        assert r.path[side][1][0] - r.path[side][0][0] >= 2, r.path
    assert [sa for _, sa in r.path["htcondor"]][:3] == [
        "Claimed/Retiring", "Preempting/Vacating", "Owner/Idle"]
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


def test_graceful_vacate_retires_first(pools: Pools) -> None:
    # Issue 23 item 8b: condor_vacate (graceful) retires the claim first.
    r = run(pools, "vacate", "+PolicyRetire = 25",
            [(0, owner(blocks=True)), (1, tool("condor_vacate"))], evicted)
    same_path(r, timed=1, aligned=True)
    for side in SIDES:      # the job ran on, retiring
        assert r.path[side][1][0] - r.path[side][0][0] >= 2, r.path
    assert [sa for _, sa in r.path["htcondor"]][:2] == [
        "Claimed/Retiring", "Preempting/Vacating"]
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


def test_fast_vacate_kills_at_once(pools: Pools) -> None:
    r = run(pools, "vacate-fast", "+PolicyRetire = 600",
            [(0, owner(blocks=True)), (1, tool("condor_vacate", "-fast"))], evicted)
    same_path(r, aligned=True)
    assert [sa for _, sa in r.path["htcondor"]][:1] == ["Preempting/Killing"]
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


def test_kill_after_vacate(pools: Pools) -> None:
    # A job that ignores SIGTERM: once MachineMaxVacateTime (2 s) has passed after the
    # soft kill the job is hard-killed, the slot staying in Preempting/Vacating (only
    # KILL moves it to Killing).
    r = run(pools, "kill-after-vacate", "+PolicyRetire = 0",
            [(0, owner(blocks=True)), (1, tool("condor_vacate"))], evicted, job=STUBBORN)
    same_path(r, aligned=True)
    assert [sa for _, sa in r.path["htcondor"]][:3] == [
        "Claimed/Retiring", "Preempting/Vacating", "Owner/Idle"]
    for side in SIDES:
        (vacating, _), (gone, _) = r.path[side][1:3]
        assert gone - vacating >= 2, r.path
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


def same_pslot(r: Result, aligned: bool = False) -> None:
    htc, cpy = r.pslot["htcondor"], r.pslot["condorpy"]
    assert _steps_match(cpy, htc), f"p-slot paths differ:\n htcondor {htc}\n condorpy {cpy}"
    if aligned and htc and cpy:      # as same_path's
        htc = [(t - htc[0][0], sa) for t, sa in htc]
        cpy = [(t - cpy[0][0], sa) for t, sa in cpy]
    late = [(a, b) for a, b in zip(htc, cpy) if abs(a[0] - b[0]) > TOLERANCE_S]
    assert not late, f"p-slot delays differ:\n htcondor {htc}\n condorpy {cpy}"


def test_is_owner_takes_the_partitionable_slot_and_gives_it_back(pools: Pools) -> None:
    # START false: the partitionable slot goes to Owner (IS_OWNER), its busy d-slot
    # keeps its job; START true again: back to Unclaimed.
    r = run(pools, "is-owner", "", [(1, owner(blocks=True)),
                                    (5, after(pslot_is("Owner/Idle"), owner()))],
            pslot_is("Unclaimed/Idle"), settle=2.0)
    same_pslot(r)
    assert [sa for _, sa in r.pslot["htcondor"]] == ["Owner/Idle", "Unclaimed/Idle"]
    assert r.path["condorpy"] == r.path["htcondor"] == []


@pytest.mark.parametrize("how,retire", [("-graceful", 6), ("-quick", 600), ("-fast", 600)])
def test_drain(pools: Pools, how: str, retire: int) -> None:
    r = run(pools, f"drain{how}", f"+PolicyRetire = {retire}",
            [(1, tool("condor_drain", how))], evicted,
            cleanup=(tool("condor_drain", "-cancel"),))
    same_path(r, aligned=True)
    same_pslot(r, aligned=True)
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


def test_kill_expression_while_vacating(pools: Pools) -> None:
    # KILL true while the job is vacating: Preempting/Killing, then the job is gone.
    r = run(pools, "kill-expr", "+PolicyRetire = 0\n+PolicyVacate = 30",
            [(0, owner(blocks=True)), (1, tool("condor_vacate")),
             (3, owner(blocks=True, kills=True))], evicted, job=STUBBORN)
    same_path(r)
    assert [sa for _, sa in r.path["htcondor"]][:4] == [
        "Claimed/Retiring", "Preempting/Vacating", "Preempting/Killing", "Owner/Idle"]
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


def test_a_job_suspended_while_a_graceful_drain_retires_it(pools: Pools) -> None:
    # START refuses the job (the owner blocks), so the drain does not coordinate its
    # retirement: it keeps its own, which suspension does not use up. Suspended (20)
    # while retiring, continued (16), then vacated once its own retirement is over.
    r = run(pools, "drain-suspended", "+PolicyRetire = 30",
            [(0, owner(blocks=True)), (1, tool("condor_drain", "-graceful")),
             (2, after(retiring, owner(active=True, blocks=True))),
             (6, after(suspended, owner(blocks=True)))],
            evicted,
            cleanup=(tool("condor_drain", "-cancel"),))
    same_path(r, timed=3, aligned=True)
    assert [sa for _, sa in r.path["htcondor"]][:5] == [
        "Claimed/Retiring", "Claimed/Suspended", "Claimed/Retiring", "Preempting/Vacating",
        "Owner/Idle"]
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


def _slots(pools: Pools, side: Side) -> list[tuple[str, ...]]:
    """Each slot of a side as condor_status -direct shows it, its host left out."""
    res = pools.pool.condor("condor_status", "-direct", side.address, "-af", "Name",
                            "SlotType", "Cpus", "Memory", "State", "Activity")
    return sorted(tuple([line.split()[0].split("@")[0], *line.split()[1:]])
                  for line in res.stdout.splitlines() if line.strip())


def test_pslot_carving_and_release(pools: Pools) -> None:
    # A job asking for 1 CPU and 300 MB: both carve a d-slot of the same size (memory
    # rounded up as MODIFY_REQUEST_EXPR_REQUESTMEMORY says) and take it off the
    # partitionable slot; once the job is gone the p-slot has it all back.
    seen: dict[str, list[tuple[str, ...]]] = {}

    def look(pools: Pools, sides: list[Side]) -> None:
        for s in sides:
            seen[s.name] = _slots(pools, s)
    run(pools, "carve", "request_cpus = 1\nrequest_memory = 300",
        [(0, look), (1, owner(blocks=True)), (2, tool("condor_vacate", "-fast"))],
        evicted, settle=1.0)
    assert seen["condorpy"] == seen["htcondor"], seen
    assert seen["htcondor"] == [("slot1", "Partitionable", "1", "1664", "Unclaimed", "Idle"),
                                ("slot1_1", "Dynamic", "1", "384", "Claimed", "Busy")], seen
    whole = [("slot1", "Partitionable", "2", "2048", "Unclaimed", "Idle")]
    addresses = {"htcondor": _htcondor_address(pools.pool),
                 "condorpy": _condorpy_address(pools.daemon)}
    for name, address in addresses.items():
        side = Side(name, address, str, Path())
        wait_for(lambda: _slots(pools, side) == whole, 30,
                 lambda: f"{name}: {_slots(pools, side)}")


def test_rank_preemption(pools: Pools) -> None:
    # The slot's RANK prefers jobs with +PolicyRank: such a job, matched to the busy
    # d-slot by the negotiator (seconds later: by then the running job has used up its
    # retirement, 4 s less 2 s of vacate time), makes the running job be vacated at
    # once, and the slot pass to the better claim (23) whose job then runs (11).
    second: dict[str, int] = {}

    def better(pools: Pools, sides: list[Side]) -> None:
        for s in sides:
            second[s.name] = _submit(pools, s, SLEEP, "request_cpus = 2\n+PolicyRank = True",
                                     log="better.log")
            s.more.append(second[s.name])

    def done(s: Side) -> bool:
        st = pools.pool.condor("condor_q", str(second.get(s.name, 0)), "-af", "JobStatus",
                               check=False).stdout.split()
        return "004" in s.events() and st == ["2"]
    r = run(pools, "rank", "request_cpus = 2\n+PolicyRetire = 4", [(0, better)], done)
    # The delays of the startd's own steps (vacating, the better claim taking the slot);
    # when the claim becomes Busy is when the schedd activates it, which 23.9.6's schedd
    # has been seen to do at once or 5 s later, for either startd (one run each way)
    same_path(r, timed=2)
    assert [sa for _, sa in r.path["htcondor"]][:3] == [
        "Preempting/Vacating", "Claimed/Idle", "Claimed/Busy"]
    assert r.events["condorpy"] == r.events["htcondor"]
    same_statuses(r)


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


def test_claim_lease_while_the_schedd_is_gone(pools: Pools) -> None:
    # The job's JobLeaseDuration (20 s) is its claim's lease. The one schedd both sides
    # share stops (SIGSTOP) while the job runs, and goes on 55 s later; the job exits
    # meanwhile (25 s) and its shadow cannot finish with the schedd. HTCondor's startd
    # keeps the slot Busy (its starter waits for the shadow and keeps the claim alive)
    # until the schedd is back and releases the claim.
    r = run(pools, "lease", "job_lease_duration = 20",
            [(0, schedd(stop=True)), (55, schedd(stop=False))],
            lambda s: "005" in s.events(), job="executable = /bin/sleep\narguments = 25",
            cleanup=(schedd(stop=False),))
    # Once the schedd goes on, the shadow's answer to the exit and the schedd's release
    # of the claim come in the same instant: which the startd takes first is a race on
    # either side (a Claimed/Idle between Busy and Preempting, or none; both seen of
    # HTCondor's). What is compared: the slot stayed Busy until the schedd was back.
    for side in SIDES:
        path = [(t, sa) for i, (t, sa) in enumerate(r.path[side])
                if not (sa == "Claimed/Idle" and r.path[side][i + 1:i + 2]
                        and r.path[side][i + 1] == (t, "Preempting/Vacating"))]
        assert [sa for _, sa in path][:2] == ["Preempting/Vacating", "Owner/Idle"], r.path
        assert path[0][0] >= 55 - TOLERANCE_S, r.path
    assert r.events["condorpy"] == r.events["htcondor"] == ["000", "001", "005"]
