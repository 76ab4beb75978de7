"""CCB, HTCondor's connection broker, from the side of a daemon peers cannot reach
(behind NAT or a firewall), sans-I/O: the messages, their parsing, and the timing
decisions. The listener that runs them is ``condorpy/startd/poolside/ccb.py``.

Facts (htcondor/htcondor ``src/ccb/ccb_listener.cpp``, ``ccb_server.cpp``,
``ccb_client.cpp``, ``condor_commands.h``, ``condor_sinful.cpp``; the 23.9.6 collector
of the reference pool; bbockelm/golang-ccb's README lists the same numbers):

- The daemon opens a connection to its broker (a collector, ``CCB_ADDRESS``) with the
  usual security handshake for ``CCB_REGISTER`` (67; authorized at DAEMON, or
  ADVERTISE_STARTD), always a fresh session, and sends one ad: ``Command = 67``,
  ``Name`` (for the broker's log only) and, when it was registered before, its
  ``CCBID`` (the contact it was given) and reconnect cookie as ``ClaimId``, so the
  broker can give it the same id again. The broker answers ``Command = 67``,
  ``CCBID = "<broker address>#<number>"`` (the contact the daemon advertises) and a
  fresh cookie in ``ClaimId``. The connection stays open, each message one ad.
- Either side may send ``Command = 441`` (ALIVE) as a heartbeat; the broker answers
  one with one. The daemon sends one after ``CCB_HEARTBEAT_INTERVAL`` seconds without
  a word from the broker (at least 30, 0 for never) and counts the connection dead
  after three intervals of silence.
- The broker forwards a peer's ``CCB_REQUEST`` (68) as ``Command = 68``,
  ``MyAddress`` (where the peer listens), ``ClaimId`` (the connect id the peer will
  check), ``RequestID`` and ``Name``. The daemon connects to ``MyAddress`` (through
  its shared port when the address names one) and sends, as a raw command with no
  handshake, ``int 69`` (CCB_REVERSE_CONNECT) and an ad with ``ClaimId``,
  ``RequestID`` and ``MyAddress``; the handshake digests start afresh after it. From
  there the peer speaks first, exactly as if it had connected to the daemon's
  command port. The daemon then tells the broker how it went: the same ad plus
  ``Result`` (a boolean) and, on failure, ``ErrorString``.
- A daemon registered with brokers advertises ``CCBID=<contact>`` (several contacts
  space-separated) and ``PrivNet=<PRIVATE_NETWORK_NAME>`` in its sinful string; a
  peer whose own PRIVATE_NETWORK_NAME is the same connects directly, any other goes
  through the broker.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass

from condorpy.classad import ClassAd
from condorpy.config import Config
from condorpy.errors import WireError
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.security import ClientPolicy, Op, Session
from condorpy.pool.sinful import Address, parse_address
from condorpy.pool.wire_ad import get_classad, put_classad

CCB_REGISTER = 67
CCB_REQUEST = 68
CCB_REVERSE_CONNECT = 69
ALIVE = 441
MIN_HEARTBEAT = 30          # the broker expects little unsolicited traffic
DEAD_AFTER = 3              # heartbeat intervals of silence that end a connection
RETRY_FIRST = 1.0           # the first retry's delay; each failure doubles it
MAX_MESSAGE_ATTRS = 64      # a broker's messages hold a handful of attributes


@dataclass(frozen=True)
class CcbSettings:
    """The brokers this daemon registers with and how it keeps the connections."""

    brokers: tuple[tuple[str, Address], ...]    # CCB_ADDRESS: as written, parsed
    heartbeat: int = 300                         # seconds; 0: no heartbeats
    reconnect_time: float = 60.0                 # the longest wait between tries
    timeout: float = 300.0                       # one registration's time limit
    private_network: str = ""                    # PRIVATE_NETWORK_NAME


def ccb_settings(cfg: Config) -> CcbSettings | None:
    """CCB_ADDRESS and its companions; None when no broker is named."""
    names = list(dict.fromkeys(cfg.get_list("CCB_ADDRESS")))
    if not names:
        return None
    brokers = tuple((n, parse_address(n, source="CCB_ADDRESS")) for n in names)
    return CcbSettings(
        brokers=brokers,
        heartbeat=heartbeat_interval(cfg.knob_int("CCB_HEARTBEAT_INTERVAL")),
        reconnect_time=float(max(cfg.knob_int("CCB_RECONNECT_TIME"), 1)),
        timeout=float(max(cfg.knob_int("CCB_TIMEOUT"), 1)),
        private_network=(cfg.get("PRIVATE_NETWORK_NAME") or "").strip())


@dataclass(frozen=True)
class Registration:
    """What a broker gave this daemon: the contact it advertises and the cookie that
    claims the same id again after a reconnect."""

    contact: str
    cookie: str

    @property
    def ccbid(self) -> int | None:
        """The number after the contact's last ``#`` (what the broker keys it by)."""
        tail = self.contact.rpartition("#")[2]
        return int(tail) if tail.isdigit() else None


@dataclass(frozen=True)
class Request:
    """A peer asks, through the broker, for a connection from this daemon."""

    address: str
    connect_id: str
    request_id: str
    name: str = ""


@dataclass(frozen=True)
class Heartbeat:
    """The broker's ALIVE (or its answer to ours)."""


Message = Registration | Request | Heartbeat


# ------------------------------------------------------------------ messages
def register_ad(name: str, previous: Registration | None = None) -> ClassAd:
    ad = ClassAd()
    ad["Command"] = CCB_REGISTER
    if previous is not None:
        ad["CCBID"] = previous.contact
        ad["ClaimId"] = previous.cookie
    ad["Name"] = name
    return ad


def heartbeat_ad() -> ClassAd:
    ad = ClassAd()
    ad["Command"] = ALIVE
    return ad


def reverse_connect_ad(req: Request) -> ClassAd:
    ad = ClassAd()
    ad["ClaimId"] = req.connect_id
    ad["RequestID"] = req.request_id
    ad["MyAddress"] = req.address
    return ad


def result_ad(req: Request, ok: bool, error: str | None = None) -> ClassAd:
    """The broker hears whether the reverse connection was made (it tells the peer)."""
    ad = reverse_connect_ad(req)
    ad["Result"] = ok
    if error:
        ad["ErrorString"] = error
    return ad


def message(ad: ClassAd, crypto: bool) -> bytes:
    """One ad as the payload of a message on the broker's connection."""
    return put_classad(Writer(crypto=crypto), ad).payload()


def reverse_connect(req: Request) -> bytes:
    """The first (and only) message this daemon sends on a reverse connection: a raw
    command, never encrypted (no session exists yet)."""
    w = Writer().put_int(CCB_REVERSE_CONNECT)
    return put_classad(w, reverse_connect_ad(req)).payload()


def _text(ad: ClassAd, name: str, what: str, peer: str, required: bool = True) -> str:
    value = ad.get(name)
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise WireError(f"{what} has no {name} string", peer=peer)
    return value


def parse_ad(ad: ClassAd, peer: str) -> Message:
    """What a broker's message means; one this side does not know raises WireError."""
    cmd = ad.get("Command")
    if cmd == CCB_REGISTER:
        what = "the CCB registration reply"
        return Registration(_text(ad, "CCBID", what, peer),
                            _text(ad, "ClaimId", what, peer, required=False))
    if cmd == CCB_REQUEST:
        what = "a CCB request"
        return Request(_text(ad, "MyAddress", what, peer),
                       _text(ad, "ClaimId", what, peer),
                       _text(ad, "RequestID", what, peer),
                       _text(ad, "Name", what, peer, required=False))
    if cmd == ALIVE:
        return Heartbeat()
    raise WireError(f"unexpected message from the CCB broker (Command = {cmd!r})",
                    peer=peer)


def parse(payload: bytes, peer: str, crypto: bool) -> Message:
    r = Reader(payload, peer, crypto=crypto)
    ad = get_classad(r, "a CCB message", max_attrs=MAX_MESSAGE_ATTRS)
    r.end("a CCB message")
    return parse_ad(ad, peer)


def register(policy: ClientPolicy, peer: str, name: str,
             previous: Registration | None = None
             ) -> Generator[Op, bytes | None, tuple[Session, Registration]]:
    """The handshake for CCB_REGISTER (a new session: a cached one the broker has
    forgotten could not be refused on a connection it cannot reach back), the
    registration and the broker's answer."""
    from condorpy.pool import collector     # the pool's settings load without it

    def read(r: Reader) -> Message:
        return parse_ad(get_classad(r, "the CCB registration reply",
                                    max_attrs=MAX_MESSAGE_ATTRS), peer)

    session, reply = yield from collector.command(
        CCB_REGISTER, policy, peer, lambda w: put_classad(w, register_ad(name, previous)),
        read)
    if not isinstance(reply, Registration):
        raise WireError("the CCB broker answered the registration with something else",
                        peer=peer)
    return session, reply


def resumed(broker: str, ccbid: int | None, cookie: int | None) -> Registration | None:
    """An earlier daemon's registration with ``broker`` (its number and cookie, as the
    store keeps them): the broker reads only the number after the contact's ``#``."""
    if ccbid is None or cookie is None:
        return None
    return Registration(f"{broker}#{ccbid}", str(cookie))


# ------------------------------------------------------------------ timing
def heartbeat_interval(configured: int) -> int:
    """CCB_HEARTBEAT_INTERVAL as the listener uses it: 0 (or less) is off; else at
    least MIN_HEARTBEAT."""
    if configured <= 0:
        return 0
    return max(configured, MIN_HEARTBEAT)


def heartbeat_due(last_heard: float, last_sent: float, interval: int) -> float:
    """When the next heartbeat goes: ``interval`` seconds after the later of the
    broker's last word and our last heartbeat; never when heartbeats are off."""
    if interval <= 0:
        return float("inf")
    return max(last_heard, last_sent) + interval


def silent_too_long(last_heard: float, now: float, interval: int) -> bool:
    """Whether the broker has been silent so long that its connection counts as dead
    (it answers every heartbeat)."""
    return interval > 0 and now - last_heard > DEAD_AFTER * interval


def retry_delay(failures: int, reconnect_time: float) -> float:
    """Seconds before the next try after ``failures`` failed ones in a row: one second,
    doubling, at most CCB_RECONNECT_TIME (HTCondor waits CCB_RECONNECT_TIME every
    time; a broker back from a restart is found sooner this way)."""
    if failures <= 0:
        return 0.0
    cap = max(reconnect_time, RETRY_FIRST)
    return min(cap, RETRY_FIRST * 2.0 ** min(failures - 1, 30))
