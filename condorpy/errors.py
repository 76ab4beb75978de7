"""The one error tree of condorpy.

Every error a user can see derives from :class:`CondorpyError` and carries where the
bad input came from (file and line, attribute, slot, job), so the command-line front
ends can print one clear line instead of a traceback.
"""

from __future__ import annotations


class CondorpyError(Exception):
    """Root of every error condorpy reports to a user."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


# --- ClassAd language -------------------------------------------------------------

class ClassAdError(CondorpyError):
    """A ClassAd could not be read, written or used."""

    def __init__(self, message: str, *, attribute: str | None = None,
                 source: str | None = None) -> None:
        where = []
        if source:
            where.append(source)
        if attribute:
            where.append(f"attribute {attribute}")
        super().__init__(f"{message} ({', '.join(where)})" if where else message)
        self.attribute = attribute
        self.source = source


class ClassAdSyntaxError(ClassAdError):
    """Text that is not a ClassAd expression or ad. Carries line, column and an excerpt."""

    def __init__(self, message: str, *, text: str = "", line: int = 1, column: int = 1,
                 source: str | None = None, attribute: str | None = None) -> None:
        self.line = line
        self.column = column
        self.text = text
        self.excerpt = _caret_excerpt(text, line, column)
        loc = f"line {line}, column {column}"
        full = f"{message} at {loc}"
        if self.excerpt:
            full += "\n" + self.excerpt
        super().__init__(full, attribute=attribute, source=source)
        self.reason = message


def _caret_excerpt(text: str, line: int, column: int) -> str:
    lines = text.splitlines() or [""]
    if not 1 <= line <= len(lines):
        return ""
    src = lines[line - 1]
    # at most _EXCERPT characters of a long line, around the column: an error about a
    # megabyte expression is one line of a log, not a megabyte
    col = max(column - 1, 0)
    start = max(0, min(col - _EXCERPT // 2, len(src) - _EXCERPT))
    shown = src[start:start + _EXCERPT]
    lead = "..." if start > 0 else ""
    tail = "..." if start + _EXCERPT < len(src) else ""
    return f"    {lead}{shown}{tail}\n    {' ' * (len(lead) + col - start)}^"


_EXCERPT = 100


# --- configuration ----------------------------------------------------------------

class ConfigError(CondorpyError):
    """A configuration file, directive or knob value is wrong. Names file and line."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 name: str | None = None) -> None:
        self.file = file
        self.line = line
        self.name = name
        if file is not None and line is not None:
            message = f"{message} (at {file}, line {line})"
        elif file is not None:
            message = f"{message} (in {file})"
        super().__init__(message)


# --- machine, slots, policy ---------------------------------------------------------

class MachineError(CondorpyError):
    """A probe of the host failed in a way the daemon cannot work around."""


class SlotError(CondorpyError):
    """A slot layout or a carving request cannot be satisfied. Names the slot/resource."""

    def __init__(self, message: str, *, slot: str | None = None,
                 resource: str | None = None) -> None:
        self.slot = slot
        self.resource = resource
        super().__init__(message)


class LayoutError(SlotError):
    """The configured slot layout does not fit the machine."""


class PolicyError(CondorpyError):
    """A policy expression or event is invalid. Names the slot and expression."""

    def __init__(self, message: str, *, slot: str | None = None,
                 expression: str | None = None) -> None:
        self.slot = slot
        self.expression = expression
        super().__init__(message)


class TimelineError(PolicyError):
    """A simulation timeline line is malformed. Names file and line."""

    def __init__(self, message: str, *, file: str | None = None,
                 line: int | None = None) -> None:
        self.file = file
        self.line = line
        if file is not None and line is not None:
            message = f"{message} (at {file}, line {line})"
        super().__init__(message)


# --- starter ----------------------------------------------------------------------

class StarterError(CondorpyError):
    """The starter could not do what it was asked. Names the job."""

    def __init__(self, message: str, *, job: str | None = None) -> None:
        self.job = job
        super().__init__(f"{message} (job {job})" if job else message)


class JobAdError(StarterError):
    """A job ad lacks or has a bad attribute; carries HTCondor's hold code."""

    def __init__(self, message: str, *, attribute: str | None = None,
                 hold_code: int = 0, hold_subcode: int = 0, job: str | None = None) -> None:
        self.attribute = attribute
        self.hold_code = hold_code
        self.hold_subcode = hold_subcode
        super().__init__(message, job=job)


class CgroupError(StarterError):
    """cgroup v2 is missing, not delegated, or refused an operation."""


# --- daemon -----------------------------------------------------------------------

class StartdError(CondorpyError):
    """The daemon could not start or carry out a request."""


class RequestError(StartdError):
    """A control-API request was malformed; names the request."""


class SubmitError(StartdError):
    """A submit description cannot be turned into jobs. Names file and line."""

    def __init__(self, message: str, *, file: str | None = None,
                 line: int | None = None) -> None:
        self.file = file
        self.line = line
        self.reason = message
        if file is not None and line is not None:
            message = f"{message} (at {file}, line {line})"
        elif file is not None:
            message = f"{message} (in {file})"
        super().__init__(message)


class QueueError(StartdError):
    """The job store cannot be opened or used. Names the database path."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        self.path = path
        super().__init__(f"{message} ({path})" if path else message)


class HookError(StartdError):
    """A job hook or startd cron job is misconfigured or misbehaved. Names the hook."""

    def __init__(self, message: str, *, hook: str | None = None) -> None:
        super().__init__(message)
        self.hook = hook


# --- pool (CEDAR) -----------------------------------------------------------------

class PoolError(CondorpyError):
    """Talking to an HTCondor pool failed. Names the peer (its address or role)."""

    def __init__(self, message: str, *, peer: str | None = None) -> None:
        self.peer = peer
        self.reason = message
        super().__init__(f"{message} (peer {peer})" if peer else message)


class WireError(PoolError):
    """Bytes from a peer are not what the CEDAR protocol allows: a bad packet header,
    a truncated or oversized message, a malformed value or ClassAd."""


class SecurityError(PoolError):
    """The security handshake with a peer failed or was refused."""
