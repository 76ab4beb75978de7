"""Talking to the running daemon: one request over the control socket, one answer."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from condorpy.errors import StartdError
from condorpy.inputs import loads_json
from condorpy.startd.control import MAX_REQUEST, encode_request


class DaemonUnreachable(StartdError):
    pass


class RequestRefused(StartdError):
    """The daemon answered with an error."""


def call(path: Path, command: str, args: dict[str, Any] | None = None,
         timeout: float = 60.0) -> Any:
    """Send one request and return its result; errors are one clear line."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(str(path))
        except FileNotFoundError:
            raise DaemonUnreachable(f"condorpy startd is not running (no control socket "
                                    f"at {path})") from None
        except ConnectionRefusedError:
            raise DaemonUnreachable(f"condorpy startd is not running (nothing listens on "
                                    f"{path})") from None
        except PermissionError:
            raise DaemonUnreachable(f"cannot reach condorpy startd at {path}: permission "
                                    f"denied") from None
        sock.sendall(encode_request(command, args or {}))
        data = bytearray()
        while not data.endswith(b"\n"):
            try:
                chunk = sock.recv(1 << 16)
            except socket.timeout:
                raise DaemonUnreachable(f"condorpy startd at {path} did not answer within "
                                        f"{timeout:g} s") from None
            if not chunk:
                raise DaemonUnreachable(f"condorpy startd at {path} closed the connection")
            data += chunk
            if len(data) > 4 * MAX_REQUEST:
                raise DaemonUnreachable(f"condorpy startd at {path} sent an oversized reply")
    finally:
        sock.close()
    try:
        reply = loads_json(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise DaemonUnreachable(f"condorpy startd at {path} sent a malformed reply") from None
    if not isinstance(reply, dict) or "ok" not in reply:
        raise DaemonUnreachable(f"condorpy startd at {path} sent a malformed reply")
    if not reply["ok"]:
        raise RequestRefused(str(reply.get("error", "request failed")))
    return reply.get("result")
