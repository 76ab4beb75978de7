"""HTCondor's SSL authentication method (condorpy/pool/sslauth.py): its CEDAR framing,
the certificate checks HTCondor makes (host names, subjects, the map file), both sides'
state machines run against each other in memory with real certificates, the whole
DC_AUTHENTICATE handshake with SSL, and condorpy's client against condorpy's server
over a socketpair. The reference pools are in test_pool_ssl.py."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Generator
from pathlib import Path

import pytest

from condorpy.config import Config
from condorpy.errors import ConfigError, SecurityError, WireError
from condorpy.pool import admin, mapfile, sslauth
from condorpy.pool.connection import Connection
from condorpy.pool.security import ClientPolicy, Level, Session, client_handshake
from condorpy.pool.secserver import Authorized, SessionCache, serve, server_policy
from tests.pool.certs import Issued, issue, make_ca
from tests.pool.test_claims import pump

PEER = "cm.example.org:9618"


# --- framing -----------------------------------------------------------------------

def test_status_and_record_messages_are_cedar_ints_and_raw_bytes() -> None:
    assert sslauth.status_message(0) == bytes(8)
    assert sslauth.status_message(-1) == b"\xff" * 8
    msg = sslauth.tls_message(sslauth.HOLDING, b"\x16\x03\x01")
    assert msg == bytes(7) + b"\x04" + bytes(7) + b"\x03" + b"\x16\x03\x01"
    assert sslauth.read_tls_message(msg, PEER) == (4, b"\x16\x03\x01")
    assert sslauth.read_tls_message(sslauth.tls_message(2, b""), PEER) == (2, b"")
    assert sslauth.read_status(bytes(7) + b"\x03", PEER) == 3


@pytest.mark.parametrize("payload, error", [
    (bytes(7) + b"\x04" + b"\xff" * 8, SecurityError),                # length -1
    (bytes(7) + b"\x04" + bytes(4) + b"\x01\x00\x00\x01", SecurityError),  # 16 MiB
    (bytes(7) + b"\x04" + bytes(7) + b"\x05" + b"abc", WireError),     # short
    (bytes(7) + b"\x04" + bytes(7) + b"\x01" + b"ab", WireError),      # long
    (bytes(5), WireError),
])
def test_damaged_messages_are_refused_naming_the_peer(payload: bytes,
                                                      error: type[Exception]) -> None:
    with pytest.raises(error) as exc:
        sslauth.read_tls_message(payload, PEER)
    assert PEER in str(exc.value)


# --- names -------------------------------------------------------------------------

@pytest.mark.parametrize("pattern, host, ok", [
    ("cm.example.org", "CM.Example.org", True),
    ("*.example.org", "cm.example.org", True),
    ("*.example.org", "a.cm.example.org", False),
    ("c*.example.org", "cm.example.org", True),
    ("*.example.org", "example.org", False),
    ("cm.example.org", "cm.example.com", False),
])
def test_host_names_match_label_by_label(pattern: str, host: str, ok: bool) -> None:
    assert sslauth.hostname_match(pattern, host) is ok


def _der(issued: Issued) -> bytes:
    from cryptography.hazmat.primitives import serialization
    return issued.cert.public_bytes(serialization.Encoding.DER)


def test_subject_is_openssls_one_line_form_and_the_san_or_cn_names_the_host() -> None:
    ca = make_ca()
    with_san = issue(ca, "cm.example.org", sans=("*.pool.example.org", "cm.example.org"))
    assert sslauth.subject_oneline(_der(with_san)) == \
        "/C=US/O=condorpy tests/CN=cm.example.org"
    assert sslauth.host_matches(_der(with_san), "ep1.pool.example.org")
    assert sslauth.host_matches(_der(with_san), "cm.example.org")
    assert not sslauth.host_matches(_der(with_san), "other.example.org")
    cn_only = issue(ca, "cm.example.org")
    assert sslauth.host_matches(_der(cn_only), "CM.example.org")
    assert not sslauth.host_matches(_der(cn_only), "x.example.org")


@pytest.mark.parametrize("sinful, peer, alias", [
    ("<10.0.0.1:9618?alias=cm.example.org>", "10.0.0.1:9618", "cm.example.org"),
    ("", "cm.example.org:9618", "cm.example.org"),
    ("", "10.0.0.1:9618", ""),
    ("", "[::1]:9618", ""),
])
def test_the_host_checked_is_the_alias_or_the_name_the_client_was_given(
        sinful: str, peer: str, alias: str) -> None:
    assert sslauth.host_alias(sinful, peer) == alias


# --- the map file ------------------------------------------------------------------

MAP = r'''
# daemons by host certificate, then people by their DN
SSL "^/C=US/O=condorpy tests/CN=([^/]+)\.example\.org$" condor@\1
SSL "/O=People/CN=(.*)" \1
SSL .* nobody@vm
FS (.*) \1@fs.vm
'''


def test_map_file_rules_are_regexes_in_order_with_groups() -> None:
    m = mapfile.parse(MAP)
    assert m.canonical("SSL", "/C=US/O=condorpy tests/CN=cm.example.org") == "condor@cm"
    assert m.canonical("SSL", "/C=US/O=People/CN=alice") == "alice"
    assert m.canonical("SSL", "/O=Else/CN=x") == "nobody@vm"
    assert m.canonical("FS", "bob") == "bob@fs.vm"
    assert m.canonical("CLAIMTOBE", "bob") is None
    assert sslauth.identity("/C=US/O=People/CN=alice", m, "vm") == "alice@vm"
    assert sslauth.identity("/X=1", None, "vm") == "ssl@unmapped"
    assert sslauth.identity("", None, "vm") == "unauthenticated@unmapped"


def test_a_map_file_that_cannot_be_read_names_the_knob(tmp_path: Path) -> None:
    bad = tmp_path / "map"
    bad.write_text('SSL "(unclosed" x\n')
    with pytest.raises(ConfigError, match="CERTIFICATE_MAPFILE"):
        mapfile.load(Config.from_text(f"CERTIFICATE_MAPFILE = {bad}\n"))
    with pytest.raises(ConfigError, match="CERTIFICATE_MAPFILE"):
        mapfile.load(Config.from_text(f"CERTIFICATE_MAPFILE = {tmp_path}/none\n"))
    assert mapfile.load(Config.from_text("")) is None


# --- the two state machines against each other ---------------------------------------

class Pki:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.ca = make_ca()
        self.ca_file = root / "ca.crt"
        root.mkdir(parents=True, exist_ok=True)
        self.ca_file.write_bytes(self.ca.cert_pem())
        self.host = issue(self.ca, "cm.example.org", sans=("cm.example.org",))
        self.host_crt, self.host_key = self.host.write(root, "host")
        self.user = issue(self.ca, "alice", org="People")
        self.user_crt, self.user_key = self.user.write(root, "alice")
        self.rogue_ca = make_ca("rogue CA")
        self.rogue = issue(self.rogue_ca, "cm.example.org", sans=("cm.example.org",))
        self.rogue_crt, self.rogue_key = self.rogue.write(root, "rogue")

    def server(self, crt: Path | None = None, key: Path | None = None, require: bool = False
               ) -> sslauth.Settings:
        return sslauth.Settings(cafile=(str(self.ca_file),), use_default_cas=False,
                                certs=((str(crt or self.host_crt), str(key or self.host_key)),),
                                require_client_cert=require)

    def client(self, crt: Path | None = None, key: Path | None = None,
               skip_host_check: bool = False, trust: bool = True) -> sslauth.Settings:
        return sslauth.Settings(cafile=(str(self.ca_file),) if trust else (),
                                use_default_cas=False,
                                certs=((str(crt), str(key)),) if crt and key else (),
                                skip_host_check=skip_host_check)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return Pki(tmp_path_factory.mktemp("pki"))


Gen = Generator[tuple[str, bytes], bytes | None, sslauth.Peer]


def run_pair(client: Gen, server: Gen) -> tuple[object, object, list[tuple[str, bytes]]]:
    """Both exchanges against each other, message by message; each side's result or
    the error it raised, and the messages as they went (c/s, payload)."""
    gens = {"c": client, "s": server}
    inbox: dict[str, list[bytes]] = {"c": [], "s": []}
    pending: dict[str, bytes | None] = {"c": None, "s": None}
    waiting: dict[str, bool] = {"c": False, "s": False}
    results: dict[str, object] = {}
    wire: list[tuple[str, bytes]] = []
    for _ in range(400):
        progressed = False
        for side in ("c", "s"):
            if side in results:
                continue
            if waiting[side]:
                if not inbox[side]:
                    continue
                pending[side] = inbox[side].pop(0)
                waiting[side] = False
            try:
                kind, data = gens[side].send(pending[side])
            except StopIteration as stop:
                results[side] = stop.value
                progressed = True
                continue
            except SecurityError as exc:
                results[side] = exc
                progressed = True
                continue
            pending[side] = None
            progressed = True
            if kind == "send":
                wire.append((side, data))
                inbox["s" if side == "c" else "c"].append(data)
            else:
                waiting[side] = True
        if not progressed:
            break
    return results.get("c"), results.get("s"), wire


def exchange(pki: Pki, client: sslauth.Settings, server: sslauth.Settings,
             alias: str = "cm.example.org") -> tuple[object, object, list[tuple[str, bytes]]]:
    cctx = sslauth.make_context(client, server=False)
    sctx = sslauth.make_context(server, server=True)
    return run_pair(sslauth.client_exchange(cctx, alias, client.skip_host_check, PEER),
                    sslauth.server_exchange(sctx, server.require_client_cert, "client"))


def test_both_sides_authenticate_and_learn_each_others_subject(pki: Pki) -> None:
    c, s, wire = exchange(pki, pki.client(pki.user_crt, pki.user_key), pki.server())
    assert c == sslauth.Peer("/C=US/O=condorpy tests/CN=cm.example.org")
    assert s == sslauth.Peer("/C=US/O=People/CN=alice")
    # HTCondor's rounds with TLS 1.3: the statuses (server first); the handshake,
    # client first, until both say 4 (holding); the key, server first, until both do
    shape = [(side, sslauth.read_status(p, PEER) if len(p) == 8 else
              sslauth.read_tls_message(p, PEER)[0]) for side, p in wire]
    assert shape == [("s", 0), ("c", 0),
                     ("c", 2), ("s", 2), ("c", 4), ("s", 4),
                     ("s", 4), ("c", 4)]
    assert sslauth.read_tls_message(wire[-1][1], PEER) == (4, b"")


def test_a_client_without_a_certificate_is_anonymous_unless_one_is_required(pki: Pki
                                                                            ) -> None:
    c, s, _ = exchange(pki, pki.client(), pki.server())
    assert isinstance(c, sslauth.Peer) and s == sslauth.Peer("")
    c, s, _ = exchange(pki, pki.client(), pki.server(require=True))
    assert isinstance(s, SecurityError)
    assert "AUTH_SSL_REQUIRE_CLIENT_CERTIFICATE" in str(s)
    assert isinstance(c, SecurityError)


def test_a_server_certificate_of_an_unknown_ca_is_refused(pki: Pki) -> None:
    c, s, _ = exchange(pki, pki.client(), pki.server(pki.rogue_crt, pki.rogue_key))
    assert isinstance(c, SecurityError) and isinstance(s, SecurityError)
    assert "did not verify" in str(c) and PEER in str(c)


def test_a_client_certificate_of_an_unknown_ca_is_refused(pki: Pki) -> None:
    c, s, _ = exchange(pki, pki.client(pki.rogue_crt, pki.rogue_key), pki.server())
    assert isinstance(s, SecurityError) and "did not verify" in str(s)
    assert isinstance(c, SecurityError)


def test_a_certificate_for_another_host_is_refused_unless_the_check_is_skipped(
        pki: Pki) -> None:
    c, s, _ = exchange(pki, pki.client(), pki.server(), alias="evil.example.org")
    assert isinstance(c, SecurityError)
    assert "does not name host evil.example.org" in str(c)
    assert isinstance(s, SecurityError) and "gave up" in str(s)
    c, s, _ = exchange(pki, pki.client(), pki.server(), alias="")
    assert isinstance(c, SecurityError) and "SSL_SKIP_HOST_CHECK" in str(c)
    c, s, _ = exchange(pki, pki.client(skip_host_check=True), pki.server(),
                       alias="evil.example.org")
    assert isinstance(c, sslauth.Peer) and isinstance(s, sslauth.Peer)


def test_a_side_without_tls_material_says_so_and_both_stop(pki: Pki, tmp_path: Path
                                                           ) -> None:
    with pytest.raises(SecurityError, match="AUTH_SSL_SERVER_CERTFILE"):
        sslauth.make_context(pki.server(tmp_path / "no.crt", tmp_path / "no.key"),
                             server=True)
    cctx = sslauth.make_context(pki.client(), server=False)
    c, s, wire = run_pair(
        sslauth.client_exchange(cctx, "cm.example.org", False, PEER),
        sslauth.server_exchange(None, False, "client", "no host certificate"))
    # the client still answers with its own status before both stop
    assert wire == [("s", sslauth.status_message(-1)), ("c", sslauth.status_message(0))]
    assert isinstance(s, SecurityError) and "no host certificate" in str(s)
    assert isinstance(c, SecurityError) and "could not set up TLS" in str(c)


def test_settings_come_from_htcondors_knobs(pki: Pki) -> None:
    cfg = Config.from_text(f"""
AUTH_SSL_CLIENT_CAFILE = /nonexistent/ca.pem, {pki.ca_file}
AUTH_SSL_CLIENT_CERTFILE = {pki.user_crt}
AUTH_SSL_CLIENT_KEYFILE = {pki.user_key}
AUTH_SSL_CLIENT_USE_DEFAULT_CAS = false
SSL_SKIP_HOST_CHECK = true
AUTH_SSL_SERVER_CERTFILE = /nonexistent/host.crt, {pki.host_crt}
AUTH_SSL_SERVER_KEYFILE = /nonexistent/host.key, {pki.host_key}
AUTH_SSL_REQUIRE_CLIENT_CERTIFICATE = true
""")
    client = sslauth.client_settings(cfg)
    assert client.skip_host_check and not client.use_default_cas
    assert client.certs == ((str(pki.user_crt), str(pki.user_key)),)
    server = sslauth.server_settings(cfg)
    assert server.require_client_cert
    assert server.readable_cert() == (str(pki.host_crt), str(pki.host_key))
    # the default server files are the system's localhost pair, absent here
    assert sslauth.server_settings(Config.from_text("")).certs[0][0].endswith(
        "localhost.crt")
    c, s, _ = run_pair(
        sslauth.client_exchange(sslauth.make_context(client, server=False), "", True, PEER),
        sslauth.server_exchange(sslauth.make_context(
            sslauth.Settings(cafile=(str(pki.ca_file),), use_default_cas=False,
                             certs=server.certs), server=True), True, "client"))
    assert s == sslauth.Peer("/C=US/O=People/CN=alice") and isinstance(c, sslauth.Peer)


# --- the whole handshake -------------------------------------------------------------

def _server_config(pki: Pki, maps: Path) -> Config:
    return Config.from_text(f"""
SEC_DEFAULT_AUTHENTICATION = REQUIRED
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_DEFAULT_INTEGRITY = REQUIRED
SEC_DEFAULT_AUTHENTICATION_METHODS = SSL
UID_DOMAIN = vm
TRUST_DOMAIN = vm
AUTH_SSL_SERVER_CAFILE = {pki.ca_file}
AUTH_SSL_SERVER_USE_DEFAULT_CAS = false
AUTH_SSL_SERVER_CERTFILE = {pki.host_crt}
AUTH_SSL_SERVER_KEYFILE = {pki.host_key}
CERTIFICATE_MAPFILE = {maps}
ALLOW_ADMINISTRATOR = alice@vm
""")


def _client(pki: Pki, crt: Path | None = None, key: Path | None = None) -> ClientPolicy:
    return ClientPolicy(authentication=Level.REQUIRED, encryption=Level.REQUIRED,
                        integrity=Level.REQUIRED, auth_methods=("SSL",),
                        configured_methods=("SSL",), trust_domain="vm",
                        ssl=pki.client(crt or pki.user_crt, key or pki.user_key))


@pytest.fixture(scope="module")
def maps(pki: Pki) -> Path:
    path = pki.root / "mapfile"
    path.write_text(MAP)
    return path


def _serve(pki: Pki, maps: Path, peer: str = "client"
           ) -> Generator[object, bytes | None, Authorized]:
    return serve(peer, "127.0.0.1", server_policy(_server_config(pki, maps)), SessionCache(),
                 lambda sid: None, admin.COMMANDS, lambda: 1000.0,
                 "$CondorVersion: 25.14.1 $")  # type: ignore[return-value]


def test_dc_authenticate_with_ssl_maps_the_subject_and_encrypts(pki: Pki, maps: Path
                                                               ) -> None:
    session, got = pump(client_handshake(admin.VACATE_ALL_CLAIMS, _client(pki), PEER),
                        _serve(pki, maps))   # type: ignore[arg-type]
    assert isinstance(session, Session) and isinstance(got, Authorized)
    assert session.method == "SSL" and session.encrypted
    assert got.user == "alice@vm" and session.user == "alice@vm"


def test_ssl_is_offered_only_by_a_server_with_a_host_certificate(pki: Pki, tmp_path: Path
                                                                ) -> None:
    cfg = Config.from_text("SEC_DEFAULT_AUTHENTICATION_METHODS = SSL, FS\n"
                           f"AUTH_SSL_SERVER_CERTFILE = {tmp_path}/none.crt\n"
                           f"AUTH_SSL_SERVER_KEYFILE = {tmp_path}/none.key\n")
    policy = server_policy(cfg)
    assert all(lp.auth_methods == ("FS",) for lp in policy.levels.values())
    assert policy.ssl is None
    ready = server_policy(Config.from_text(
        f"SEC_DEFAULT_AUTHENTICATION_METHODS = SSL, FS\nAUTH_SSL_SERVER_CERTFILE = "
        f"{pki.host_crt}\nAUTH_SSL_SERVER_KEYFILE = {pki.host_key}\n"))
    assert all(lp.auth_methods == ("SSL", "FS") for lp in ready.levels.values())


def test_condorpy_client_and_server_over_a_socketpair(pki: Pki, maps: Path,
                                                      caplog: pytest.LogCaptureFixture
                                                      ) -> None:
    """Real sockets, real certificates: a good client is admitted as its mapped name;
    one with a rogue certificate is refused and the server's log names it."""
    for crt, key, ok in ((pki.user_crt, pki.user_key, True),
                         (pki.rogue_crt, pki.rogue_key, False)):
        a, b = socket.socketpair()
        outcome: dict[str, object] = {}

        def server_side() -> None:
            try:
                with Connection(b, "ep-peer:1234", 20) as conn:
                    outcome["server"] = conn.run(_serve(pki, maps, "ep-peer:1234"))
            except Exception as exc:        # the thread reports, the test asserts
                outcome["server"] = exc

        t = threading.Thread(target=server_side)
        t.start()
        try:
            with Connection(a, PEER, 20) as conn:
                conn.start_command(admin.VACATE_ALL_CLAIMS, _client(pki, crt, key))
                outcome["client"] = conn.session
        except Exception as exc:
            outcome["client"] = exc
        t.join(30)
        if ok:
            got = outcome["server"]
            assert isinstance(got, Authorized) and got.user == "alice@vm"
            assert isinstance(outcome["client"], Session)
        else:
            assert isinstance(outcome["client"], Exception)
            assert any("did not verify" in r.getMessage() and "ep-peer:1234" in
                       r.getMessage() for r in caplog.records)


def test_a_failed_ssl_attempt_falls_back_to_the_next_method(
        pki: Pki, caplog: pytest.LogCaptureFixture) -> None:
    """As HTCondor's method loop: the server refuses the rogue certificate, says why in
    its log, and both go on to CLAIMTOBE."""
    cfg = Config.from_text(f"""
SEC_DEFAULT_AUTHENTICATION = REQUIRED
SEC_DEFAULT_AUTHENTICATION_METHODS = SSL, CLAIMTOBE
UID_DOMAIN = vm
TRUST_DOMAIN = vm
AUTH_SSL_SERVER_CAFILE = {pki.ca_file}
AUTH_SSL_SERVER_USE_DEFAULT_CAS = false
AUTH_SSL_SERVER_CERTFILE = {pki.host_crt}
AUTH_SSL_SERVER_KEYFILE = {pki.host_key}
ALLOW_ADMINISTRATOR = bob@vm
""")
    client = ClientPolicy(authentication=Level.REQUIRED, encryption=Level.REQUIRED,
                          integrity=Level.REQUIRED, auth_methods=("SSL", "CLAIMTOBE"),
                          claimtobe_user="bob@vm", trust_domain="vm",
                          ssl=pki.client(pki.rogue_crt, pki.rogue_key))
    session, got = pump(
        client_handshake(admin.VACATE_ALL_CLAIMS, client, PEER),
        serve("ep-peer:1", "127.0.0.1", server_policy(cfg), SessionCache(),
              lambda sid: None, admin.COMMANDS, lambda: 1.0, "$CondorVersion: 25.14.1 $"))
    assert isinstance(session, Session) and session.method == "CLAIMTOBE"
    assert isinstance(got, Authorized) and got.user == "bob@vm"
    assert any("did not verify" in r.getMessage() and "ep-peer:1" in r.getMessage()
               for r in caplog.records)


def test_require_client_mapping_refuses_a_subject_the_map_file_does_not_name(
        pki: Pki) -> None:
    cctx = sslauth.make_context(pki.client(pki.user_crt, pki.user_key), server=False)
    sctx = sslauth.make_context(pki.server(), server=True)
    people = mapfile.parse('SSL "/O=People/" person\n')
    robots = mapfile.parse('SSL "/O=Robots/" robot\n')
    for maps, ok in ((people, True), (robots, False)):
        c, s, _ = run_pair(
            sslauth.client_exchange(cctx, "cm.example.org", False, PEER),
            sslauth.server_exchange(sctx, False, "client", "",
                                    lambda subject: maps.canonical("SSL", subject)
                                    is not None))
        assert isinstance(s, sslauth.Peer) is ok and isinstance(c, sslauth.Peer) is ok
        if not ok:
            assert "AUTH_SSL_REQUIRE_CLIENT_MAPPING" in str(s)
    assert sslauth.server_settings(Config.from_text(
        "AUTH_SSL_REQUIRE_CLIENT_MAPPING = true\n")).require_client_mapping


@pytest.mark.parametrize("records", [b"\x00" * 40, b"\x16\x03\x01\x00\x05hello",
                                     b"GET / HTTP/1.0\r\n"])
def test_garbage_records_end_in_one_security_error_on_either_side(pki: Pki,
                                                                  records: bytes) -> None:
    server = sslauth.server_exchange(sslauth.make_context(pki.server(), server=True),
                                     False, "client")
    assert next(server) == ("send", sslauth.status_message(0))
    assert server.send(None)[0] == "receive"
    assert server.send(sslauth.status_message(0))[0] == "receive"
    with pytest.raises(SecurityError, match="SSL authentication failed"):
        op = server.send(sslauth.tls_message(2, records))
        while True:       # it says it quits, then ends
            assert op[0] == "send" and sslauth.read_tls_message(op[1], PEER)[0] == 3
            op = server.send(None)
    client = sslauth.client_exchange(sslauth.make_context(pki.client(), server=False),
                                     "cm.example.org", False, PEER)
    assert next(client)[0] == "receive"
    assert client.send(sslauth.status_message(0)) == ("send", sslauth.status_message(0))
    assert client.send(None)[0] == "send"          # its ClientHello
    assert client.send(None)[0] == "receive"
    with pytest.raises(SecurityError, match=PEER):
        op = client.send(sslauth.tls_message(2, records))
        while True:
            op = client.send(None)
