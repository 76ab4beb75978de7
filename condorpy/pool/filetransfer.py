"""HTCondor's file transfer (``FileTransfer``), the starter's side, sans-I/O.

The starter is the client of the shadow's transfer server. It connects to the job ad's
``TransferSocket`` on the ``filetrans.<claim session>`` security session (handed over
by ``get_sec_session_info``), starts ``FILETRANS_UPLOAD`` (61000: the shadow uploads,
the starter receives the input sandbox) or ``FILETRANS_DOWNLOAD`` (61001: the starter
sends the output sandbox), and sends ``TransferKey`` (a secret) and EOM. Then one side
is the *sender* (``DoUpload``) and the other the *receiver* (``DoDownload``).

Wire facts (htcondor/htcondor at V23_9_6, ``src/condor_utils/file_transfer.cpp``
``DownloadFiles``, ``DoDownload``, ``uploadFileList``, ``ExitDoUpload``,
``DoObtainAndSendTransferGoAhead``, ``DoReceiveTransferGoAhead``, ``GetTransferAck``,
``SendTransferAck``; ``src/condor_io/reli_sock.cpp`` ``put_file``, ``get_file``,
``get_file_with_permissions``, ``prepare_for_nobuffering``, ``end_of_message``).
Every integer is CEDAR's 8 bytes and every string is length-prefixed, because the
session is AES-GCM (the only crypto condorpy speaks):

- sender: ``int final_transfer`` (1: into the job's Iwd; 0: the shadow's spool, an
  eviction's intermediate files) and the ``xfer_info`` ad (``SandboxSize``), one
  message;
- per item: ``int command`` (EOM); ``string name`` (EOM); the *go-ahead* unless both
  sides already said "always"; then by command:
  ``XferFile`` (1, or ``EnableEncryption`` 2 / ``DisableEncryption`` 3, which only
  matter without AES): ``int mode`` (EOM), ``int size, int buffer size`` (EOM), the
  data in messages of at most the buffer size (262,144 bytes); ``Mkdir`` (6):
  ``int mode`` (EOM); ``DownloadUrl`` (5): ``string url`` (EOM) for the receiver to
  fetch with a plugin; ``Other`` (999): an ad (EOM) with a ``SubCommand``, after the
  go-ahead like any item: ``ReuseInfo`` (8) and ``SignUrls`` (9) wait for the
  receiver's reply ad (condorpy: ``Result = 1``, no reuse directory; no
  ``SignList``, nothing signed), ``UploadUrl`` (7) reports the sender's own URL
  upload (a non-zero ``Result`` is a failure), any other is skipped;
- a zero-length file has no data messages but one message ``int 666``
  (``PUT_FILE_EOM_NUM``) in their place (checked against the 23.9.6 shadow, which
  refuses the 666 sharing a message with the next command);
- the go-ahead, receiver's view: it reads the sender's ``int alive interval`` (EOM),
  answers an ad ``Result = 2`` (GO_AHEAD_ALWAYS; first ``Result = 0`` with a
  ``Timeout`` when the interval is under 300 s), then sends its own ``int alive
  interval`` (EOM) and reads ads until one has ``Result`` other than 0 (pending:
  the peer waits for a transfer-queue slot). The sender does the same in the other
  order (it asks first);
- ``Finished`` (0, EOM) ends the list; the sender sends its ``TransferAck`` ad
  (``Result`` 0 ok, 1 failed but try again, -1 failed: hold with ``HoldReasonCode``,
  ``HoldReasonSubCode``, ``HoldReason``; ``TransferStats``), then the receiver its.

Version switches (``FileTransfer::setPeerVersion``): the 23.9.6 shadow reads the
starter's ``CondorVersion`` from ``register_starter_info``; from 6.7.7 modes travel,
6.7.20 acks, 6.9.5 go-ahead, 7.5.4 Mkdir, 8.1.0 ``xfer_info``, 8.9.4 reuse info and
S3 URL signing (sent only for jobs that use them), 10.6.0 the executable keeps its own
name (older peers got ``condor_exec.exe``), 23.1.0 protected URLs. condorpy
announces a version past all of them and implements that protocol; in the 24.x and
25.x sources the same frames are kept (25.x adds checkpoint and manifest features and
``SignUrls``/``ReuseInfo`` only for jobs that ask for them).
"""

from __future__ import annotations

import posixpath
from collections.abc import Generator, Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import BinaryIO, Protocol

from condorpy.classad import ClassAd
from condorpy.errors import WireError
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.security import Op, Receive, Send
from condorpy.pool.wire_ad import get_classad, put_classad
from condorpy.starter import transferlist

FILETRANS_UPLOAD = 61000
FILETRANS_DOWNLOAD = 61001
PUT_FILE_EOM_NUM = 666
BUFFER_SIZE = 262_144            # AES_FILE_BUF_SZ: one data message at most
MAX_BUFFER = 1 << 20             # a larger claimed buffer size is refused
ALIVE_INTERVAL = 300             # what this side tells (HTCondor's minimum)
GO_AHEAD_FAILED = -1
GO_AHEAD_UNDEFINED = 0
GO_AHEAD_ALWAYS = 2
MAX_PENDING_GO_AHEADS = 10_000
STDOUT_NAME = transferlist.STDOUT_NAME    # the shadow maps it back to Out
STDERR_NAME = transferlist.STDERR_NAME
# FILETRANSFER_HOLD_CODE (condor_holdcodes.h): the side that failed to receive or
# write reports 12, the side that failed to read or send 13
DOWNLOAD_FILE_ERROR = 12
UPLOAD_FILE_ERROR = 13
MAX_NAME = 4096
MAX_FILE_SIZE = 1 << 50


class Command(IntEnum):
    FINISHED = 0
    XFER_FILE = 1
    ENABLE_ENCRYPTION = 2
    DISABLE_ENCRYPTION = 3
    XFER_X509 = 4
    DOWNLOAD_URL = 5
    MKDIR = 6
    OTHER = 999


class SubCommand(IntEnum):
    """``SubCommand`` of a ``Other`` (999) item's ad."""

    UPLOAD_URL = 7
    REUSE_INFO = 8
    SIGN_URLS = 9


@dataclass(frozen=True)
class Failure:
    """Why a transfer failed, as a TransferAck ad carries it."""

    reason: str
    code: int
    subcode: int = 0
    try_again: bool = False


@dataclass
class Outcome:
    """What one transfer did: names moved, bytes, and the failure of either side."""

    files: list[str] = field(default_factory=list)
    dirs: list[str] = field(default_factory=list)
    bytes: int = 0
    local: Failure | None = None     # this side's failure (told to the peer)
    peer: Failure | None = None      # the peer's, from its TransferAck

    @property
    def failure(self) -> Failure | None:
        return self.local or self.peer


class Sink(Protocol):
    """Where received items go (the scratch directory); names are already checked to
    stay inside it. Errors are OSError."""

    def mkdir(self, name: str, mode: int) -> None: ...

    def create(self, name: str, mode: int) -> BinaryIO: ...

    def finish(self, name: str, handle: BinaryIO, mode: int) -> None: ...


@dataclass(frozen=True)
class Item:
    """One thing to send: a file (read through ``open``) or a directory."""

    name: str                 # the name on the wire, relative to the receiver's Iwd
    path: str                 # where it is here
    mode: int
    size: int = 0
    directory: bool = False


class FileSource(Protocol):
    def open(self, path: str) -> BinaryIO: ...


def start_request(transfer_key: str) -> bytes:
    """The message that follows the command on the transfer session."""
    return Writer(crypto=True).put_secret(transfer_key).payload()


def legal_name(name: str) -> bool:
    """``LegalPathInSandbox``: relative, no ``..`` component, no NUL."""
    if not name or name.startswith("/") or "\0" in name or len(name) > MAX_NAME:
        return False
    return ".." not in posixpath.normpath(name).split("/") and \
        ".." not in name.split("/")


def ack_ad(failure: Failure | None) -> ClassAd:
    ad = ClassAd.parse_old("TransferStats = [ ]")
    if failure is None:
        ad["Result"] = 0
        return ad
    ad["Result"] = 1 if failure.try_again else -1
    ad["HoldReasonCode"] = failure.code
    ad["HoldReasonSubCode"] = failure.subcode
    ad["HoldReason"] = failure.reason.replace("\n", "\\n")
    return ad


def read_ack(ad: ClassAd, what: str) -> Failure | None:
    result = ad.evaluate("Result")
    if not isinstance(result, int) or isinstance(result, bool):
        return Failure(f"{what} missing attribute: Result", 29)   # InvalidTransferAck
    if result == 0:
        return None
    code = ad.evaluate("HoldReasonCode")
    sub = ad.evaluate("HoldReasonSubCode")
    reason = ad.evaluate("HoldReason")
    return Failure(reason if isinstance(reason, str) else f"{what}: failed ({result})",
                   code if isinstance(code, int) else 0,
                   sub if isinstance(sub, int) else 0, try_again=result > 0)


class _Messages:
    """The receiving side's messages, one at a time."""

    def __init__(self, peer: str) -> None:
        self.peer = peer

    def next(self, what: str) -> Generator[Op, bytes | None, Reader]:
        payload = yield Receive(what)
        assert payload is not None
        return Reader(payload, self.peer, crypto=True)

    def int_message(self, what: str) -> Generator[Op, bytes | None, int]:
        r = yield from self.next(what)
        v = r.get_int(what)
        r.end(what)
        return v

    def ad_message(self, what: str) -> Generator[Op, bytes | None, ClassAd]:
        r = yield from self.next(what)
        ad = get_classad(r, what, max_attrs=1000)
        r.end(what)
        return ad


def _int(v: int) -> bytes:
    return Writer(crypto=True).put_int(v).payload()


def _go_ahead(result: int, *, downloading: bool, timeout: int | None = None) -> bytes:
    ad = ClassAd()
    if timeout is not None:
        ad["Timeout"] = timeout
    ad["Result"] = result
    if downloading:
        ad["MaxTransferBytes"] = -1
    return put_classad(Writer(crypto=True), ad).payload()


def _grant(m: _Messages, downloading: bool) -> Generator[Op, bytes | None, None]:
    """``ObtainAndSendTransferGoAhead``: the peer's alive interval in, "always" out."""
    alive = yield from m.int_message("the peer's alive interval")
    if alive < ALIVE_INTERVAL:
        yield Send(_go_ahead(GO_AHEAD_UNDEFINED, downloading=downloading,
                             timeout=ALIVE_INTERVAL))
    yield Send(_go_ahead(GO_AHEAD_ALWAYS, downloading=downloading))


def _await_grant(m: _Messages) -> Generator[Op, bytes | None, bool]:
    """``ReceiveTransferGoAhead``: our alive interval out, the peer's verdict in.
    True when the peer goes ahead with every further file."""
    yield Send(_int(ALIVE_INTERVAL))
    for _ in range(MAX_PENDING_GO_AHEADS):
        ad = yield from m.ad_message("the peer's go-ahead")
        result = ad.evaluate("Result")
        if not isinstance(result, int) or isinstance(result, bool):
            raise WireError("a go-ahead without an integer Result", peer=m.peer)
        if result == GO_AHEAD_UNDEFINED:
            continue           # the peer waits for a transfer-queue slot
        if result < 0:
            reason = ad.evaluate("HoldReason")
            raise WireError("the peer refused to go ahead"
                            + (f": {reason}" if isinstance(reason, str) else ""),
                            peer=m.peer)
        return result == GO_AHEAD_ALWAYS
    raise WireError("the peer kept the transfer pending too long", peer=m.peer)


def _sub_command(info: ClassAd, out: Outcome) -> ClassAd | None:
    """A ``TransferCommand::Other`` ad the receiver got; the reply the sender waits
    for, if any. 24.x/25.x senders use them only for jobs that ask (a data-reuse
    manifest, output URLs to sign, a URL the sender uploaded itself); an unknown
    sub-command is skipped, as HTCondor skips it."""
    sub = info.evaluate("SubCommand")
    if sub == SubCommand.REUSE_INFO:
        # no data-reuse directory here: Result 1 tells the sender to send every file
        reply = ClassAd()
        reply["Result"] = 1
        return reply
    if sub == SubCommand.SIGN_URLS:
        # condorpy holds no credentials to sign with: an ad without SignList, which
        # the sender reads as "nothing signed"
        return ClassAd()
    if sub == SubCommand.UPLOAD_URL:
        result = info.evaluate("Result")
        if result != 0 and out.local is None:
            what = info.evaluate("Filename")
            out.local = Failure(
                f"the peer's upload of {what if isinstance(what, str) else '<null>'} "
                f"failed ({result})", DOWNLOAD_FILE_ERROR,
                result if isinstance(result, int) and not isinstance(result, bool) else 0)
    return None


def receive(peer: str, sink: Sink, *, max_bytes: int = -1
            ) -> Generator[Op, bytes | None, Outcome]:
    """Receive a sandbox (the receiver, ``DoDownload``). A local failure (a name that
    leaves the sandbox, a write error, a URL this side has no plugin for) does not
    break the protocol: the rest is read and dropped and the failure goes to the
    sender in this side's TransferAck. A malformed stream raises WireError."""
    m = _Messages(peer)
    out = Outcome()
    r = yield from m.next("the transfer header")
    final = r.get_int("the final-transfer flag")
    if final not in (0, 1):
        raise WireError(f"final-transfer flag {final}", peer=peer)
    get_classad(r, "the transfer info ad", max_attrs=1000)
    r.end("the transfer header")
    i_always = peer_always = False
    while True:
        cmd_value = yield from m.int_message("a transfer command")
        try:
            cmd = Command(cmd_value)
        except ValueError:
            raise WireError(f"unknown transfer command {cmd_value}", peer=peer) from None
        if cmd is Command.FINISHED:
            break
        r = yield from m.next("a file name")
        name = r.get_str("a file name")
        r.end("a file name")
        if cmd is Command.XFER_X509:
            raise WireError("X.509 credential delegation is not supported", peer=peer)
        if not i_always:
            yield from _grant(m, downloading=True)
            i_always = True
        if not peer_always:
            peer_always = yield from _await_grant(m)
        if cmd is Command.OTHER:
            # after the go-ahead, as DoDownload reads it: one ad, maybe one reply
            info = yield from m.ad_message(f"the sub-command ad of {name}")
            reply = _sub_command(info, out)
            if reply is not None:
                yield Send(put_classad(Writer(crypto=True), reply).payload())
            continue
        ok_name = legal_name(name)
        if not ok_name and out.local is None:
            out.local = Failure(f"Attempt to write to illegal sandbox path: {name}",
                                DOWNLOAD_FILE_ERROR, 1)
        if cmd is Command.MKDIR:
            mode = yield from m.int_message(f"the mode of directory {name}")
            if ok_name and out.local is None:
                try:
                    sink.mkdir(name, mode & 0o7777 or 0o700)
                    out.dirs.append(name)
                except OSError as exc:
                    out.local = Failure(f"failed to create directory {name}: "
                                        f"{exc.strerror} (errno {exc.errno})",
                                        DOWNLOAD_FILE_ERROR, exc.errno or 0)
            continue
        if cmd is Command.DOWNLOAD_URL:
            r = yield from m.next(f"the URL of {name}")
            url = r.get_str(f"the URL of {name}")
            r.end(f"the URL of {name}")
            scheme = url.split(":", 1)[0] if ":" in url else url
            if out.local is None:
                out.local = Failure(
                    f"|Error: receiving file {name}: FILETRANSFER:1:FILETRANSFER: plugin "
                    f"for type {scheme} not found!", DOWNLOAD_FILE_ERROR, 0)
            continue
        # a file (XferFile, or Enable/DisableEncryption: all the same under AES-GCM)
        mode = yield from m.int_message(f"the mode of {name}")
        r = yield from m.next(f"the size of {name}")
        size = r.get_int(f"the size of {name}")
        buf = r.get_int(f"the buffer size of {name}")
        r.end(f"the size of {name}")
        if not 0 <= size <= MAX_FILE_SIZE:
            raise WireError(f"{name} claims {size} bytes", peer=peer)
        if not 0 < buf <= MAX_BUFFER:
            raise WireError(f"{name} claims a buffer of {buf} bytes", peer=peer)
        handle: BinaryIO | None = None
        if ok_name and out.local is None:
            if 0 <= max_bytes < out.bytes + size:
                out.local = Failure(f"max total download bytes exceeded (max={max_bytes})",
                                    34)    # MaxTransferInputSizeExceeded
            else:
                try:
                    handle = sink.create(name, mode)
                except OSError as exc:
                    out.local = Failure(f"|Error: receiving file {name}: {exc.strerror} "
                                        f"(errno {exc.errno})", DOWNLOAD_FILE_ERROR,
                                        exc.errno or 0)
        got = 0
        try:
            while got < size:
                payload = yield Receive(f"data of {name}")
                assert payload is not None
                if not payload or len(payload) > min(buf, size - got):
                    raise WireError(f"a data message of {len(payload)} bytes for {name} "
                                    f"({size - got} left, buffer {buf})", peer=peer)
                got += len(payload)
                if handle is not None:
                    try:
                        handle.write(payload)
                    except OSError as exc:
                        out.local = Failure(f"|Error: receiving file {name}: "
                                            f"{exc.strerror} (errno {exc.errno})",
                                            DOWNLOAD_FILE_ERROR, exc.errno or 0)
                        handle.close()
                        handle = None
            if size == 0:
                marker = yield from m.int_message(f"the end of empty file {name}")
                if marker != PUT_FILE_EOM_NUM:
                    raise WireError(f"empty file {name} ends with {marker}, not "
                                    f"{PUT_FILE_EOM_NUM}", peer=peer)
            if handle is not None:
                try:
                    sink.finish(name, handle, mode)
                    out.files.append(name)
                except OSError as exc:
                    out.local = Failure(f"|Error: receiving file {name}: {exc.strerror} "
                                        f"(errno {exc.errno})", DOWNLOAD_FILE_ERROR,
                                        exc.errno or 0)
                handle = None
        finally:
            if handle is not None:
                handle.close()
        out.bytes += size
    ack = yield from m.ad_message("the sender's transfer ack")
    out.peer = read_ack(ack, "the sender's transfer ack")
    yield Send(put_classad(Writer(crypto=True), ack_ad(out.local)).payload())
    return out


def send(peer: str, items: Iterable[Item], source: FileSource, *, final: bool,
         failure: Failure | None = None) -> Generator[Op, bytes | None, Outcome]:
    """Send a sandbox (the sender, ``DoUpload``). ``failure``: this side already knows
    the transfer failed (a named output file is missing): what can be sent is sent
    and the failure goes in the TransferAck, as HTCondor does."""
    items = list(items)
    m = _Messages(peer)
    out = Outcome(local=failure)
    head = Writer(crypto=True).put_int(1 if final else 0)
    info = ClassAd()
    info["SandboxSize"] = sum(i.size for i in items if not i.directory)
    yield Send(put_classad(head, info).payload())
    peer_always = i_always = False
    for item in items:
        cmd = Command.MKDIR if item.directory else Command.XFER_FILE
        yield Send(_int(int(cmd)))
        yield Send(Writer(crypto=True).put_string(item.name).payload())
        if not peer_always:
            peer_always = yield from _await_grant(m)
        if not i_always:
            yield from _grant(m, downloading=False)
            i_always = True
        if item.directory:
            yield Send(_int(item.mode))
            out.dirs.append(item.name)
            continue
        yield Send(_int(item.mode))
        try:
            fh = source.open(item.path)
        except OSError as exc:
            # the receiver still needs a whole file: an empty one, then the failure
            out.local = out.local or Failure(
                f"|Error: reading from {item.path}: (errno {exc.errno}) {exc.strerror}",
                UPLOAD_FILE_ERROR, exc.errno or 0)
            yield Send(Writer(crypto=True).put_int(0).put_int(BUFFER_SIZE).payload())
            yield Send(_int(PUT_FILE_EOM_NUM))
            continue
        with fh:
            size = item.size
            yield Send(Writer(crypto=True).put_int(size).put_int(BUFFER_SIZE).payload())
            sent = 0
            while sent < size:
                chunk = fh.read(min(BUFFER_SIZE, size - sent))
                if not chunk:
                    break
                sent += len(chunk)
                yield Send(chunk)
            if sent < size:
                # the file shrank while being sent: the stream cannot be kept whole
                raise WireError(f"{item.path} shrank to {sent} of {size} bytes while "
                                "being sent", peer=peer)
        if size == 0:
            yield Send(_int(PUT_FILE_EOM_NUM))
        out.files.append(item.name)
        out.bytes += size
    yield Send(_int(int(Command.FINISHED)))
    yield Send(put_classad(Writer(crypto=True), ack_ad(out.local)).payload())
    ack = yield from m.ad_message("the receiver's transfer ack")
    out.peer = read_ack(ack, "the receiver's transfer ack")
    return out
