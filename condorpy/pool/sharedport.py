"""The client side of condor_shared_port (``shared_port_client.cpp``), sans-I/O.

A daemon behind condor_shared_port advertises ``<ip:port?sock=ID>``: the client connects
to the shared port and, before anything else, sends one message, SHARED_PORT_CONNECT
(int 75, string ID, string the client's name, int seconds left until its deadline or -1,
int 0 for future arguments, end of message). condor_shared_port reads it and passes the
connection on to the daemon, which never sees that message; there is no reply. Both
sides' handshake digests (the AES-GCM AAD of the first encrypted packets) therefore
start after it: the channel resets its transcript once the message is framed, as
``ReliSock::resetHeaderMD`` does.
"""

from __future__ import annotations

import math

from condorpy.errors import PoolError
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.sinful import Address

SHARED_PORT_CONNECT = 75
CLIENT_NAME = "STARTD"
CCB_REFUSAL = "is reachable only through a CCB broker (CCBID), which condorpy does " \
              "not support"


def connect_payload(sock_id: str, seconds_left: float | None,
                    client: str = CLIENT_NAME) -> bytes:
    """The SHARED_PORT_CONNECT message for the daemon ``sock_id``; ``seconds_left`` is
    the time the connection has (None: no deadline, sent as -1)."""
    deadline = -1 if seconds_left is None else max(0, math.ceil(seconds_left))
    return (Writer().put_int(SHARED_PORT_CONNECT).put_string(sock_id).put_string(client)
            .put_int(deadline).put_int(0).payload())


def parse_connect(payload: bytes, peer: str) -> tuple[str, str, int]:
    """What a SHARED_PORT_CONNECT message asks for (sock id, client name, deadline), as
    condor_shared_port reads it; the tests' loopback stand-in for it uses this."""
    r = Reader(payload, peer)
    if r.get_int("the command") != SHARED_PORT_CONNECT:
        raise PoolError("not a SHARED_PORT_CONNECT message", peer=peer)
    sock_id = r.get_str("the shared port id")
    client = r.get_str("the client name")
    deadline = r.get_int("the deadline")
    r.get_int("the extra argument count")
    r.end("SHARED_PORT_CONNECT")
    return sock_id, client, deadline


def check_reachable(addr: Address) -> None:
    """Refuse, in one line, an address condorpy cannot connect to directly."""
    if addr.ccb_id:
        raise PoolError(f"{addr.sinful()} {CCB_REFUSAL}", peer=addr.hostport())
