"""Several condorpy execution points on this host in one reference pool: each its own
process, LOCAL_DIR and STARTD_NAME, all under one NETWORK_HOSTNAME (docs/pool.md,
"Several execution points on one host"). A sketch of the fleet harness: the EPs share
the host's network; network namespaces and NAT come with CCB."""

from __future__ import annotations

from pathlib import Path

from tests.pool.refpool import RefPool
from tests.startd.daemon_helpers import Daemon, wait_for

# what every EP of a fleet says to the pool (the pool tests' usual security)
FLEET_CONFIG = """
COLLECTOR_HOST = {collector}
NETWORK_INTERFACE = 127.0.0.1
NETWORK_HOSTNAME = {host}
STARTD_NAME = {name}
UID_DOMAIN = vm
FILESYSTEM_DOMAIN = vm
SEC_DEFAULT_AUTHENTICATION_METHODS = FS, CLAIMTOBE
SEC_DEFAULT_ENCRYPTION = REQUIRED
SEC_DEFAULT_INTEGRITY = REQUIRED
UPDATE_INTERVAL = 600
"""


class Fleet:
    """``n`` EPs named ``<prefix>1`` .. ``<prefix>n`` under ``base`` (``base/<name>``
    is each one's LOCAL_DIR), joined to ``pool``."""

    def __init__(self, base: Path, pool: RefPool, n: int, *, host: str,
                 prefix: str = "ep", extra: str = "", cpus: int = 1) -> None:
        self.pool = pool
        self.host = host
        self.names = [f"{prefix}{i}" for i in range(1, n + 1)]
        self.eps = [Daemon(base / name,
                           FLEET_CONFIG.format(collector=pool.collector, host=host,
                                               name=name) + extra, cpus=cpus)
                    for name in self.names]

    def daemon_name(self, name: str) -> str:
        """The name the EP ``name`` goes by in the pool (its slots: slotN@ this)."""
        return f"{name}@{self.host}"

    def start(self, timeout: float = 60) -> None:
        try:
            for ep in self.eps:
                ep.start()
            wait_for(lambda: self.advertised() >= set(map(self.daemon_name, self.names)),
                     timeout, lambda: f"not all EPs are in the pool: {self.advertised()}")
        except BaseException:
            self.stop()
            raise

    def advertised(self) -> set[str]:
        """The daemon names of this fleet's EPs whose slots the collector holds."""
        res = self.pool.condor("condor_status", "-af", "Name", check=False)
        return {line.partition("@")[2] for line in res.stdout.split()
                if line.endswith("@" + self.host)}

    def stop(self) -> None:
        for ep in self.eps:
            ep.stop()
            ep.kill_leftovers()

    def output(self) -> str:
        return "\n".join(f"--- {name}\n{ep.output()[-1500:]}"
                         for name, ep in zip(self.names, self.eps))
