"""Where the daemon's log goes: the systemd journal, with structured fields, when
systemd connected our standard error to it; the StartLog file otherwise.

systemd sets ``JOURNAL_STREAM=<device>:<inode>`` for a service whose output goes to
the journal; it counts only if standard error still is that stream (a child started
by the service with its output redirected inherits the variable but not the stream).
Then every record goes to journald through systemd-python's ``journal.send``, with
its priority and the fields a log call attached (``extra=fields(slot=..., job=...)``:
``SLOT``, ``JOB_ID``, ``CLAIM_ID``, ``STATE``, ``ACTIVITY``, ``TRANSITION``,
``HOLD_CODE``, ...), so that ``journalctl -u condorpy SLOT=slot1_1`` or ``-o json``
find them. Without systemd-python, plain lines with a ``<priority>`` prefix go to the
stream (journald reads the prefix); the fields are then lost, the priorities are not.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any, TextIO

from condorpy.errors import StartdError

SYSLOG_IDENTIFIER = "condorpy-startd"
_FIELD = re.compile(r"^[A-Z][A-Z0-9_]*$")
# Names journald or the handler sets itself; a log call cannot override them.
_RESERVED = frozenset({"MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "CODE_FILE",
                       "CODE_LINE", "CODE_FUNC", "LOGGER"})
# logging's levels as syslog priorities (journald's PRIORITY).
_PRIORITIES = ((logging.CRITICAL, 2), (logging.ERROR, 3), (logging.WARNING, 4),
               (logging.INFO, 6))

JournalSend = Callable[..., Any]


def priority(levelno: int) -> int:
    for level, prio in _PRIORITIES:
        if levelno >= level:
            return prio
    return 7


def public_claim_id(claim_id: str) -> str:
    """A claim id fit for a log: its secret part (after the last ``#``) replaced by a
    short digest, as HTCondor logs only a claim's public part."""
    head, sep, secret = claim_id.rpartition("#")
    if not sep:
        head, secret = "", claim_id
    import hashlib      # OpenSSL's libcrypto (3 MB resident): not in an idle daemon
    digest = hashlib.sha256(secret.encode()).hexdigest()[:12]
    return f"{head}#{digest}" if head else digest


def fields(**values: object) -> dict[str, str]:
    """Journal fields for a log call's ``extra=``: names upper-cased (``job_id`` ->
    ``JOB_ID``), None dropped, values as text; ``claim_id`` is made public."""
    out: dict[str, str] = {}
    for name, value in values.items():
        if value is None:
            continue
        key = name.upper()
        out[key] = public_claim_id(str(value)) if key == "CLAIM_ID" else str(value)
    return out


def record_fields(record: logging.LogRecord) -> dict[str, str]:
    """The journal fields a record carries (its upper-case attributes)."""
    return {k: str(v) for k, v in vars(record).items()
            if _FIELD.match(k) and k not in _RESERVED and v is not None}


def stderr_is_journal(env: Mapping[str, str], stream: TextIO | None = None) -> bool:
    value = env.get("JOURNAL_STREAM", "")
    dev, _, ino = value.partition(":")
    if not dev.isdigit() or not ino.isdigit():
        return False
    try:
        st = os.fstat((stream or sys.stderr).fileno())
    except (OSError, ValueError):
        return False
    return st.st_dev == int(dev) and st.st_ino == int(ino)


def _escaped(text: str) -> str:
    """``text`` with any lone surrogate (a peer's undecodable byte) as a backslash
    escape: the journal takes only valid UTF-8."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


class JournalHandler(logging.Handler):
    """One journal entry per record, through ``send`` (systemd-python's
    ``systemd.journal.send``), with priority, logger and the record's fields."""

    def __init__(self, send: JournalSend, identifier: str = SYSLOG_IDENTIFIER) -> None:
        super().__init__()
        self._send = send
        self.identifier = identifier

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = _escaped(self.format(record))
            self._send(message, PRIORITY=str(priority(record.levelno)),
                       SYSLOG_IDENTIFIER=self.identifier, LOGGER=record.name,
                       CODE_FILE=record.pathname, CODE_LINE=record.lineno,
                       CODE_FUNC=record.funcName,
                       **{k: _escaped(v) for k, v in record_fields(record).items()})
        except Exception:
            self.handleError(record)


class PrefixFormatter(logging.Formatter):
    """``<priority>message``: journald's stream protocol, for when systemd-python is
    not installed; a multi-line message keeps its priority on every line."""

    def format(self, record: logging.LogRecord) -> str:
        prefix = f"<{priority(record.levelno)}>"
        return "\n".join(prefix + line for line in super().format(record).splitlines())


def journal_send() -> JournalSend | None:
    try:
        # systemd-python (Debian: python3-systemd), by name: see notify.py.
        journal = importlib.import_module("systemd.journal")
    except ImportError:
        return None
    send: JournalSend = journal.send
    return send


def handlers(env: Mapping[str, str], start_log: str, foreground: bool,
             send: JournalSend | None = None) -> tuple[list[logging.Handler], str]:
    """The daemon's log handlers, and where the log goes (for the start-up line)."""
    if stderr_is_journal(env):
        send = send or journal_send()
        if send is not None:
            handler: logging.Handler = JournalHandler(send)
            handler.setFormatter(logging.Formatter("%(message)s"))
            return [handler], "the systemd journal"
        stream = logging.StreamHandler(sys.stderr)
        stream.setFormatter(PrefixFormatter("%(message)s"))
        return [stream], "the systemd journal (standard error; no systemd-python)"
    fmt = logging.Formatter("%(asctime)s %(message)s", datefmt="%m/%d/%y %H:%M:%S")
    try:
        # A peer's bytes that are not UTF-8 reach log lines as lone surrogates (CEDAR
        # strings are decoded with surrogateescape): escaped, the line is still written.
        fh = logging.FileHandler(start_log, encoding="utf-8", errors="backslashreplace")
    except OSError as exc:
        raise StartdError(f"cannot write the log {start_log}: {exc.strerror}") from None
    fh.setFormatter(fmt)
    out: list[logging.Handler] = [fh]
    if foreground:
        sh = logging.StreamHandler(sys.stderr)
        sh.setFormatter(fmt)
        out.append(sh)
    return out, start_log
