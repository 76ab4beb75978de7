"""NO_JOB_NETWORKING: the job runs in a network namespace of its own whose only
interface is its own loopback, up.

A new network namespace shares nothing with the host's: not its interfaces, not its
loopback (a service listening on the host's 127.0.0.1 is out of reach), not its
abstract UNIX sockets. Its ``lo`` starts down; unlike HTCondor, which leaves it so, the
job gets it up, as programs that talk to themselves over 127.0.0.1 (MPI on one node,
a local database) expect. Entering one needs CAP_SYS_ADMIN, so the job's first process
does it while it is still root, before it drops to the job's user; a starter that is
not root cannot, and the job is held rather than run on the host's network.
"""

from __future__ import annotations

from condorpy.starter.libc import check, libc

CLONE_NEWNET = 0x40000000


def enter_isolated_network() -> None:
    """Move the calling process into a new network namespace and bring its loopback up;
    OSError when either step fails."""
    check(libc().unshare(CLONE_NEWNET))
    from pyroute2 import IPRoute    # here: only a job under NO_JOB_NETWORKING pays for it

    with IPRoute() as ipr:
        found = ipr.link_lookup(ifname="lo")
        if not found:
            raise OSError(19, "the new network namespace has no loopback")
        ipr.link("set", index=found[0], state="up")
