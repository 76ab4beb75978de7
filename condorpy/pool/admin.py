"""The pool's administration commands to an execution point: typed records in, reply
bytes out. Sans-I/O; the daemon acts through the same control commands its local CLI
uses.

Numbers and levels (htcondor/htcondor ``condor_commands.h``, ``startd_main.cpp``);
messages (``command.cpp``, ``dc_startd.cpp``, ``drain.cpp``, ``daemon_core.cpp``):

- ``QUERY_STARTD_ADS`` (5, READ), ``condor_status -direct``: a query ad
  (``Requirements``, ``Projection``, ...). Reply, one message: ``int 1`` and a slot ad
  (no private attributes) for each slot the query's ``Requirements`` takes, then
  ``int 0``.
- ``DC_CONFIG_VAL`` (60007) / ``CONFIG_VAL`` (457) (READ), ``condor_config_val
  -startd`` (23.9.6 sends 457): a string, the knob's
  name. Reply: the value as a string; ``"Not defined"`` when the knob is not set.
- ``VACATE_ALL_CLAIMS`` (447) / ``VACATE_ALL_FAST`` (474) (ADMINISTRATOR),
  ``condor_vacate [-fast]``: no arguments, no reply.
- ``VACATE_CLAIM`` (465) / ``VACATE_CLAIM_FAST`` (475) (ADMINISTRATOR),
  ``condor_vacate -name slot@host``: a string, the slot's name; no reply.
- ``DRAIN_JOBS`` (512, ADMINISTRATOR): an ad with ``HowFast`` (0 graceful, 10 quick,
  20 fast), ``ResumeOnCompletion`` (0 nothing, 1 resume, 2 exit, 3 restart,
  4 reconfig), ``DrainReason``, ``CheckExpr``, ``StartExpr``. Reply: an ad ``Result``
  and ``RequestID``, or ``ErrorString`` and ``ErrorCode``.
- ``CANCEL_DRAIN_JOBS`` (513, ADMINISTRATOR): an ad with ``RequestID`` (optional).
  Reply: an ad ``Result`` (and ``ErrorString``, ``ErrorCode``).
- ``DC_NOP_READ`` (60020), ``_WRITE`` (60021), ``_ADMINISTRATOR`` (60023),
  ``_DAEMON`` (60026), one per level (``daemon_core.cpp``; ``command_strings.cpp``
  ``getSampleCommand``): nothing follows, nothing is answered.
- ``DC_SEC_QUERY`` (60040), ``condor_ping``: the security request names the command
  asked about in ``AuthCommand`` (a ``DC_NOP_<LEVEL>``); the handshake and the
  authorisation are that command's, which is not run. Reply, when authorised: an ad
  ``AuthorizationSucceeded = true`` (``daemon_command.cpp`` ``ExecCommand``); a
  refusal is the handshake's ``DENIED``.
"""

from __future__ import annotations

from dataclasses import dataclass

from condorpy.classad import ClassAd, match
from condorpy.errors import WireError
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool import secserver
from condorpy.pool.secserver import Perm
from condorpy.pool.wire_ad import get_classad, put_classad

QUERY_STARTD_ADS = 5
VACATE_ALL_CLAIMS = 447
VACATE_CLAIM = 465
VACATE_ALL_FAST = 474
VACATE_CLAIM_FAST = 475
DRAIN_JOBS = 512
CANCEL_DRAIN_JOBS = 513
DC_CONFIG_VAL = 60007
CONFIG_VAL = 457        # what 23.9.6's condor_config_val sends; DC_CONFIG_VAL's layout
DC_NOP_READ = 60020
DC_NOP_WRITE = 60021
DC_NOP_ADMINISTRATOR = 60023
DC_NOP_DAEMON = 60026
DC_SEC_QUERY = secserver.DC_SEC_QUERY
NOPS = {DC_NOP_READ: Perm.READ, DC_NOP_WRITE: Perm.WRITE,
        DC_NOP_ADMINISTRATOR: Perm.ADMINISTRATOR, DC_NOP_DAEMON: Perm.DAEMON}

NAMES = {QUERY_STARTD_ADS: "QUERY_STARTD_ADS", VACATE_ALL_CLAIMS: "VACATE_ALL_CLAIMS",
         VACATE_CLAIM: "VACATE_CLAIM", VACATE_ALL_FAST: "VACATE_ALL_FAST",
         VACATE_CLAIM_FAST: "VACATE_CLAIM_FAST", DRAIN_JOBS: "DRAIN_JOBS",
         CANCEL_DRAIN_JOBS: "CANCEL_DRAIN_JOBS", DC_CONFIG_VAL: "DC_CONFIG_VAL",
         CONFIG_VAL: "CONFIG_VAL", DC_SEC_QUERY: "DC_SEC_QUERY",
         **{n: f"DC_NOP_{p.value}" for n, p in NOPS.items()}}

# command -> (the level it needs, whether a message follows the handshake)
COMMANDS: dict[int, tuple[Perm, bool]] = {
    QUERY_STARTD_ADS: (Perm.READ, True),
    DC_CONFIG_VAL: (Perm.READ, True),
    CONFIG_VAL: (Perm.READ, True),
    VACATE_ALL_CLAIMS: (Perm.ADMINISTRATOR, False),
    VACATE_ALL_FAST: (Perm.ADMINISTRATOR, False),
    VACATE_CLAIM: (Perm.ADMINISTRATOR, True),
    VACATE_CLAIM_FAST: (Perm.ADMINISTRATOR, True),
    DRAIN_JOBS: (Perm.ADMINISTRATOR, True),
    CANCEL_DRAIN_JOBS: (Perm.ADMINISTRATOR, True),
    **{n: (p, False) for n, p in NOPS.items()},
}

HOW_FAST = {0: "graceful", 10: "quick", 20: "fast"}
ON_COMPLETION = {0: "nothing", 1: "resume", 2: "exit"}
MAX_NAME = 4096


@dataclass(frozen=True)
class Query:
    ad: ClassAd


@dataclass(frozen=True)
class ConfigVal:
    name: str


@dataclass(frozen=True)
class Vacate:
    slot: str | None           # None: every slot
    fast: bool


@dataclass(frozen=True)
class Drain:
    how: str
    on_completion: str
    reason: str | None
    check: str | None
    start: str | None


@dataclass(frozen=True)
class CancelDrain:
    request_id: str | None


@dataclass(frozen=True)
class Nop:
    level: Perm


@dataclass(frozen=True)
class SecQuery:
    """condor_ping's question: would ``command`` be authorised (it was)."""

    command: int


AdminCommand = Query | ConfigVal | Vacate | Drain | CancelDrain | Nop | SecQuery


def _name(r: Reader, what: str) -> str:
    text = r.get_str(what)
    if not text or len(text) > MAX_NAME or any(c in text for c in "\n\r\0"):
        raise WireError(f"{what} is not a usable name ({text[:40]!r})", peer=r.peer)
    return text


def _int_attr(ad: ClassAd, name: str, default: int, what: str, peer: str) -> int:
    v = ad.get(name, default)
    if not isinstance(v, int) or isinstance(v, bool):
        raise WireError(f"{name} in {what} is not an integer", peer=peer)
    return v


def _expr_text(ad: ClassAd, name: str) -> str | None:
    e = ad.lookup(name)
    return None if e is None else str(e)


def parse(command: int, r: Reader, asked: int = 0) -> AdminCommand:
    """The command's message; raises WireError naming the peer if it is malformed.
    ``asked``: for DC_SEC_QUERY, the command whose authorisation was asked."""
    name = NAMES.get(command, f"command {command}")
    out: AdminCommand
    if command == DC_SEC_QUERY:
        if asked not in COMMANDS:
            raise WireError(f"DC_SEC_QUERY about command {asked}, not one this port "
                            "serves", peer=r.peer)
        out = SecQuery(asked)
    elif command in NOPS:
        out = Nop(NOPS[command])
    elif command == QUERY_STARTD_ADS:
        out = Query(get_classad(r, f"the query of {name}"))
    elif command in (DC_CONFIG_VAL, CONFIG_VAL):
        out = ConfigVal(_name(r, f"the knob of {name}"))
    elif command in (VACATE_ALL_CLAIMS, VACATE_ALL_FAST):
        out = Vacate(None, command == VACATE_ALL_FAST)
    elif command in (VACATE_CLAIM, VACATE_CLAIM_FAST):
        out = Vacate(_name(r, f"the slot of {name}"), command == VACATE_CLAIM_FAST)
    elif command == DRAIN_JOBS:
        ad = get_classad(r, f"the request of {name}")
        how = _int_attr(ad, "HowFast", 0, name, r.peer)
        done = _int_attr(ad, "ResumeOnCompletion", 0, name, r.peer)
        if how not in HOW_FAST:
            raise WireError(f"HowFast = {how} in {name}", peer=r.peer)
        if done not in (0, 1, 2, 3, 4):
            raise WireError(f"ResumeOnCompletion = {done} in {name}", peer=r.peer)
        reason = ad.get("DrainReason")
        out = Drain(HOW_FAST[how], ON_COMPLETION.get(done, f"unsupported:{done}"),
                    reason if isinstance(reason, str) else None,
                    _expr_text(ad, "CheckExpr"), _expr_text(ad, "StartExpr"))
    elif command == CANCEL_DRAIN_JOBS:
        ad = get_classad(r, f"the request of {name}")
        rid = ad.get("RequestID")
        out = CancelDrain(rid if isinstance(rid, str) and rid else None)
    else:
        raise WireError(f"command {command} is not one this port serves", peer=r.peer)
    r.end(f"the message of {name}")
    return out


def query_reply(w: Writer, query: ClassAd, ads: list[ClassAd]) -> Writer:
    """The slots ``query``'s Requirements take, each without private attributes."""
    for ad in ads:
        if "Requirements" not in query or match_query(query, ad):
            w.put_int(1)
            put_classad(w, ad, private=False)
    return w.put_int(0)


def match_query(query: ClassAd, ad: ClassAd) -> bool:
    # one-sided, as the startd's makeAdList does: only the query's Requirements count
    q = query.copy()
    ad2 = ad.copy()
    ad2["Requirements"] = True
    return match(q, ad2)


def config_reply(w: Writer, value: str | None) -> Writer:
    # an unset knob: the words HTCondor's daemons send (seen from 23.9.6's master)
    return w.put_string("Not defined" if value is None else value)


def sec_query_reply(w: Writer) -> Writer:
    ad = ClassAd()
    ad["AuthorizationSucceeded"] = True
    return put_classad(w, ad)


def result_reply(w: Writer, ok: bool, request_id: str | None = None, error: str = "",
                 code: int = 0) -> Writer:
    ad = ClassAd()
    ad["Result"] = ok
    if not ok:
        ad["ErrorString"] = error
        ad["ErrorCode"] = code or 1
    elif request_id:
        ad["RequestID"] = request_id
    return put_classad(w, ad)
