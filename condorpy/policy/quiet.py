"""The incremental cycle: a claimed, busy slot whose inputs have not changed since its
last step is not evaluated again.

A busy slot's step evaluates WANT_SUSPEND, then SUSPEND or PREEMPT, and most cycles
moves nothing. When a step moves nothing, emits nothing and meets no error, what its
evaluations read is remembered (:mod:`condorpy.policy.reads`): the names looked up in
the slot ad and in the job ad, with what each held (the value of a constant, the very
expression object of any other, or nothing), and the clock value if ``time()`` was
read on the path taken. The step is known to come out the same while each of those
names holds the same (constants compared by type and value): an evaluation is a
function of what it reads. What a record does not cover is checked before it is used:
the claim is the same, nothing invalidated every record since (a reconfiguration, a
new layout), and a step that read the clock is reused only at the same clock value.
An expression that calls an impure function (random(), userMap(), eval() and the
like) or reads an ad whole is never remembered.

Three ways a cycle saves work, cheapest first:

- *asleep*: a record confirmed without reading the clock sleeps; the ad maps wake it
  on a write to a name it read (:class:`~condorpy.policy.reads.Watched`), the lease
  heap when its claim may expire. A sleeping slot is not even looked at.
- *moved with its class*: slots whose records read the same names and found the same
  values are one class. A machine-wide input (the keyboard's idle time) reaches all
  of them as one batch of literals, the same object in every ad: a slot woken by that
  batch alone, whose class-mate woken by the same batch alone was checked this cycle,
  is where that slot is now.
- *shared*: a slot whose record no longer holds looks for another slot checked at the
  same clock value whose step read the same names and found the same there; only the
  first slot of each distinct set of values is evaluated.
"""

from __future__ import annotations

import heapq
from operator import is_, itemgetter
from typing import Any, Callable

from condorpy.classad.scope import Scope
from condorpy.policy.reads import MIXED, ClockReads, Recording, watch
from condorpy.policy.states import Activity, State

_BUSY, _CLAIMED = Activity.BUSY, State.CLAIMED
# Functions whose result the attributes an expression reads do not fix.
_IMPURE = frozenset({"random", "userhome", "usermap", "eval", "evalineachcontext",
                     "countmatches", "unparse"})
_MEMO_CAP = 65536          # distinct outcomes remembered per clock value
_CALLS_CAP = 4096          # expressions whose calls were checked, remembered
Getter = Callable[[dict[str, Any]], tuple[Any, ...]]


def _getter(names: tuple[str, ...], absent: bool) -> Getter:
    """What ``names`` hold in a map, as a tuple, in one call where it can: KeyError
    when one is missing, unless ``absent`` (then None for it)."""
    if absent:
        return lambda d: tuple(map(d.get, names))
    if not names:
        return lambda _d: ()
    if len(names) == 1:
        one = itemgetter(names[0])
        return lambda d: (one(d),)
    return itemgetter(*names)


class Path:
    """The names a step read in MY or in TARGET, split into those that held constants
    when it was recorded (compared by type and value) and the others, expressions or
    nothing (compared by identity)."""

    __slots__ = ("consts", "exprs", "ne", "cg", "eg", "names")

    def __init__(self, consts: tuple[str, ...], exprs: tuple[str, ...], absent: bool
                 ) -> None:
        self.consts, self.exprs, self.ne = consts, exprs, len(exprs)
        self.names = frozenset(consts + exprs)
        self.cg, self.eg = _getter(consts, False), _getter(exprs, absent)


class QuietRecord:
    """What one quiet step read (see the module's docstring): the expressions (or
    nothing) held by the non-constant names of MY then of TARGET, the values of the
    constant ones and their types."""

    __slots__ = ("claim", "gen", "now", "my", "tg", "token", "ew", "cv", "ct", "cls",
                 "asleep", "cause", "wake_at")

    def __init__(self, claim: Any, gen: int, now: float | None, token: object, my: Path,
                 tg: Path, ew: tuple[Any, ...], cv: tuple[Any, ...]) -> None:
        self.claim = claim
        self.gen = gen
        self.now = now          # the clock value read, None when time() was not read
        self.token = token      # the names read, the policy-name table, the expressions
        self.my, self.tg = my, tg
        self.ew, self.cv, self.ct = ew, cv, tuple(map(type, cv))
        # (token, values, types), one object for every record found alike at a clock
        # value and while they stay alike; None where the values do not hash
        self.cls: Any = None
        # Asleep: confirmed at a cycle, without reading the clock, and neither ad
        # written nor the lease due since; such a slot is not even checked.
        self.asleep = False
        self.cause: Any = None                # the batch that woke it, or MIXED
        self.wake_at: float | None = None     # the lease's wake-up in the heap


class QuietSlots:
    """Per-slot records of quiet busy steps, and the outcomes shared within a clock
    value."""

    def __init__(self, clock: ClockReads, enabled: bool = True) -> None:
        self.enabled = enabled
        self.gen = 0
        self._clock = clock
        self._memo: dict[Any, QuietRecord] = {}
        self._memo_now: float | None = None
        self._paths: dict[Any, Path] = {}
        # one token per (paths, clock read, name table, expression ids): the memo's
        # key in one identity-hashed object; the value keeps the expressions alive
        self._tokens: dict[Any, tuple[object, tuple[Any, ...]]] = {}
        self._calls: dict[int, tuple[Any, bool]] = {}
        self._classes: dict[Any, Any] = {}
        # (when, sequence, record): records asleep until their claim's lease is due
        self._leases: list[tuple[float, int, QuietRecord]] = []
        self._seq = 0
        # How steps went, for the benchmark and the tests: asleep (not even checked),
        # moved with their class, kept, shared, evaluated.
        self.slept = 0
        self.moved = 0
        self.reused = 0
        self.shared = 0
        self.evaluated = 0

    def invalidate(self) -> None:
        """Forget every record (new policy knobs, a new layout)."""
        self.gen += 1
        self._memo.clear()

    # ----------------------------------------------------------------- cycle
    def run(self, slots: list[Any], now: float, settle: Callable[[Any], None]) -> None:
        """Step every slot of a cycle, in order, but those whose step would change
        nothing: a slot asleep is passed over; one woken by nothing but a batch of
        literals (new idle times, say) that woke another slot of its class before it
        takes that slot's outcome; any other is checked, and stepped where its record
        does not hold."""
        gen, holds = self.gen, self.holds
        self.wake_due(now)
        moved: dict[tuple[int, int], tuple[Any, Any, Any, tuple[Any, ...],
                                           tuple[Any, ...]]] = {}
        asleep = 0
        for slot in slots:
            q = slot.quiet
            if q is None:
                if not slot.deleted:
                    settle(slot)
                continue
            if q.gen == gen and slot.activity is _BUSY and slot.state is _CLAIMED:
                if q.asleep:
                    asleep += 1
                    continue
                cause, cls = q.cause, q.cls
                if cause is not None and cause is not MIXED and cls is not None:
                    t = moved.get((id(cls), id(cause)))
                    claim = slot.claim
                    if t is not None and t[0] is cls and t[1] is cause \
                            and q.claim is claim and not now - claim.last_alive > claim.lease:
                        q.cls, q.cv, q.ct = t[2], t[3], t[4]
                        q.asleep, q.cause = True, None
                        self.moved += 1
                        continue
            else:
                cause = cls = None
            if slot.deleted:
                continue
            if not holds(slot, now):
                settle(slot)
            if cause is None or cause is MIXED or cls is None:
                continue
            # this slot's values were its class's, then the batch ``cause`` came:
            # another slot of the class that got only that batch is where this one is
            n = slot.quiet
            if n is not None and n.asleep and n.cls is not None and n.token is cls[0]:
                moved[(id(cls), id(cause))] = (cls, cause, n.cls, n.cv, n.ct)
        self.slept += asleep

    # ----------------------------------------------------------------- reuse
    def holds(self, slot: Any, now: float) -> bool:
        """Whether ``slot`` is claimed and busy, its lease not expired, and its busy
        step at ``now`` would come out as its last one did: the cycle's step of
        ``slot``, which would change nothing, need not run."""
        claim = slot.claim
        if slot.activity is not _BUSY or slot.state is not _CLAIMED or claim is None:
            slot.quiet.asleep = False
            slot.quiet = None             # it left Busy: what it read no longer counts
            return False
        if now - claim.last_alive > claim.lease:
            return False
        return self.still_quiet(slot, claim, slot.quiet, now)

    def still_quiet(self, slot: Any, claim: Any, rec: QuietRecord | None,
                    now: float) -> bool:
        """Whether ``slot``'s busy step at ``now`` comes out as its last one did (as
        recorded in ``rec``): it stays, with nothing to emit."""
        if rec is None or rec.claim is not claim or rec.gen != self.gen:
            return False
        ad, tg = slot.ad, claim.ad
        my, tp = rec.my, rec.tg
        try:
            ew = my.eg(ad.exprs) + tp.eg(tg.exprs) if tp.ne else my.eg(ad.exprs)
            cv = my.cg(ad.consts) + tp.cg(tg.consts)
        except KeyError:
            return False
        if not all(map(is_, ew, rec.ew)):
            return False          # an expression changed: nothing to compare by value
        timely = rec.now is None or rec.now == now
        if timely and all(map(is_, cv, rec.cv)):
            self.reused += 1
            self._sleep(slot, claim, rec)
            return True
        ct = tuple(map(type, cv))
        if timely and cv == rec.cv and ct == rec.ct:
            rec.cv = cv                         # equal values in new objects
            self.reused += 1
            self._sleep(slot, claim, rec)
            return True
        if self._memo_now != now:
            return False
        try:
            hit = self._memo.get((rec.token, cv, ct))
        except TypeError:       # an unhashable value (a list)
            return False
        if hit is None:
            return False
        # another slot's step at ``now`` read the same names and found the same there
        rec.now, rec.cv, rec.ct, rec.cls = hit.now, cv, ct, hit.cls
        self.shared += 1
        self._sleep(slot, claim, rec)
        return True

    def _sleep(self, slot: Any, claim: Any, rec: QuietRecord) -> None:
        """``rec`` holds at this cycle: unless it read the clock, it needs no check
        until one of its ads is written or the claim's lease comes due."""
        if rec.now is not None:
            return
        ad, tg = slot.ad, claim.ad
        for m in (ad.exprs, tg.exprs):
            w = getattr(m, "watcher", None)
            if w is not None and w is not rec and w.asleep:
                return    # a job ad another slot sleeps on (one ClassAd, two claims)
        watch(ad, rec, rec.my.names)
        watch(tg, rec, rec.tg.names)
        rec.asleep = True
        rec.cause = None
        # a second early: the lease's own test (now - last_alive > lease) decides
        due = claim.last_alive + claim.lease - 1.0
        if rec.wake_at != due:
            rec.wake_at = due
            self._seq += 1
            heapq.heappush(self._leases, (due, self._seq, rec))

    def wake_due(self, now: float) -> None:
        """Wake the records whose claim's lease may have run out by ``now``."""
        leases = self._leases
        while leases and leases[0][0] <= now:
            due, _, rec = heapq.heappop(leases)
            if rec.wake_at == due:
                rec.asleep = False
                rec.cause = MIXED
                rec.wake_at = None

    # ------------------------------------------------------------- recording
    def start(self, slot: Any, claim: Any) -> Recording | None:
        """Begin noting what a busy step of ``slot`` reads; None where it cannot be
        followed (ads that are not top-level ClassAds)."""
        ad, tg = slot.ad, claim.ad
        if not (isinstance(ad, Scope) and isinstance(tg, Scope)) or ad is tg \
                or ad.parent is not None or tg.parent is not None:
            return None
        self._clock.read = False
        return Recording(ad, tg)

    def keep(self, slot: Any, claim: Any, names: Any, rec: Recording, now: float) -> None:
        """The step recorded by ``rec`` (closed) was quiet: remember what it read."""
        log = rec.log
        if slot.quiet is not None:
            slot.quiet.asleep = False         # replaced: it watches nothing any more
        slot.quiet = None
        if log.opaque:
            return
        ad, tg = slot.ad, claim.ad
        my, tgn = tuple(log.my), tuple(log.target)
        if not (self._pure(ad, my) and self._pure(tg, tgn)):
            return
        time = self._clock.read
        mp, tp = self._path(ad, my), self._path(tg, tgn)
        ew = mp.eg(ad.exprs) + tp.eg(tg.exprs)
        cv = mp.cg(ad.consts) + tp.cg(tg.consts)
        key = (mp, tp, time, id(names), tuple(map(id, ew)))
        got = self._tokens.get(key)
        if got is None:
            if len(self._tokens) >= _MEMO_CAP:
                self._tokens.clear()
            got = self._tokens[key] = (object(), ew)
        q = slot.quiet = QuietRecord(claim, self.gen, now if time else None, got[0], mp, tp,
                                     ew, cv)
        self.evaluated += 1
        self._sleep(slot, claim, q)
        if self._memo_now != now or len(self._memo) >= _MEMO_CAP:
            self._memo.clear()
            self._memo_now = now
        cls = (q.token, cv, q.ct)
        try:
            self._memo[cls] = q
        except TypeError:
            return
        # one object per class, so that slots of a class find each other's moves
        if len(self._classes) >= _MEMO_CAP:
            self._classes.clear()
        q.cls = self._classes.setdefault(cls, cls)

    def _path(self, ad: Scope, names: tuple[str, ...]) -> Path:
        consts, exprs = ad.consts, ad.exprs
        shape = (tuple(n for n in names if n in consts),
                 tuple(n for n in names if n not in consts),
                 any(n not in exprs for n in names))
        path = self._paths.get(shape)
        if path is None:
            if len(self._paths) >= _MEMO_CAP:
                self._paths.clear()
            path = self._paths[shape] = Path(*shape)
        return path

    def _pure(self, ad: Scope, names: tuple[str, ...]) -> bool:
        """Whether no expression among ``names`` in ``ad`` calls an impure function."""
        calls, consts, exprs = self._calls, ad.consts, ad.exprs
        for n in names:
            e = exprs.get(n)
            if e is None or n in consts:
                continue
            got = calls.get(id(e))
            if got is None or got[0] is not e:
                if len(calls) >= _CALLS_CAP:
                    calls.clear()
                got = calls[id(e)] = (e, not e.calls_any(_IMPURE))
            if not got[1]:
                return False
        return True

