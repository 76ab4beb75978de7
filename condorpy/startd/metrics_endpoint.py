"""The metrics endpoint's listening socket, and prometheus-client's HTTP server made
around it by the first connection.

The address is bound when the daemon starts (so a scrape finds it listening at once,
and an address in use is known at once), but prometheus-client, with the standard
library's HTTP, e-mail and TLS modules it brings, is imported only when a connection
comes: about 12 MB that a daemon nobody scrapes does without. From then on it is
prometheus-client's own WSGI application and threading server, on a thread of their
own, as before.
"""

from __future__ import annotations

import os
import select
import socket
import threading
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client import CollectorRegistry

_BACKLOG = 5        # socketserver's request_queue_size, as prometheus-client's server had


class Endpoint:
    """A bound, listening socket; prometheus-client serves it from the first
    connection on. ``registry`` is called then, on the endpoint's thread. OSError
    when the address cannot be listened on."""

    def __init__(self, address: tuple[str, int],
                 registry: Callable[[], CollectorRegistry]) -> None:
        host, port = address
        family, _, _, _, sockaddr = socket.getaddrinfo(host, port)[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            # as socketserver's HTTP server does: a restarted daemon rebinds at once
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(sockaddr)
            sock.listen(_BACKLOG)
        except OSError:
            sock.close()
            raise
        self.sock = sock
        self._registry = registry
        self._server: WSGIServer | None = None
        self._closing = False
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe2(os.O_CLOEXEC)
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="condorpy-metrics")
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.sock.getsockname()[:2]
        return str(host), int(port)

    def _run(self) -> None:
        select.select([self.sock.fileno(), self._wake_r], [], [])
        with self._lock:
            if self._closing:
                return
            server = self._server = _wsgi_server(self.sock, self._registry())
        server.serve_forever()

    def close(self) -> None:
        with self._lock:
            self._closing = True
            server = self._server
        if server is not None:
            server.shutdown()
            server.server_close()
        else:
            os.write(self._wake_w, b"x")
            self._thread.join()
            self.sock.close()
        os.close(self._wake_r)
        os.close(self._wake_w)


def _wsgi_server(sock: socket.socket, registry: CollectorRegistry) -> WSGIServer:
    """prometheus-client's WSGI application and threading server, on ``sock`` (kept so
    it can be stopped: ``start_http_server`` returns its server only from 0.17 on, and
    Debian 12 packages 0.16)."""
    from wsgiref.simple_server import WSGIRequestHandler

    from prometheus_client import make_wsgi_app
    from prometheus_client.exposition import ThreadingWSGIServer

    class Server(ThreadingWSGIServer):
        address_family = sock.family

        def server_bind(self) -> None:
            # the endpoint's socket in place of a new one; then what HTTPServer and
            # WSGIServer do once bound
            self.socket.close()
            self.socket = sock
            self.server_address = sock.getsockname()
            host, port = self.server_address[:2]
            self.server_name, self.server_port = socket.getfqdn(str(host)), int(port)
            self.setup_environ()

        def server_activate(self) -> None:
            pass        # listening since the daemon started

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass       # one line per scrape would drown the daemon's log

    server = Server(sock.getsockname()[:2], Quiet)
    server.set_app(make_wsgi_app(registry))
    return server
