"""Joining an HTCondor pool over CEDAR: framing and values (:mod:`.cedar`), ClassAds on
the wire (:mod:`.wire_ad`), AES-GCM (:mod:`.aesgcm`), the security handshake
(:mod:`.security`), a blocking socket adapter (:mod:`.connection`) and the collector's
commands (:mod:`.collector`). Protocol code is sans-I/O; see ``docs/pool-protocol.md``."""
