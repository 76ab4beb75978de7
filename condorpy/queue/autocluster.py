"""Autoclusters: the local schedd's idle jobs grouped by what matching reads of them,
as HTCondor's schedd groups its jobs, so that a match pass costs one evaluation per
group rather than one per job.

A job's *signature* is the text of each of its significant attributes: those the slot
side's expressions read of a job (any slot ad expression's ``TARGET.x``, or an
unqualified name the slot ad lacks), those the carving policies read, the job's own
Requirements and Rank and its ``Request*``/``Require*`` attributes, and, through each of
these, every attribute of the job it refers to. Two jobs with the same signature are
alike to every slot: when the first of them matches no slot, neither does the next.
An expression that builds names at run time (``eval`` and the like) cannot be read so;
a job using one is a cluster of its own, and a slot ad using one turns the grouping off.

Pure: texts and ads in, signatures and ordering out.
"""

from __future__ import annotations

import heapq
import re
import sys
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field

from condorpy.classad import ClassAd, Expr, parse_expr
from condorpy.classad.ast import unparse
from condorpy.errors import ClassAdError
from condorpy.queue.records import JobId

__all__ = ["Signature", "References", "slot_significant", "significant_from_config", "Keyer",
           "IdleIndex"]

# (attribute, its expression's text) for each significant attribute a job has, sorted
Signature = tuple[tuple[str, str], ...]

# Calls that build an expression from a string at run time, so the names it reads
# cannot be listed ahead of its evaluation. (evalInEachContext and countMatches name
# what they read in their arguments: those names are listed like any other.)
_DYNAMIC_CALLS = frozenset({"eval"})
# Attributes of the job that matching reads whatever the slots say.
_JOB_ROOTS = ("requirements", "rank")
_REQUEST_PREFIXES = ("request", "require")
_CACHE_MAX = 8192


class References:
    """The names expressions read, scoped, kept by expression text (bounded): the
    same few texts come back in every job and every pass."""

    def __init__(self) -> None:
        self._by_text: dict[str, dict[str, set[str]] | None] = {}
        # by the expression object (kept, so that its id is not reused): a slot ad's
        # expressions are the same objects from one pass to the next
        self._by_id: dict[int, tuple[Expr, dict[str, set[str]] | None]] = {}

    def of_slot_expr(self, expr: Expr) -> dict[str, set[str]] | None:
        got = self._by_id.get(id(expr))
        if got is not None and got[0] is expr:
            return got[1]
        refs = self.of_text(unparse(expr.node, old=True))
        if len(self._by_id) >= _CACHE_MAX:
            self._by_id.clear()
        self._by_id[id(expr)] = (expr, refs)
        return refs

    def of_text(self, text: str) -> dict[str, set[str]] | None:
        """None: the text does not parse, or builds names at run time."""
        if text in self._by_text:
            return self._by_text[text]
        try:
            got = self.of_expr(parse_expr(text))
        except ClassAdError:
            got = None
        if len(self._by_text) >= _CACHE_MAX:
            self._by_text.clear()
        self._by_text[text] = got
        return got

    @staticmethod
    def of_expr(expr: Expr) -> dict[str, set[str]] | None:
        return None if expr.calls_any(_DYNAMIC_CALLS) else expr.scoped_references()


def slot_significant(ads: Iterable[ClassAd], carve_texts: Iterable[str] = (),
                     refs: References | None = None) -> frozenset[str] | None:
    """The job attributes (lower case) that the slot side reads: every slot ad
    expression's TARGET references and the unqualified names its ad lacks, and every
    name the carving policies' expressions read. None when some expression builds
    names at run time (then nothing can be grouped)."""
    known = refs or References()
    names: set[str] = set()
    for ad in ads:
        for name, expr in ad.items():
            if expr.is_constant:
                continue
            got = known.of_slot_expr(expr)
            if got is None:
                return None
            names |= got["target"]
            names |= {r for r in got["unscoped"] if ad.lookup(r) is None}
    for text in carve_texts:
        got = known.of_text(text)
        if got is None:
            return None
        names |= got["my"] | got["target"] | got["unscoped"]
    return frozenset(names)


def significant_from_config(knob: Callable[[str], str | None],
                            computed: Callable[[], frozenset[str] | None]
                            ) -> tuple[frozenset[str] | None, bool]:
    """The slot side's significant attributes as the configuration says, and whether
    the administrator gave them: SIGNIFICANT_ATTRIBUTES in place of what the slot ads
    read (as HTCondor's schedd takes it), else ``computed()``;
    ADD_SIGNIFICANT_ATTRIBUTES added either way. The job's own Requirements, Rank and
    requests stay significant."""
    def names(text: str | None) -> set[str]:
        return {n.lower() for n in re.split(r"[\s,]+", text or "") if n}

    given = names(knob("SIGNIFICANT_ATTRIBUTES"))
    base = frozenset(given) if given else computed()
    if base is None:
        return None, False
    return base | names(knob("ADD_SIGNIFICANT_ATTRIBUTES")), bool(given)


def _name_pattern(names: Iterable[str]) -> re.Pattern[str]:
    alts = sorted({re.escape(n) for n in names}, key=lambda s: (-len(s), s))
    alts += [p + r"\w*" for p in _REQUEST_PREFIXES]
    # a line of the old format, ``Name = expr``, for the names wanted; searched for
    # from a newline (a literal start the regex engine finds fast) in "\n" + text
    return re.compile(r"\n(" + "|".join(alts) + r")[ \t]*=[ \t]*([^\n]*?)[ \t]*(?=\n)",
                      re.IGNORECASE)


class Keyer:
    """Signatures of jobs, under one set of slot-side significant attributes (None:
    every job apart). Made anew when that set changes."""

    def __init__(self, significant: frozenset[str] | None,
                 refs: References | None = None) -> None:
        self.significant = significant
        self.refs = refs or References()
        # the names a stored row is scanned for: the significant ones, the job's own
        # roots, JobPrio, and every name a signature has been found to reach (grows)
        self._scanned: set[str] = set(significant or ()) | set(_JOB_ROOTS) | {"jobprio"}
        self._pattern = _name_pattern(self._scanned)
        # the last row scanned whole and what was found in it: the rows of one
        # submission part repeat their first job's text and add their differences
        self._base = ""
        self._base_found: dict[str, str] = {}
        self._signatures: dict[tuple[tuple[str, str], ...], Signature | None] = {}

    # --- from an ad -----------------------------------------------------------------
    def of_ad(self, ad: ClassAd) -> Signature | None:
        """``ad``'s signature; None when it must be a cluster of its own."""
        if self.significant is None:
            return None

        def lookup(name: str) -> str | None:
            expr = ad.lookup(name)
            return None if expr is None else unparse(expr.node, old=True).strip()

        roots = [n.lower() for n in ad if n.lower().startswith(_REQUEST_PREFIXES)]
        return _closure((*self.significant, *_JOB_ROOTS, *roots), lookup, self.refs)[0]

    # --- from a stored row ----------------------------------------------------------
    def of_text(self, text: str) -> tuple[Signature | None, float | None] | None:
        """The signature and JobPrio of a job stored as ``text`` (the store's old
        format), read without parsing the ad: None when the text must be parsed (the
        new format); a JobPrio of None when it is an expression."""
        if text.startswith("["):
            return None
        if self.significant is None:
            return None, _prio_of(self._scan(text).get("jobprio"))
        while True:
            found = self._scan(text)
            prio = _prio_of(found.get("jobprio"))
            # jobs alike in what was found are alike in their signature
            seen = tuple(sorted(found.items()))
            if seen in self._signatures:
                return self._signatures[seen], prio
            roots = [n for n in found if n.startswith(_REQUEST_PREFIXES)]
            sig, reached = _closure((*self.significant, *_JOB_ROOTS, *roots), found.get,
                                    self.refs)
            missing = {n for n in reached if n not in self._scanned
                       and not n.startswith(_REQUEST_PREFIXES)}
            if not missing:
                if len(self._signatures) >= _CACHE_MAX:
                    self._signatures.clear()
                self._signatures[seen] = sig
                return sig, prio
            # a name first reached here: scanned for from now on, and this row again
            self._scanned |= missing
            self._pattern = _name_pattern(self._scanned)
            self._base, self._base_found = "", {}
            self._signatures.clear()

    def _scan(self, text: str) -> dict[str, str]:
        base = self._base
        if base and text.startswith(base):
            found = dict(self._base_found)
            rest = text[len(base):]
        else:
            found, rest = {}, text
        for name, value in self._pattern.findall("\n" + rest + "\n"):
            found[name.lower()] = value      # a later line wins
        if rest is text and text.endswith("\n"):
            self._base, self._base_found = text, dict(found)
        return found


def _closure(roots: Iterable[str], lookup: Callable[[str], str | None],
             known: References) -> tuple[Signature | None, set[str]]:
    """The signature reached from ``roots`` (None: an expression on the way builds
    names at run time) and every name looked up on the way."""
    seen: set[str] = set()
    out: list[tuple[str, str]] = []
    stack = list(roots)
    unique = False
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        text = lookup(name)
        if text is None:
            continue
        # interned: jobs that differ in one attribute share the text of the others
        out.append((sys.intern(name), sys.intern(text)))
        refs = known.of_text(text)
        if refs is None:
            unique = True
            continue
        # MY.x and an unqualified x are the job's own (a name it lacks reads the slot,
        # alike for every job that lacks it). TARGET.x is mostly the slot's, but in a
        # Require<Device> constraint the target is the job: followed too, as a name
        # the job lacks costs nothing
        stack.extend(refs["my"])
        stack.extend(refs["unscoped"])
        stack.extend(refs["target"])
    if unique:
        return None, seen
    out.sort()
    return tuple(out), seen


def _prio_of(text: str | None) -> float | None:
    if text is None:
        return 0.0
    try:
        value = float(text)
    except ValueError:
        return None
    return value if value == value else None


# --------------------------------------------------------------------- the index
@dataclass(slots=True)
class _Bucket:
    """The idle jobs of one autocluster at one JobPrio: a heap of job ids, some of
    them stale (gone from the bucket since: see IdleIndex._where)."""
    cluster: int
    prio: float
    heap: list[JobId] = field(default_factory=list)
    live: int = 0


class IdleIndex:
    """The idle jobs by autocluster: each job costs an entry (its id and its bucket's
    number); a match pass walks the buckets, not the jobs."""

    def __init__(self) -> None:
        self._where: dict[JobId, int] = {}              # job -> bucket number
        self._buckets: dict[int, _Bucket] = {}
        self._bucket_of: dict[tuple[int, float], int] = {}
        self._ids: dict[Hashable, int] = {}             # signature -> autocluster id
        self._sigs: dict[int, Hashable] = {}
        self._in_use: dict[int, int] = {}               # autocluster id -> buckets
        self._next_bucket = 0
        self._next_id = 1

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._where

    def __iter__(self) -> Iterator[JobId]:
        return iter(list(self._where))

    @property
    def clusters(self) -> int:
        """How many autoclusters hold idle jobs."""
        return len(self._sigs)

    def add(self, job_id: JobId, sig: Signature | None, prio: float) -> int:
        """``job_id`` is idle with signature ``sig`` (None: apart from every other job)
        and JobPrio ``prio``; its autocluster id."""
        key: Hashable = sig if sig is not None else ("#job", job_id.cluster, job_id.proc)
        ac = self._ids.get(key)
        if ac is None:
            ac = self._ids[key] = self._next_id
            self._sigs[ac] = key
            self._in_use[ac] = 0
            self._next_id += 1
        bid = self._bucket_of.get((ac, prio))
        if bid is not None and self._where.get(job_id) == bid:
            return ac
        self.remove(job_id)
        if bid is None or bid not in self._buckets:
            bid = self._next_bucket
            self._next_bucket += 1
            self._buckets[bid] = _Bucket(ac, prio)
            self._bucket_of[(ac, prio)] = bid
            self._in_use[ac] += 1
        b = self._buckets[bid]
        self._where[job_id] = bid
        b.live += 1
        heapq.heappush(b.heap, job_id)
        if len(b.heap) > 2 * b.live + 32:
            # re-added jobs leave stale entries behind: rebuilt once they dominate
            b.heap = sorted({j for j in b.heap if self._where.get(j) == bid})
        return ac

    def remove(self, job_id: JobId) -> bool:
        bid = self._where.pop(job_id, None)
        if bid is None:
            return False
        b = self._buckets[bid]
        b.live -= 1
        if b.live <= 0:
            del self._buckets[bid]
            del self._bucket_of[(b.cluster, b.prio)]
            self._in_use[b.cluster] -= 1
            if self._in_use[b.cluster] <= 0:
                del self._in_use[b.cluster]
                del self._ids[self._sigs.pop(b.cluster)]
        return True

    def entry(self, job_id: JobId) -> tuple[Signature | None, float] | None:
        """What :meth:`add` was given for ``job_id`` (to put it back as it was)."""
        bid = self._where.get(job_id)
        if bid is None:
            return None
        b = self._buckets[bid]
        key = self._sigs[b.cluster]
        sig = None if isinstance(key, tuple) and key[:1] == ("#job",) else key
        return sig, b.prio  # type: ignore[return-value]

    def cluster_of(self, job_id: JobId) -> int | None:
        """``job_id``'s autocluster id (HTCondor's AutoClusterId)."""
        bid = self._where.get(job_id)
        return None if bid is None else self._buckets[bid].cluster

    def attrs_of(self, cluster: int) -> str:
        """The significant attributes an autocluster's signature holds, as
        AutoClusterAttrs lists them."""
        key = self._sigs.get(cluster)
        if not isinstance(key, tuple) or key[:1] == ("#job",):
            return ""
        return ",".join(name for name, _ in key)

    def _head(self, bid: int, b: _Bucket) -> JobId | None:
        heap = b.heap
        while heap:
            j = heap[0]
            if self._where.get(j) == bid:
                return j
            heapq.heappop(heap)
        return None

    def heads(self, rejected: set[int]) -> Iterator[tuple[int, JobId]]:
        """The head job of each bucket, JobPrio then job id order, and its autocluster
        id; a bucket of an autocluster in ``rejected`` is passed over. The caller
        either takes the job out of the index or rejects its autocluster before
        asking for the next (else the same head comes again)."""
        order = []
        for bid, bucket in self._buckets.items():
            h = self._head(bid, bucket)
            if h is not None:
                order.append((-bucket.prio, h, bid))
        heapq.heapify(order)
        while order:
            negp, head, bid = order[0]
            b = self._buckets.get(bid)
            if b is None or b.cluster in rejected:
                heapq.heappop(order)
                continue
            now = self._head(bid, b)
            if now is None:
                heapq.heappop(order)
                continue
            if now != head:
                heapq.heapreplace(order, (negp, now, bid))
                continue
            yield b.cluster, now
