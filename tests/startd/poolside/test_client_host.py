"""A pool claim's ClientMachine: the host part of the schedd's address, never a DNS
lookup (which would stall the daemon's loop)."""

from __future__ import annotations

import pytest

from condorpy.startd.poolside.claims import client_host


@pytest.mark.parametrize("address, host", [
    ("127.0.0.1:40123", "127.0.0.1"),                                  # a socket's peer
    ("<10.0.0.5:9618?addrs=10.0.0.5-9618&alias=ap.example>", "10.0.0.5"),  # sinful
    ("<[2001:db8::1]:9618>", "2001:db8::1"),
    ("2001:db8::1:40123", "2001:db8::1"),                              # an IPv6 peer
    ("ap.example.org", "ap.example.org"),
])
def test_client_host(address: str, host: str) -> None:
    assert client_host(address) == host
