"""FS authentication, server side, without a network: the rendezvous directory's checks
(a real directory of mode 0700, made by the client, not a link or a file), and the
exchange refusing truncated, oversized and garbled client messages."""

from __future__ import annotations

import os
import pwd
from collections.abc import Generator
from pathlib import Path

import pytest

from condorpy.config import Config
from condorpy.errors import SecurityError, WireError
from condorpy.pool import fsauth
from condorpy.pool.cedar import Reader, Writer
from condorpy.pool.security import Op, Receive, Send, run_exchange

PEER = "127.0.0.1:40000"


def run(fs: fsauth.Rendezvous, client_result: bytes | None = None,
        make: str = "dir") -> tuple[str | Exception, list[bytes]]:
    """Play the client: make what ``make`` says at the path the server names."""
    sent: list[bytes] = []
    gen: Generator[Op, bytes | None, str] = run_exchange(fsauth.server_exchange(fs, PEER))
    answer: bytes | None = None
    try:
        while True:
            op = gen.send(answer)
            answer = None
            if isinstance(op, Send):
                sent.append(op.payload)
                if len(sent) == 1:
                    path = Reader(op.payload, PEER).get_str()
                    if make == "dir":
                        os.mkdir(path, 0o700)
                    elif make == "open":
                        os.mkdir(path, 0o755)
                    elif make == "file":
                        Path(path).write_text("")
                        os.chmod(path, 0o700)
                    elif make == "link":
                        os.mkdir(path + ".real", 0o700)
                        os.symlink(path + ".real", path)
            elif isinstance(op, Receive):
                answer = client_result if client_result is not None else \
                    Writer().put_int(-1 if make == "none" else 0).payload()
    except StopIteration as stop:
        return str(stop.value), sent
    except (SecurityError, WireError) as exc:
        return exc, sent
    raise AssertionError("unreachable")


def result_of(sent: list[bytes]) -> int:
    r = Reader(sent[-1], PEER)
    v = r.get_int()
    r.end()
    return v


def test_a_client_that_makes_the_directory_is_its_owner(tmp_path: Path) -> None:
    who, sent = run(fsauth.Rendezvous(str(tmp_path)))
    assert who == pwd.getpwuid(os.geteuid()).pw_name and result_of(sent) == 0
    path = Reader(sent[0], PEER).get_str()
    assert path.startswith(f"{tmp_path}/FS_")


@pytest.mark.parametrize("make, why", [
    ("none", "could not make"),
    ("open", "mode 0700"),
    ("file", "mode 0700"),
    ("link", "mode 0700"),
    ("nothing", "made no directory"),
])
def test_anything_but_a_fresh_0700_directory_is_refused(tmp_path: Path, make: str,
                                                        why: str) -> None:
    who, sent = run(fsauth.Rendezvous(str(tmp_path)), make=make)
    assert isinstance(who, SecurityError) and why in str(who) and PEER in str(who)
    assert result_of(sent) == -1


def test_no_rendezvous_directory_sends_an_empty_path_and_refuses(tmp_path: Path) -> None:
    who, sent = run(fsauth.Rendezvous(str(tmp_path / "missing")), make="none")
    assert Reader(sent[0], PEER).get_str() == ""
    assert isinstance(who, SecurityError) and "FS_LOCAL_DIR" in str(who)


@pytest.mark.parametrize("message, error", [
    (b"", WireError),
    (b"\0\0\0", WireError),
    (Writer().put_int(0).put_int(0).payload(), WireError),
    (b"\0" * 100, WireError),
])
def test_truncated_garbled_or_oversized_results_are_refused(
        tmp_path: Path, message: bytes, error: type[Exception]) -> None:
    who, _ = run(fsauth.Rendezvous(str(tmp_path)), client_result=message)
    assert isinstance(who, error) and PEER in str(who)


def test_an_owner_without_a_name_here_is_refused(tmp_path: Path) -> None:
    class Nameless(fsauth.Rendezvous):
        def owner(self, path: str) -> tuple[str, str]:
            return "", f"the owner of {path}, uid 4242, has no name on this host"
    who, _ = run(Nameless(str(tmp_path)))
    assert isinstance(who, SecurityError) and "uid 4242" in str(who)


def test_fs_local_dir_is_the_rendezvous() -> None:
    assert fsauth.rendezvous(Config.from_text("")).directory == "/tmp"
    assert fsauth.rendezvous(Config.from_text("FS_LOCAL_DIR = /srv/fs\n")).directory == \
        "/srv/fs"


def test_the_command_port_authenticates_a_tool_by_fs(tmp_path: Path) -> None:
    """A pool tool's side, message by message, as HTCondor's client sends it: it offers
    FS and IDTOKENS; the port serves FS (of its default SEC_*_AUTHENTICATION_METHODS); the
    identity is the directory's owner at UID_DOMAIN, which ALLOW_ADMINISTRATOR lists as a
    user alone (``name@*``, any host)."""
    from condorpy.classad import ClassAd
    from condorpy.pool import admin
    from condorpy.pool.secserver import SessionCache, serve, server_policy
    from condorpy.pool.security import DC_AUTHENTICATE
    from condorpy.pool.wire_ad import get_classad, put_classad
    me = pwd.getpwuid(os.geteuid()).pw_name
    cfg = Config.from_text(f"SEC_DEFAULT_AUTHENTICATION = REQUIRED\nUID_DOMAIN = vm\n"
                           f"FS_LOCAL_DIR = {tmp_path}\n"
                           f"ALLOW_ADMINISTRATOR = condor@* {me}@*\n")
    gen = serve(PEER, "10.1.2.3", server_policy(cfg), SessionCache(), lambda s: None,
                admin.COMMANDS, lambda: 1000.0, "$CondorVersion: 25.14.1 $")
    assert isinstance(next(gen), Receive)
    req = ClassAd()
    req.update({"Command": admin.VACATE_ALL_CLAIMS, "AuthMethods": "FS,IDTOKENS,CLAIMTOBE",
                "Authentication": "REQUIRED", "Encryption": "NEVER", "Integrity": "NEVER",
                "Enact": "NO", "NewSession": "YES"})
    op = gen.send(put_classad(Writer().put_int(DC_AUTHENTICATE), req).payload())
    assert isinstance(op, Send)
    reply = get_classad(Reader(op.payload, PEER))
    assert reply["Authentication"] == "YES" and reply["AuthMethodsList"] == "FS"
    assert isinstance(next(gen), Receive)
    op = gen.send(Writer().put_int(4 | 2048).payload())
    assert isinstance(op, Send) and Reader(op.payload, PEER).get_int() == 4
    op = next(gen)
    assert isinstance(op, Send)
    path = Reader(op.payload, PEER).get_str()
    os.mkdir(path, 0o700)
    assert isinstance(next(gen), Receive)
    op = gen.send(Writer().put_int(0).payload())
    assert isinstance(op, Send) and Reader(op.payload, PEER).get_int() == 0
    op = next(gen)
    assert isinstance(op, Send)
    post = get_classad(Reader(op.payload, PEER))
    assert post["ReturnCode"] == "AUTHORIZED" and post["User"] == f"{me}@vm"
    with pytest.raises(StopIteration) as stop:
        next(gen)
    assert stop.value.value.user == f"{me}@vm"


def test_a_failed_fs_falls_back_to_the_next_method_the_client_offers(
        tmp_path: Path) -> None:
    """As HTCondor's client does when FS fails (its directory is elsewhere, e.g. in a
    chroot): it offers what is left, and the port takes CLAIMTOBE if configured."""
    from condorpy.classad import ClassAd
    from condorpy.pool import admin
    from condorpy.pool.secserver import SessionCache, serve, server_policy
    from condorpy.pool.security import DC_AUTHENTICATE
    from condorpy.pool.wire_ad import get_classad, put_classad
    cfg = Config.from_text(f"SEC_DEFAULT_AUTHENTICATION = REQUIRED\nUID_DOMAIN = vm\n"
                           f"SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE\n"
                           f"FS_LOCAL_DIR = {tmp_path}\nTRUST_DOMAIN = vm\n"
                           f"ALLOW_ADMINISTRATOR = admin@vm\n")

    def start() -> Generator[Op, bytes | None, object]:
        gen = serve(PEER, "10.1.2.3", server_policy(cfg), SessionCache(), lambda s: None,
                    admin.COMMANDS, lambda: 1000.0, "$CondorVersion: 25.14.1 $")
        assert isinstance(next(gen), Receive)
        req = ClassAd()
        req.update({"Command": admin.VACATE_ALL_CLAIMS, "AuthMethods": "FS,CLAIMTOBE",
                    "Authentication": "REQUIRED", "Encryption": "NEVER",
                    "Integrity": "NEVER", "Enact": "NO"})
        assert isinstance(gen.send(put_classad(Writer().put_int(DC_AUTHENTICATE), req)
                                   .payload()), Send)
        assert isinstance(next(gen), Receive)
        op = gen.send(Writer().put_int(4 | 2).payload())
        assert isinstance(op, Send) and Reader(op.payload, PEER).get_int() == 4
        assert isinstance(next(gen), Send)                    # the path: not made
        assert isinstance(next(gen), Receive)
        op = gen.send(Writer().put_int(-1).payload())
        assert isinstance(op, Send) and Reader(op.payload, PEER).get_int() == -1
        assert isinstance(next(gen), Receive)
        return gen

    gen = start()
    op = gen.send(Writer().put_int(2).payload())              # CLAIMTOBE is left
    assert isinstance(op, Send) and Reader(op.payload, PEER).get_int() == 2
    assert isinstance(next(gen), Receive)
    op = gen.send(Writer().put_int(1).put_string("admin").payload())
    assert isinstance(op, Send) and Reader(op.payload, PEER).get_int() == 1
    op = next(gen)
    assert isinstance(op, Send)
    assert get_classad(Reader(op.payload, PEER))["ReturnCode"] == "AUTHORIZED"
    # a client with nothing left hears 0 and the reason is FS's
    gen = start()
    op = gen.send(Writer().put_int(0).payload())
    assert isinstance(op, Send) and Reader(op.payload, PEER).get_int() == 0
    with pytest.raises(SecurityError, match="could not make"):
        next(gen)


# --- the client side --------------------------------------------------------------

def client_run(path: str, verdict: bytes, ids: tuple[int, int] | None = None,
               seen: dict[str, object] | None = None) -> Exception | None:
    gen = run_exchange(fsauth.client_exchange(PEER, ids))
    try:
        assert isinstance(next(gen), Receive)
        op = gen.send(Writer().put_string(path).payload())
        assert isinstance(op, Send)
        if seen is not None:
            seen["result"] = Reader(op.payload, PEER).get_int()
            if path and os.path.isdir(path):
                st = os.lstat(path)
                seen["mode"], seen["uid"] = st.st_mode & 0o7777, st.st_uid
        assert isinstance(next(gen), Receive)
        gen.send(verdict)
    except StopIteration:
        return None
    except (SecurityError, WireError) as exc:
        return exc
    raise AssertionError("the client did not finish")


def test_the_client_makes_the_directory_and_removes_it(tmp_path: Path) -> None:
    path = str(tmp_path / "FS_abc")
    seen: dict[str, object] = {}
    assert client_run(path, Writer().put_int(0).payload(), seen=seen) is None
    assert seen == {"result": 0, "mode": 0o700, "uid": os.geteuid()}
    assert not os.path.exists(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown needs root")
def test_a_root_daemon_makes_it_as_the_condor_ids(tmp_path: Path) -> None:
    seen: dict[str, object] = {}
    path = str(tmp_path / "FS_ids")
    assert client_run(path, Writer().put_int(0).payload(), (4242, 4242), seen) is None
    assert seen["uid"] == 4242 and not os.path.exists(path)


@pytest.mark.parametrize("path, verdict, why", [
    ("", 0, "named no directory"),
    ("/nonexistent-dir/FS_x", 0, "cannot make"),
    ("TMP/FS_y", -1, "did not find"),
])
def test_client_failures_say_why(tmp_path: Path, path: str, verdict: int, why: str) -> None:
    exc = client_run(path.replace("TMP", str(tmp_path)), Writer().put_int(verdict).payload())
    assert isinstance(exc, SecurityError) and why in str(exc) and PEER in str(exc)


@pytest.mark.parametrize("verdict", [b"", b"\0" * 3, b"\0" * 100])
def test_a_damaged_verdict_is_a_wire_error(tmp_path: Path, verdict: bytes) -> None:
    assert isinstance(client_run(str(tmp_path / "FS_z"), verdict), WireError)
    assert not (tmp_path / "FS_z").exists()


def test_condorpys_client_and_server_agree_by_fs(tmp_path: Path) -> None:
    from condorpy.pool import admin
    from condorpy.pool.secserver import SessionCache, serve, server_policy
    from condorpy.pool.security import ClientPolicy, Level, client_handshake
    from tests.pool.test_claims import pump
    me = pwd.getpwuid(os.geteuid()).pw_name
    cfg = Config.from_text(f"SEC_DEFAULT_AUTHENTICATION = REQUIRED\n"
                           f"SEC_DEFAULT_ENCRYPTION = REQUIRED\nUID_DOMAIN = vm\n"
                           f"FS_LOCAL_DIR = {tmp_path}\nALLOW_ADMINISTRATOR = {me}@vm\n")
    srv = serve("client", "127.0.0.1", server_policy(cfg), SessionCache(), lambda s: None,
                admin.COMMANDS, lambda: 1000.0, "$CondorVersion: 25.14.1 $")
    policy = ClientPolicy(authentication=Level.REQUIRED, encryption=Level.REQUIRED,
                          integrity=Level.REQUIRED, auth_methods=("FS", "CLAIMTOBE"))
    session, got = pump(client_handshake(admin.VACATE_ALL_CLAIMS, policy, PEER), srv)
    assert getattr(session, "method") == "FS" and getattr(session, "encrypted")
    assert getattr(got, "user") == f"{me}@vm"
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("message", [b"", b"/tmp/FS_no_nul", b"/tmp/FS_a\0extra",
                                     Writer().put_int(5).payload()])
def test_a_damaged_directory_message_is_a_wire_error(message: bytes) -> None:
    gen = run_exchange(fsauth.client_exchange(PEER, None))
    assert isinstance(next(gen), Receive)
    with pytest.raises(WireError) as e:
        gen.send(message)
    assert PEER in str(e.value)
