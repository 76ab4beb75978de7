"""The rules of ``condorpy qedit``: which job attributes may be changed, by whom, and
to what, as the schedd's ``SetAttribute`` decides them (``ModifyAttrCheck`` in
HTCondor's ``qmgmt.cpp``).

Four kinds of attribute, from the knobs HTCondor reads for them:

- *immutable* (``IMMUTABLE_JOB_ATTRS``, ``SYSTEM_IMMUTABLE_JOB_ATTRS``): nobody changes
  them once the job is queued: the job's ids, its owner, its universe;
- *secure* (``SECURE_JOB_ATTRS``, ``SYSTEM_SECURE_JOB_ATTRS``): only the queue itself
  writes them (the submitter's identity as it was authenticated);
- *protected* (``PROTECTED_JOB_ATTRS``, ``SYSTEM_PROTECTED_JOB_ATTRS``): only a queue
  superuser changes them;
- everything else: the job's owner and the queue superusers.

condorpy adds what its own daemon steers by: ``JobStatus`` (a job changes state
through ``hold``, ``release`` and ``rm``, which also stop its starter and write its
events; HTCondor checks a new JobStatus against the old instead, which lets a user
make the queue disagree with the job) and every reserved ``Condorpy*`` attribute
(:mod:`condorpy.starter.reserved`). Pure: the caller passes the knobs in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from enum import Enum

from condorpy.classad import Expr, parse_expr
from condorpy.errors import ClassAdError, QueueError
from condorpy.inputs import shorten
from condorpy.starter import reserved


class Protection(Enum):
    NORMAL = "normal"
    PROTECTED = "protected"
    IMMUTABLE = "immutable"
    SECURE = "secure"


# HTCondor's defaults for its SYSTEM_*_JOB_ATTRS knobs (param_info.in), used when the
# configuration leaves a knob undefined.
SYSTEM_IMMUTABLE = ("Owner ClusterId JobUniverse ProcId MyType TargetType User OsUser")
SYSTEM_SECURE = ("x509userProxySubject x509UserProxyEmail x509UserProxyVOName "
                 "x509UserProxyFirstFQAN x509UserProxyFQAN TotalSubmitProcs "
                 "AuthTokenSubject AuthTokenIssuer AuthTokenGroups AuthTokenId "
                 "AuthTokenScopes AuthTokenProject OsUser")
# condorpy's own: changed only through the commands that act on a job's state
CONDORPY_IMMUTABLE = ("JobStatus",)

_KNOBS = {
    Protection.IMMUTABLE: (("IMMUTABLE_JOB_ATTRS", ""),
                           ("SYSTEM_IMMUTABLE_JOB_ATTRS", SYSTEM_IMMUTABLE)),
    Protection.SECURE: (("SECURE_JOB_ATTRS", ""), ("SYSTEM_SECURE_JOB_ATTRS", SYSTEM_SECURE)),
    Protection.PROTECTED: (("PROTECTED_JOB_ATTRS", ""), ("SYSTEM_PROTECTED_JOB_ATTRS", "")),
}
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# words the ClassAd language keeps for itself: not attribute names a job can hold
_KEYWORDS = frozenset({"true", "false", "undefined", "error", "is", "isnt", "parent",
                       "my", "target", "super"})
MAX_VALUE = 64 * 1024        # characters of one expression


def _names(text: str | None) -> Iterable[str]:
    return (n for n in re.split(r"[\s,]+", text or "") if n)


@dataclass(frozen=True)
class EditRules:
    """Attribute names (lower case) by protection."""

    immutable: frozenset[str]
    secure: frozenset[str]
    protected: frozenset[str]

    @classmethod
    def from_knobs(cls, knob: Callable[[str], str | None]) -> EditRules:
        """The rules a configuration makes; an undefined knob takes HTCondor's
        default, a defined one (even empty) replaces it."""
        sets: dict[Protection, set[str]] = {}
        for kind, knobs in _KNOBS.items():
            names: set[str] = set()
            for name, default in knobs:
                value = knob(name)
                names.update(n.lower() for n in _names(default if value is None else value))
            sets[kind] = names
        sets[Protection.IMMUTABLE].update(n.lower() for n in CONDORPY_IMMUTABLE)
        return cls(frozenset(sets[Protection.IMMUTABLE]), frozenset(sets[Protection.SECURE]),
                   frozenset(sets[Protection.PROTECTED]))

    def protection(self, attr: str) -> Protection:
        lc = attr.lower()
        if lc in self.immutable:
            return Protection.IMMUTABLE
        if lc in self.secure or reserved.is_internal(attr):
            return Protection.SECURE
        if lc in self.protected:
            return Protection.PROTECTED
        return Protection.NORMAL


@dataclass(frozen=True)
class Edit:
    """One attribute to set, checked: its name and its value as an expression."""

    attr: str
    value: Expr
    text: str


def check_name(attr: str) -> None:
    if not _NAME.match(attr) or attr.lower() in _KEYWORDS:
        raise QueueError(f"illegal attribute name {attr!r}: a name is a letter or _ "
                         f"followed by letters, digits and _, and not a ClassAd keyword")


def parse_value(attr: str, text: str) -> Expr:
    """``text`` as the ClassAd expression ``attr`` is set to; a clear error if it is
    none (condor_qedit: "illegal value")."""
    if not text.strip():
        raise QueueError(f"illegal value for {attr}: an empty expression")
    if len(text) > MAX_VALUE:
        raise QueueError(f"illegal value for {attr}: longer than {MAX_VALUE} characters")
    try:
        return parse_expr(text)
    except ClassAdError as exc:
        first = str(exc).splitlines()[0]
        raise QueueError(f"illegal value for {attr}: {shorten(text)!r} is not a "
                         f"ClassAd expression: {first}") from None


def check_edit(rules: EditRules, attr: str, text: str, *, superuser: bool) -> Edit:
    """The edit ``attr = text`` when the caller may make it; QueueError saying why
    not otherwise. Ownership of the jobs is the caller's to check."""
    check_name(attr)
    kind = rules.protection(attr)
    if kind in (Protection.IMMUTABLE, Protection.SECURE):
        raise QueueError(f"Update of {kind.value} attribute \"{attr}\" is not allowed")
    if kind is Protection.PROTECTED and not superuser:
        raise QueueError(f"Unauthorized setting of protected attribute {attr} denied: "
                         f"only a queue superuser may change it")
    return Edit(attr, parse_value(attr, text), text)


def split_edits(words: list[str]) -> list[tuple[str, str]]:
    """condor_qedit's edit list: ``ATTR VALUE`` pairs, or ``ATTR=VALUE`` words, in any
    mix. A word holding ``=`` is one edit; any other word is a name whose value is
    the next word (which may itself hold ``=`` or start with ``-``)."""
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(words):
        word = words[i]
        if "=" in word and not word.startswith("="):
            attr, _, value = word.partition("=")
            out.append((attr.strip(), value.strip()))
            i += 1
            continue
        if i + 1 >= len(words):
            raise QueueError(f"expression required after attribute {word}")
        out.append((word, words[i + 1]))
        i += 2
    return out
