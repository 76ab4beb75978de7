"""The client's half of the control protocol (see :mod:`condorpy.startd.control` for the
wire): what a command line needs to send a request, apart from the daemon's half, so
that `condorpy q` loads nothing of the server."""

from __future__ import annotations

import json
from typing import Any

MAX_REQUEST = 16 * 1024 * 1024       # a submission of thousands of jobs fits


def encode_request(command: str, args: dict[str, Any], stream: bool = False) -> bytes:
    body: dict[str, Any] = {"command": command, "args": args}
    if stream:
        body["stream"] = True
    return json.dumps(body).encode() + b"\n"
