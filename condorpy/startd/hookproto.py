"""What job hooks and startd cron jobs say, and what they are told: pure, no I/O.

HTCondor's protocols (see docs/hooks.md): a hook or cron job writes ClassAd attributes
one per line (``Attr = value``); a fetch-work hook's reply is all or nothing (one bad
line discards the whole ad), a cron job's bad lines are dropped one by one and a line
starting with ``-`` ends one ad (``- [tag] [update:<bool>]``). Hooks are fed ads as
text on standard input, the reply and evict hooks with the job ad, a ``-----`` line and
the slot ad.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Iterable, Mapping

from condorpy.classad import ClassAd, Error, Undefined
from condorpy.errors import ClassAdError, HookError
from condorpy.config.typed import boolean_value
from condorpy.starter import reserved

# The separator HTCondor writes between the job ad and the slot ad.
AD_SEPARATOR = "-----\n"


class CronMode(Enum):
    PERIODIC = "Periodic"
    WAIT_FOR_EXIT = "WaitForExit"
    ONE_SHOT = "OneShot"
    ON_DEMAND = "OnDemand"


class ExitHow(Enum):
    """The argument of ``<KW>_HOOK_JOB_EXIT``: how the job left the slot."""
    EXIT = "exit"
    REMOVE = "remove"
    HOLD = "hold"
    EVICT = "evict"


def parse_mode(text: str | None, source: str) -> CronMode:
    if not text:
        return CronMode.PERIODIC
    for m in CronMode:
        if m.value.lower() == text.strip().lower():
            return m
    raise HookError(f"{source} = {text} is not one of "
                    f"{', '.join(m.value for m in CronMode)}", hook=source)


_PERIOD = re.compile(r"\s*(\d+)\s*([smh]?)\s*", re.I)


def parse_period(text: str, source: str) -> int:
    """Seconds from ``N``, ``Ns``, ``Nm`` or ``Nh`` (HTCondor's cron period syntax)."""
    m = _PERIOD.fullmatch(text)
    if m is None:
        raise HookError(f"{source} = {text} is not a period (an integer with an optional "
                        f"s, m or h)", hook=source)
    return int(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2).lower()]


def parse_reply_ad(text: str, source: str) -> ClassAd | None:
    """A fetch-work hook's reply: None for no work (empty output); every line must be
    an attribute assignment, else the whole reply is refused (as HTCondor does)."""
    ad = ClassAd()
    any_line = False
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        any_line = True
        got = _assignment(line, f"{source}, line {n}")
        if isinstance(got, str):
            raise HookError(got, hook=source)
        ad.update(got)
    return ad if any_line else None


def _assignment(line: str, where: str) -> ClassAd | str:
    """One ``Attr = value`` line as a one-attribute ad, or why it is not one."""
    if "=" not in line:
        return f"{where}: not an attribute assignment: {line.strip()[:80]!r}"
    try:
        ad = ClassAd.parse_old(line, source=where)
    except ClassAdError as exc:
        return f"{where}: {str(exc).splitlines()[0][:200]}"
    if len(ad) != 1:
        return f"{where}: not one attribute assignment: {line.strip()[:80]!r}"
    return ad


@dataclass(frozen=True)
class CronAd:
    """One ad a cron job published: ``name`` is the job's name, or ``<job>.<tag>``."""
    name: str
    ad: ClassAd = field(compare=False)
    update: bool | None = None          # update:true/false on the separator line


@dataclass
class CronParser:
    """A cron job's standard output, fed as it arrives; an ad ends at a ``-`` line
    (WaitForExit jobs publish while they run) or at the end of the output."""
    job: str
    prefix: str = ""
    ads: list[CronAd] = field(default_factory=list)
    bad: list[str] = field(default_factory=list)
    _partial: str = ""
    _current: ClassAd = field(default_factory=ClassAd)
    _lines: int = 0

    def feed(self, data: str) -> list[CronAd]:
        """Lines completed by ``data``; returns the ads they finished."""
        text = self._partial + data
        *lines, self._partial = text.split("\n")
        done: list[CronAd] = []
        for line in lines:
            self._line(line, done)
        self.ads.extend(done)
        return done

    def close(self) -> list[CronAd]:
        """End of output: an unterminated last ad counts (a periodic job need not end
        with a separator)."""
        done: list[CronAd] = []
        if self._partial:
            self._line(self._partial, done)
            self._partial = ""
        if len(self._current):
            done.append(CronAd(self.job, self._current))
            self._current = ClassAd()
        self.ads.extend(done)
        return done

    def _line(self, line: str, done: list[CronAd]) -> None:
        self._lines += 1
        line = line.rstrip("\r")
        if not line.strip():
            return
        if line.startswith("-"):
            done.append(self._separator(line[1:].strip()))
            self._current = ClassAd()
            return
        got = _assignment(self.prefix + line, f"cron job {self.job}, line {self._lines}")
        if isinstance(got, str):
            self.bad.append(got)
        else:
            self._current.update(got)

    def _separator(self, rest: str) -> CronAd:
        name, update = self.job, None
        for tok in rest.split():
            key, sep, value = tok.partition(":")
            if not sep:
                name = f"{self.job}.{tok}"
            elif key.lower() == "update":
                update = boolean_value(value.strip()) is True
        return CronAd(name, self._current, update)


def route(ad: ClassAd, slot_ads: Mapping[str, ClassAd], allowed: Iterable[int] | None
          ) -> list[str]:
    """The slots a cron ad is merged into, in HTCondor's order of preference:
    SlotMergeConstraint (slot ad as TARGET), SlotName/Name (a prefix of the slot's
    Name), SlotTypeId, SlotId; else every slot ``allowed`` (the job's SLOTS) lets in."""
    allow = None if allowed is None else set(allowed)
    out = []
    constraint = ad.lookup("SlotMergeConstraint")
    name = ad.evaluate("SlotName")
    if not isinstance(name, str):
        name = ad.evaluate("Name")
    type_id, slot_id = ad.evaluate("SlotTypeId"), ad.evaluate("SlotId")
    for slot, sad in slot_ads.items():
        sid = sad.evaluate("SlotId")
        if allow is not None and isinstance(sid, int) and sid not in allow:
            continue
        if constraint is not None:
            ok = ad.evaluate("SlotMergeConstraint", sad) is True
        elif isinstance(name, str):
            sname = sad.evaluate("Name")
            ok = isinstance(sname, str) and sname.startswith(name)
        elif isinstance(type_id, int) and not isinstance(type_id, bool):
            ok = sad.evaluate("SlotTypeId") == type_id
        elif isinstance(slot_id, int) and not isinstance(slot_id, bool):
            ok = sid == slot_id
        else:
            ok = True
        if ok:
            out.append(slot)
    return out


# Routing attributes a cron ad carries for the startd, not for the slot ad.
ROUTING = frozenset({"slotmergeconstraint", "slotname", "slottypeid", "slotid", "name"})


def values(ad: ClassAd) -> dict[str, Any]:
    """The attributes of a cron ad as values for the slot ads (routing ones left out);
    an expression is evaluated within the cron ad."""
    out: dict[str, Any] = {}
    for name in ad.keys():
        if name.lower() in ROUTING:
            continue
        v = ad.evaluate(name)
        if v is Error:
            continue
        out[name] = v
    return out


def hook_stdin(*ads: ClassAd, claim_id: str | None = None) -> str:
    """Ads as HTCondor writes them to a hook's standard input: old syntax, separated
    by ``-----`` lines, the claim id appended to the last one when given."""
    text = AD_SEPARATOR.join(_text(a) for a in ads)
    if claim_id is not None:
        text += f'ClaimId = "{claim_id}"\n'
    return text


def _text(ad: ClassAd) -> str:
    t = ad.to_old()
    return t if t.endswith("\n") or not t else t + "\n"


@dataclass(frozen=True)
class FetchedJob:
    """A job ad a fetch-work hook handed out, checked and completed for the slot."""
    ad: ClassAd = field(compare=False)
    keyword: str


def check_fetched(ad: ClassAd, keyword: str, partitionable: bool, as_root: bool,
                  source: str) -> FetchedJob:
    """HTCondor's requirements on fetched work: ``Cmd`` (a full path: fetched work has
    no file transfer), ``Owner`` when the startd runs as root; a partitionable slot
    needs the job's requests, a static one defaults them to 1. ``HookKeyword`` is
    added when the hook did not set it. Attributes only condorpy sets are refused:
    they steer condorpy's own handling of the job."""
    internal = reserved.internal_attributes(ad)
    if internal:
        raise HookError(f"{source}: it sets {', '.join(internal)}, which only condorpy "
                        "sets", hook=source)
    cmd = ad.evaluate("Cmd")
    if not isinstance(cmd, str) or not cmd.startswith("/"):
        raise HookError(f"{source}: the job ad has no Cmd with a full path", hook=source)
    if as_root and not isinstance(ad.evaluate("Owner"), str):
        raise HookError(f"{source}: the job ad has no Owner", hook=source)
    for req in ("RequestCpus", "RequestMemory", "RequestDisk"):
        if ad.lookup(req) is None:
            if partitionable:
                raise HookError(f"{source}: the job ad has no {req} (a partitionable "
                                f"slot needs it)", hook=source)
            ad[req] = 1
    universe = ad.evaluate("JobUniverse")
    if universe is Undefined:
        ad["JobUniverse"] = 5
    elif universe != 5:
        raise HookError(f"{source}: only the vanilla universe (5) runs here, not "
                        f"{universe}", hook=source)
    if not isinstance(ad.evaluate("HookKeyword"), str):
        ad["HookKeyword"] = keyword
    return FetchedJob(ad, str(ad.evaluate("HookKeyword")))


class HookVerdict(Enum):
    GO = "go"
    HOLD = "hold"
    REQUEUE = "requeue"


def hook_status(ad: ClassAd) -> tuple[HookVerdict, int, str]:
    """``HookStatusCode``/``HookStatusMessage`` in a prepare hook's output: 1-299 put
    the job on hold, 300 and above send it back to the queue, 0 or none goes on."""
    code = ad.evaluate("HookStatusCode")
    msg = ad.evaluate("HookStatusMessage")
    text = msg if isinstance(msg, str) else ""
    if not isinstance(code, int) or isinstance(code, bool) or code == 0:
        return HookVerdict.GO, 0, text
    if 1 <= code <= 299:
        return HookVerdict.HOLD, code, text
    if code >= 300:
        return HookVerdict.REQUEUE, code, text
    return HookVerdict.GO, code, text
