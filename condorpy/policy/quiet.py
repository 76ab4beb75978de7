"""The incremental cycle: a claimed, busy slot whose inputs have not changed since its
last step is not evaluated again.

A busy slot's step evaluates WANT_SUSPEND, then SUSPEND or PREEMPT, and most cycles
moves nothing. When a step moves nothing, emits nothing and meets no error, what its
evaluations read is remembered (:mod:`condorpy.policy.reads`): the names looked up in
the slot ad and in the job ad, with what each held (the value of a constant, the very
expression object of any other, or nothing), and the clock value if ``time()`` was
read on the path taken. The step is known to come out the same while each of those
names holds the same: an evaluation is a function of what it reads.

Slots change in step: a machine-wide input (the keyboard's idle time, say) changes for
all of them at once. A slot whose own record no longer holds then looks for another
slot evaluated at the same clock value whose step read the same names in the same
order and found the same there (constants by type and value, expressions by
identity): that slot's outcome is this one's too. Only the first slot of each distinct set of values is evaluated.

What a record does not cover is checked before it is used: the claim and the
policy-name table are the same objects, nothing invalidated every record since (a
reconfiguration, a new layout), and a step that read the clock is reused only at the
same clock value. An expression that calls an impure function (random(), userMap(),
eval() and the like) or reads an ad whole is never remembered.
"""

from __future__ import annotations

from operator import is_, itemgetter
from typing import Any, Callable

from condorpy.classad.scope import Scope
from condorpy.policy.reads import ClockReads, Recording
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

    __slots__ = ("consts", "exprs", "ne", "cg", "eg")

    def __init__(self, consts: tuple[str, ...], exprs: tuple[str, ...], absent: bool
                 ) -> None:
        self.consts, self.exprs, self.ne = consts, exprs, len(exprs)
        self.cg, self.eg = _getter(consts, False), _getter(exprs, absent)


class QuietRecord:
    """What one quiet step read (see the module's docstring): for MY and for TARGET,
    the expressions of the non-constant names then the values of the constant ones."""

    __slots__ = ("claim", "gen", "now", "my", "tg", "key", "my_w", "tg_w",
                 "my_t", "tg_t")

    def __init__(self, claim: Any, gen: int, now: float | None, key: Any, my: Path,
                 tg: Path, my_w: tuple[Any, ...], tg_w: tuple[Any, ...]) -> None:
        self.claim = claim
        self.gen = gen
        self.now = now          # the clock value read, None when time() was not read
        self.key = key          # the path's names, the policy-name table, expression ids
        self.my, self.tg = my, tg
        self.my_w, self.tg_w = my_w, tg_w
        self.my_t, self.tg_t = tuple(map(type, my_w)), tuple(map(type, tg_w))


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
        self._calls: dict[int, tuple[Any, bool]] = {}
        # How steps went, for the benchmark and the tests: kept, shared, evaluated.
        self.reused = 0
        self.shared = 0
        self.evaluated = 0

    def invalidate(self) -> None:
        """Forget every record (new policy knobs, a new layout)."""
        self.gen += 1
        self._memo.clear()

    # ----------------------------------------------------------------- reuse
    def holds(self, slot: Any, now: float) -> bool:
        """Whether ``slot`` is claimed and busy, its lease not expired, and its busy
        step at ``now`` would come out as its last one did: the cycle's step of
        ``slot``, which would change nothing, need not run."""
        claim = slot.claim
        if slot.activity is not _BUSY or slot.state is not _CLAIMED or claim is None \
                or now - claim.last_alive > claim.lease:
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
            mw = my.eg(ad.exprs) + my.cg(ad.consts)
            tw = tp.eg(tg.exprs) + tp.cg(tg.consts)
        except KeyError:
            return False
        if all(map(is_, mw, rec.my_w)) and all(map(is_, tw, rec.tg_w)):
            if rec.now is None or rec.now == now:
                self.reused += 1
                return True
        else:
            if not (all(map(is_, mw[:my.ne], rec.my_w)) and
                    all(map(is_, tw[:tp.ne], rec.tg_w))):
                return False      # an expression changed: nothing to compare by value
        mt, tt = tuple(map(type, mw)), tuple(map(type, tw))
        if (rec.now is None or rec.now == now) and mw == rec.my_w and tw == rec.tg_w \
                and mt == rec.my_t and tt == rec.tg_t:
            rec.my_w, rec.tg_w = mw, tw         # equal values in new objects
            self.reused += 1
            return True
        if self._memo_now != now:
            return False
        try:
            hit = self._memo.get((rec.key, mw[my.ne:], mt, tw[tp.ne:], tt))
        except TypeError:       # an unhashable value (a list)
            return False
        if hit is None:
            return False
        # another slot's step at ``now`` read the same names and found the same there
        rec.now = hit.now
        rec.my_w, rec.tg_w, rec.my_t, rec.tg_t = mw, tw, mt, tt
        self.shared += 1
        return True

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
        slot.quiet = None
        if log.opaque:
            return
        ad, tg = slot.ad, claim.ad
        my, tgn = tuple(log.my), tuple(log.target)
        if not (self._pure(ad, my) and self._pure(tg, tgn)):
            return
        time = self._clock.read
        mp, tp = self._path(ad, my), self._path(tg, tgn)
        mw = mp.eg(ad.exprs) + mp.cg(ad.consts)
        tw = tp.eg(tg.exprs) + tp.cg(tg.consts)
        # the record keeps the expressions alive while their ids are in its key
        key = (mp, tp, time, id(names), tuple(map(id, mw[:mp.ne])),
               tuple(map(id, tw[:tp.ne])))
        q = slot.quiet = QuietRecord(claim, self.gen, now if time else None, key, mp, tp,
                                     mw, tw)
        self.evaluated += 1
        if self._memo_now != now or len(self._memo) >= _MEMO_CAP:
            self._memo.clear()
            self._memo_now = now
        try:
            self._memo[(key, mw[mp.ne:], q.my_t, tw[tp.ne:], q.tg_t)] = q
        except TypeError:
            pass

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

