"""Slot states, activities and the manual's numbered/lettered transitions, as data.

The manual labels state changes with letters (A-P, the state diagram) and
state/activity changes with numbers (1-37, the state/activity diagram). Every
transition the engine takes names one entry of :data:`TRANSITIONS`; a change of state
carries both its number and its letter, e.g. Owner/Idle -> Unclaimed/Idle is ``1``
with letter ``A``.

Preempting exits: the manual's diagram draws 22/25 from Killing/Vacating to Owner and
23/24 the other way round; its text says 22 (Owner) and 23 (Claimed) when the starter
exits while Vacating, 24 (Claimed) and 25 (Owner) when it exits while Killing. The
engine follows the text (see docs/policy.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from condorpy.errors import PolicyError


class State(Enum):
    OWNER = "Owner"
    UNCLAIMED = "Unclaimed"
    MATCHED = "Matched"
    CLAIMED = "Claimed"
    PREEMPTING = "Preempting"
    BACKFILL = "Backfill"
    DRAINED = "Drained"


class Activity(Enum):
    IDLE = "Idle"
    BENCHMARKING = "Benchmarking"
    BUSY = "Busy"
    SUSPENDED = "Suspended"
    RETIRING = "Retiring"
    VACATING = "Vacating"
    KILLING = "Killing"
    # HTCondor 25.11: the job is over (the starter's final update came) but the starter
    # is not yet reaped; the slot matches nothing and no policy moves it meanwhile.
    CLEANING = "Cleaning"


S, A = State, Activity


@dataclass(frozen=True)
class Transition:
    """One arrow of the manual's diagrams."""

    key: str                      # "1".."37", or a letter for unnumbered state changes
    letter: str | None            # the state diagram's letter, when the state changes
    source: tuple[State, Activity | None]   # None: any activity of that state
    dest: tuple[State, Activity]
    summary: str


def _t(key: str, letter: str | None, src: tuple[State, Activity | None],
       dst: tuple[State, Activity], summary: str) -> Transition:
    return Transition(key, letter, src, dst, summary)


TRANSITIONS: dict[str, Transition] = {t.key: t for t in (
    _t("1", "A", (S.OWNER, A.IDLE), (S.UNCLAIMED, A.IDLE), "IS_OWNER no longer true"),
    _t("2", "B", (S.UNCLAIMED, None), (S.OWNER, A.IDLE), "IS_OWNER true"),
    _t("3", None, (S.UNCLAIMED, A.IDLE), (S.UNCLAIMED, A.BENCHMARKING), "RUNBENCHMARKS true"),
    _t("4", None, (S.UNCLAIMED, A.BENCHMARKING), (S.UNCLAIMED, A.IDLE), "benchmarks done"),
    _t("5", "D", (S.UNCLAIMED, None), (S.CLAIMED, A.IDLE), "claimed before the match arrived"),
    _t("6", "C", (S.UNCLAIMED, None), (S.MATCHED, A.IDLE), "matched by the negotiator"),
    _t("7", "E", (S.UNCLAIMED, A.IDLE), (S.BACKFILL, A.IDLE), "START_BACKFILL true"),
    _t("8", "F", (S.MATCHED, A.IDLE), (S.OWNER, A.IDLE), "START false, MATCH_TIMEOUT or vacate"),
    _t("9", "G", (S.MATCHED, A.IDLE), (S.CLAIMED, A.IDLE), "claimed by the matched schedd"),
    _t("10", "H", (S.CLAIMED, A.IDLE), (S.PREEMPTING, A.VACATING), "idle claim ended"),
    _t("11", None, (S.CLAIMED, A.IDLE), (S.CLAIMED, A.BUSY), "claim activated"),
    _t("12", None, (S.CLAIMED, A.BUSY), (S.CLAIMED, A.IDLE), "job exited"),
    _t("13", None, (S.CLAIMED, A.BUSY), (S.CLAIMED, A.RETIRING), "claim preempted"),
    _t("14", None, (S.CLAIMED, A.BUSY), (S.CLAIMED, A.SUSPENDED), "SUSPEND true"),
    _t("15", None, (S.CLAIMED, A.SUSPENDED), (S.CLAIMED, A.BUSY), "CONTINUE true"),
    _t("16", None, (S.CLAIMED, A.SUSPENDED), (S.CLAIMED, A.RETIRING),
       "CONTINUE of a retiring claim, or PREEMPT"),
    _t("17", "H", (S.CLAIMED, A.SUSPENDED), (S.PREEMPTING, A.VACATING),
       "retirement over while suspended"),
    _t("18", "H", (S.CLAIMED, A.RETIRING), (S.PREEMPTING, A.VACATING),
       "job done or retirement over"),
    _t("19", None, (S.CLAIMED, A.RETIRING), (S.CLAIMED, A.BUSY), "preempting claim went away"),
    _t("20", None, (S.CLAIMED, A.RETIRING), (S.CLAIMED, A.SUSPENDED), "SUSPEND true"),
    _t("21", None, (S.PREEMPTING, A.VACATING), (S.PREEMPTING, A.KILLING),
       "KILL true"),
    _t("22", "J", (S.PREEMPTING, A.VACATING), (S.OWNER, A.IDLE), "vacated; back to the owner"),
    _t("23", "I", (S.PREEMPTING, A.VACATING), (S.CLAIMED, A.IDLE),
       "vacated; the better claim takes over"),
    _t("24", "I", (S.PREEMPTING, A.KILLING), (S.CLAIMED, A.IDLE),
       "killed; the better claim takes over"),
    _t("25", "J", (S.PREEMPTING, A.KILLING), (S.OWNER, A.IDLE), "killed; back to the owner"),
    _t("26", None, (S.BACKFILL, A.IDLE), (S.BACKFILL, A.BUSY), "backfill client started"),
    _t("27", None, (S.BACKFILL, A.BUSY), (S.BACKFILL, A.IDLE), "backfill client exited"),
    _t("28", None, (S.BACKFILL, A.BUSY), (S.BACKFILL, A.KILLING), "backfill evicted"),
    _t("29", None, (S.BACKFILL, A.KILLING), (S.BACKFILL, A.IDLE), "backfill client gone"),
    _t("30", "K", (S.BACKFILL, A.IDLE), (S.OWNER, A.IDLE), "EVICT_BACKFILL, vacate or shutdown"),
    _t("31", "M", (S.BACKFILL, A.IDLE), (S.CLAIMED, A.IDLE), "claimed while in backfill"),
    _t("32", "L", (S.BACKFILL, A.IDLE), (S.MATCHED, A.IDLE), "matched while in backfill"),
    _t("33", None, (S.DRAINED, A.RETIRING), (S.DRAINED, A.IDLE), "every slot drained"),
    _t("34", "O", (S.DRAINED, A.IDLE), (S.OWNER, A.IDLE), "draining finalized"),
    _t("35", "O", (S.DRAINED, A.RETIRING), (S.OWNER, A.IDLE), "draining cancelled"),
    _t("36", "N", (S.OWNER, A.IDLE), (S.DRAINED, A.RETIRING), "draining started"),
    _t("37", "P", (S.UNCLAIMED, None), (S.DRAINED, A.RETIRING), "draining started"),
    # Claimed/Cleaning (HTCondor 25.11), which the manual's diagrams predate: entered
    # from a running activity when the job ends, left when the starter is reaped.
    _t("C1", None, (S.CLAIMED, A.BUSY), (S.CLAIMED, A.CLEANING), "job ended; starter cleaning up"),
    _t("C2", None, (S.CLAIMED, A.RETIRING), (S.CLAIMED, A.CLEANING),
       "job ended in retirement; starter cleaning up"),
    _t("C3", None, (S.CLAIMED, A.SUSPENDED), (S.CLAIMED, A.CLEANING),
       "job ended while suspended; starter cleaning up"),
    _t("C4", None, (S.CLAIMED, A.CLEANING), (S.CLAIMED, A.IDLE), "starter reaped"),
    # State changes the manual letters but does not number.
    _t("H", "H", (S.CLAIMED, None), (S.PREEMPTING, A.VACATING),
       "claim evicted without retirement"),
    _t("Hk", "H", (S.CLAIMED, None), (S.PREEMPTING, A.KILLING),
       "claim evicted at once"),
)}

# Slots that hold a claim (for the polling cadence and for Requirements).
CLAIMED_STATES = frozenset({S.CLAIMED, S.PREEMPTING})


def check_move(key: str, state: State, activity: Activity, to_state: State,
               to_activity: Activity, slot: str) -> None:
    """Raise unless ``key`` is an arrow of the manual's diagrams from (state, activity)
    to (to_state, to_activity). Every move of the engine goes through this check, so a
    move the table does not list is caught where it is made."""
    t = TRANSITIONS.get(key)
    if t is None:
        raise PolicyError(f"{slot}: transition {key!r} is not one of the manual's", slot=slot)
    src_state, src_activity = t.source
    dest = t.dest
    # The manual enters Preempting in Vacating, or straight in Killing when WANT_VACATE
    # is False: every arrow into Preempting/Vacating has that twin.
    if dest == (S.PREEMPTING, A.VACATING) and to_activity is A.KILLING:
        dest = (S.PREEMPTING, A.KILLING)
    if src_state is not state or (src_activity is not None and src_activity is not activity) \
            or dest != (to_state, to_activity):
        raise PolicyError(
            f"{slot}: transition {key} goes {_pair(t.source)} -> {_pair(t.dest)}, "
            f"not {state.value}/{activity.value} -> {to_state.value}/{to_activity.value}",
            slot=slot)


def _pair(p: tuple[State, Activity | None]) -> str:
    return f"{p[0].value}/{p[1].value if p[1] is not None else '*'}"
