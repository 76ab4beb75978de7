"""The pool side of the daemon (``docs/pool.md``, ``docs/architecture.md``): one facade,
:class:`PoolLink`, over its parts.

- claims.py      one record per claim and the table whose ``drop`` is the only way a
                 claim goes; the claim ids published for the slots
- advertiser.py  the collector's view of the slots (updates, invalidations)
- server.py      the command port (claims, reconnect, coalesce, the pool's tools)
- admin.py       the pool's tools through the local CLI's handler
- schedd.py      ALIVE and RELEASE_CLAIM to the schedds
- shadow.py      a job's conversation with its shadow, and its file transfer hand-off
- transfer.py    the job's scratch directory and file transfers
- reconnect.py   job leases and the shadow's reconnect
- claimstore.py  the claims stored for a restart; the command port kept
- adoption.py    re-creating stored claims after a restart
- now.py         condor_now's coalesce
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from condorpy.startd.poolside.adoption import PoolAdoption
    from condorpy.startd.poolside.claims import PoolJob, engine_id
    from condorpy.startd.poolside.claimstore import StoredClaim, previous_port, stored
    from condorpy.startd.poolside.link import PoolLink, remember_port
    from condorpy.startd.poolside.settings import PoolSettings, pool_settings
    from condorpy.startd.poolside.shadow import JobHost, pool_job_ad

# Imported on first use, not with the package: a daemon without a pool reads only its
# settings (settings.py), and the rest (CEDAR, the security handshake, hashlib's
# OpenSSL) would be memory it never uses.
_WHERE = {"PoolAdoption": "adoption", "PoolJob": "claims", "engine_id": "claims",
          "StoredClaim": "claimstore", "previous_port": "claimstore",
          "stored": "claimstore", "PoolLink": "link", "remember_port": "link",
          "PoolSettings": "settings", "pool_settings": "settings", "JobHost": "shadow",
          "pool_job_ad": "shadow"}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{where}"), name)


__all__ = ["JobHost", "PoolAdoption", "PoolJob", "PoolLink", "PoolSettings",
           "StoredClaim", "engine_id", "pool_job_ad", "pool_settings", "previous_port",
           "remember_port", "stored"]
