"""What a job's file transfer moves, decided without touching a file: the lists of
``transfer_input_files`` and ``transfer_output_files``, ``transfer_output_remaps``,
``when_to_transfer_output``, the files a job made or changed, and the hold reasons
HTCondor's shadow gives when a transfer fails.

Shared by the two transfers condorpy does: a pool job's, over the shadow's transfer
protocol (``condorpy/startd/poolside/transfer.py``), and a local job's, where this
daemon is the job's schedd and shadow too (:mod:`condorpy.starter.localxfer`).
"""

from __future__ import annotations

import errno as errno_mod
import os
import posixpath
import stat
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum

from condorpy.starter.jobspec import JobSpec
from condorpy.starter.sandbox import JOB_AD_FILE, MACHINE_AD_FILE

# StdoutRemapName / StderrRemapName: where a transferring job's stdout and stderr go in
# its scratch directory, copied back to Out and Err afterwards
STDOUT_NAME = "_condor_stdout"
STDERR_NAME = "_condor_stderr"
# never output: the starter's own files in the scratch directory
SKIPPED = frozenset({JOB_AD_FILE, MACHINE_AD_FILE, ".chirp.config", ".update.ad",
                     ".update.ad.tmp", ".docker_sock", ".docker_stdout", ".docker_stderr"})
# CONDOR_HOLD_CODE (condor_holdcodes.h) as the shadow rewrites a transfer's failure
TRANSFER_OUTPUT_ERROR = 12
TRANSFER_INPUT_ERROR = 13
# Set by the daemon on its local queue's jobs: the directory (in the daemon's spool,
# the submitter's) that keeps a ON_EXIT_OR_EVICT job's output between an eviction and
# its next run, as the schedd's SPOOL does
SPOOL_ATTR = "CondorpySpoolDir"


class When(Enum):
    """``when_to_transfer_output``."""

    ON_EXIT = "ON_EXIT"
    ON_EXIT_OR_EVICT = "ON_EXIT_OR_EVICT"
    ON_SUCCESS = "ON_SUCCESS"
    NEVER = "NEVER"

    @classmethod
    def of(cls, text: object) -> When:
        try:
            return cls(str(text).strip().upper()) if isinstance(text, str) else cls.ON_EXIT
        except ValueError:
            return cls.ON_EXIT


def transfer_list(text: str) -> list[str]:
    """The names of a transfer list: separated by commas or white space (HTCondor's
    StringList delimiters), empty entries dropped."""
    return text.replace(",", " ").split()


def parse_remaps(text: str) -> dict[str, str]:
    """``transfer_output_remaps``: ``name = newname; name2 = newname2``, where a
    backslash makes the next ``;`` or ``=`` part of a name."""
    out: dict[str, str] = {}
    entries: list[list[str]] = [[""]]
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text) and text[i + 1] in ";=\\":
            entries[-1][-1] += text[i + 1]
            i += 2
            continue
        if c == ";":
            entries.append([""])
        elif c == "=" and len(entries[-1]) == 1:
            entries[-1].append("")
        else:
            entries[-1][-1] += c
        i += 1
    for entry in entries:
        if len(entry) == 2 and entry[0].strip() and entry[1].strip():
            out[entry[0].strip()] = entry[1].strip()
    return out


def remapped(name: str, remaps: Mapping[str, str]) -> str:
    """Where output ``name`` (as sent: ``file`` or ``dir/file``) goes: its remap, or
    the remap of the directory it came in, or its own name."""
    if name in remaps:
        return remaps[name]
    parts = name.split("/")
    for cut in range(len(parts) - 1, 0, -1):
        head = "/".join(parts[:cut])
        if head in remaps:
            return posixpath.join(remaps[head], *parts[cut:])
    return name


def destination(name: str, iwd: str, remaps: Mapping[str, str],
                streams: Mapping[str, str]) -> str:
    """The absolute path output ``name`` is written to: stdout and stderr to the job's
    Out and Err, the rest remapped, relative names against Iwd."""
    target = streams.get(name) or remapped(name, remaps)
    return posixpath.normpath(posixpath.join(iwd, target))


def changed_files(before: Mapping[str, tuple[int, int]],
                  after: Mapping[str, tuple[int, int]], *, skip: frozenset[str] | set[str],
                  always: frozenset[str] | set[str] = frozenset()) -> list[str]:
    """The top-level files the job made or changed (``FindChangedFiles``): in ``after``
    and not in ``before`` with the same (mtime, size); ``always`` go whatever they are."""
    return sorted(name for name, stamp in after.items()
                  if name not in skip and (before.get(name) != stamp or name in always))


def catalog(scratch: str, *, regular_only: bool = False) -> dict[str, tuple[int, int]]:
    """The top-level files of a scratch directory and their (mtime, size): what the
    output leaves out unless the job changed it (``FileTransfer::BuildFileCatalog``).
    ``regular_only``: plain files alone (HTCondor sends a new directory only when
    ``transfer_output_files`` names it)."""
    out = {}
    for entry in os.scandir(scratch):
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if regular_only and not stat.S_ISREG(st.st_mode):
            continue
        # nanoseconds: a job that rewrites an input within the second it arrived
        # (same size) has still changed it; HTCondor sleeps a second instead
        out[entry.name] = (st.st_mtime_ns, st.st_size)
    return out


@dataclass(frozen=True)
class Source:
    """One entry of a transfer list: the path read and the name it arrives under.
    ``dir/`` sends a directory's contents, ``dir`` the directory itself; a file
    arrives under its base name."""

    path: str
    name: str
    contents_only: bool = False


def sources(names: list[str], base: str) -> list[Source]:
    out = []
    for raw in names:
        contents_only = raw.endswith("/") and raw.strip("/") != ""
        rel = raw.rstrip("/") or raw
        path = posixpath.normpath(posixpath.join(base, rel))
        out.append(Source(path, "" if contents_only else posixpath.basename(rel),
                          contents_only))
    return out


@dataclass(frozen=True)
class TransferFailure:
    """A failed transfer as the hold HTCondor's shadow gives it."""

    reason: str
    code: int
    subcode: int


def input_failure(path: str, err: int, *, access_point: str, slot: str,
                  writing: bool = False) -> TransferFailure:
    """Input that could not be read at the access point (or written at the execution
    point): HTCondor's ``TransferInputError`` with the errno as subcode."""
    what = "writing to file" if writing else "reading from file"
    where = (f"execution point {slot} while receiving files from access point "
             f"{access_point}" if writing else
             f"access point {access_point} while sending files to execution point {slot}")
    return TransferFailure(f"Transfer input files failure at {where}. Details: {what} "
                           f"{path}: (errno {err}) {os.strerror(err)}",
                           TRANSFER_INPUT_ERROR, err)


def output_failure(path: str, err: int, *, access_point: str, slot: str,
                   writing: bool = False) -> TransferFailure:
    """Output that could not be read at the execution point (a name in
    ``transfer_output_files`` the job did not make) or written at the access point."""
    if writing:
        text = (f"access point {access_point} while receiving files from execution "
                f"point {slot}. Details: writing to file {path}")
    else:
        text = (f"execution point {slot} while sending files to access point "
                f"{access_point}. Details: reading from {path}")
    return TransferFailure(f"Transfer output files failure at {text}: (errno {err}) "
                           f"{os.strerror(err)}", TRANSFER_OUTPUT_ERROR, err or errno_mod.EIO)


def _text(ad: Mapping[str, object], name: str) -> str:
    v = ad.get(name)
    return v if isinstance(v, str) else ""


def _flag(ad: Mapping[str, object], name: str, default: bool) -> bool:
    v = ad.get(name)
    return v if isinstance(v, bool) else default


def _real(path: str) -> bool:
    return bool(path) and path != "/dev/null"


@dataclass(frozen=True)
class LocalPlan:
    """A local job's transfer, read from its ad: what goes in (``transfer_input_files``,
    its stdin and its executable unless told not to), what comes back (the names of
    ``transfer_output_files``, or ``None``: every top-level file made or changed),
    where (``transfer_output_remaps``, stdout and stderr to Out and Err) and when."""

    iwd: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...] | None
    remaps: tuple[tuple[str, str], ...]
    when: When
    executable: str | None          # its name in the scratch directory, when sent
    stdin: str | None
    streams: tuple[tuple[str, str], ...]    # scratch name -> Out / Err as written

    @classmethod
    def from_ad(cls, ad: Mapping[str, object], iwd: str) -> LocalPlan:
        inputs = transfer_list(_text(ad, "TransferInput"))
        cmd = _text(ad, "Cmd")
        executable = None
        if cmd and _flag(ad, "TransferExecutable", True):
            executable = posixpath.basename(cmd)
            inputs.append(cmd)
        stdin = _text(ad, "In")
        scratch_stdin = None
        if _real(stdin) and _flag(ad, "TransferIn", True):
            inputs.append(stdin)
            scratch_stdin = posixpath.basename(stdin)
        streams: list[tuple[str, str]] = []
        out, err = _text(ad, "Out"), _text(ad, "Err")
        if _real(out) and not _flag(ad, "StreamOut", False):
            streams.append((STDOUT_NAME, out))
        if _real(err) and err != out and not _flag(ad, "StreamErr", False):
            streams.append((STDERR_NAME, err))
        outputs = None
        if ad.get("TransferOutput") is not None:
            outputs = tuple(transfer_list(_text(ad, "TransferOutput")))
        return cls(iwd=iwd, inputs=tuple(inputs), outputs=outputs,
                   remaps=tuple(parse_remaps(_text(ad, "TransferOutputRemaps")).items()),
                   when=When.of(ad.get("WhenToTransferOutput")), executable=executable,
                   stdin=scratch_stdin, streams=tuple(streams))

    def job_in_scratch(self, job: JobSpec, scratch: str) -> JobSpec:
        """The job as it runs: in its scratch directory, on the copies sent there, with
        stdout and stderr in the files brought back to Out and Err."""
        def outside(path: str | None) -> str | None:
            return None if path is None else posixpath.join(self.iwd, path)
        names = dict(self.streams)
        out = STDOUT_NAME if STDOUT_NAME in names else outside(job.stdout)
        if job.stderr is not None and job.stderr == job.stdout and STDOUT_NAME in names:
            err: str | None = STDOUT_NAME
        else:
            err = STDERR_NAME if STDERR_NAME in names else outside(job.stderr)
        return replace(job, iwd=scratch,
                       cmd=self.executable or posixpath.join(self.iwd, job.cmd),
                       stdin=self.stdin or outside(job.stdin), stdout=out, stderr=err)

    def output_goes(self, *, exited: bool, success: bool) -> bool:
        """Whether the output comes back now: at the job's exit (``ON_SUCCESS``: an
        exit with code 0 only), and at an eviction with ``ON_EXIT_OR_EVICT``."""
        if self.when is When.NEVER:
            return False
        if not exited:
            return self.when is When.ON_EXIT_OR_EVICT
        return success or self.when is not When.ON_SUCCESS

    def output_sources(self, scratch: str, before: Mapping[str, tuple[int, int]],
                       after: Mapping[str, tuple[int, int]], *,
                       spooled: frozenset[str] = frozenset(), final: bool = True
                       ) -> list[Source]:
        """What goes back: the named outputs (a missing one fails the exit's transfer
        only), else the files the job made or changed and, at its exit, those an earlier
        eviction spooled (``SpooledOutputFiles``), changed or not; stdout and stderr
        in either case."""
        streams = [name for name, _ in self.streams if name in after]
        if self.outputs is not None:
            named = list(self.outputs) + [s for s in streams if s not in self.outputs]
            return sources(named, scratch)
        skip = set(SKIPPED) | {STDOUT_NAME, STDERR_NAME}
        if self.executable:
            skip.add(self.executable)
        files = changed_files(before, after, skip=skip,
                              always=spooled if final else frozenset())
        return sources(files + streams, scratch)

    def destination(self, name: str) -> str:
        return destination(name, self.iwd, dict(self.remaps), dict(self.streams))


def transfer_wanted(ad: Mapping[str, object], *, runs_as_submitter: bool) -> bool:
    """Whether a local job's files travel: YES always; IF_NEEDED when the job runs as
    another account than its submitter's (root's jobs as nobody, SLOT<N>_USER), which
    shares no files with the submitter as a job in the same file system domain does;
    NO never."""
    how = _text(ad, "ShouldTransferFiles").upper()
    if how == "YES":
        return True
    return how == "IF_NEEDED" and not runs_as_submitter
