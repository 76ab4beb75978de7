"""What this execution point can enforce on a job, for every slot's ad.

Decided from the host as the daemon finds it at start, without touching the cgroup
tree (the starter makes the cgroups; the daemon places starters): a cgroup v2
hierarchy offering the ``cpu``, ``memory`` and ``pids`` controllers to a daemon that
may use it (root, or a cgroup delegated to the daemon's user) means per-job cgroups;
anything else means the starter contains the job as the child subreaper of its
processes. Each job's own ad then says what actually held it (``CgroupEnforced``, as
HTCondor's starter publishes it).
"""

from __future__ import annotations

import os

from condorpy.config import KnobReader
from condorpy.machine.roots import HostRoots, read_text
from condorpy.machine.volumes import lvm_settings, slot_attributes

CONTAINMENT_ATTR = "CondorpyJobContainment"
CONTROLLERS_ATTR = "CondorpyCgroupControllers"
# Not HTCondor's IsEnforcingDiskUsage (a filesystem of the request's size for each
# job, STARTD_ENFORCE_DISK_LIMITS: condorpy/machine/volumes.py): without it the job is
# held once measured over its Disk: "hold", or "none".
DISK_ATTR = "CondorpyDiskEnforcement"
JOB_NETWORKING_ATTR = "HasJobNetworking"     # HTCondor's name: false under NO_JOB_NETWORKING
# the controllers the starter needs (condorpy/starter/cgroup.py, which sits above this
# layer; a test keeps the two the same)
NEEDED_CONTROLLERS = ("cpu", "memory", "pids")


def cgroup_v2_usable(roots: HostRoots, euid: int) -> bool:
    controllers = read_text(roots.cgroup / "cgroup.controllers")
    if controllers is None or not set(NEEDED_CONTROLLERS) <= set(controllers.split()):
        return False
    if euid == 0:
        return True
    own = None
    for line in (read_text(roots.proc / "self" / "cgroup") or "").splitlines():
        if line.startswith("0::"):
            own = line[3:].strip()
    if not own:
        return False
    directory = roots.cgroup / own.lstrip("/")
    return os.access(directory, os.W_OK) and os.access(directory / "cgroup.procs", os.W_OK)


def containment_facts(cfg: KnobReader, roots: HostRoots,
                      euid: int | None = None) -> dict[str, object]:
    uid = os.geteuid() if euid is None else euid
    facts: dict[str, object] = {}
    if wants_cgroups(cfg) and cgroup_v2_usable(roots, uid):
        facts[CONTAINMENT_ATTR] = "cgroup"
        facts[CONTROLLERS_ATTR] = " ".join(NEEDED_CONTROLLERS)
    else:
        facts[CONTAINMENT_ATTR] = "subreaper"
    facts[DISK_ATTR] = "hold" if enforces_disk(cfg) else "none"
    if no_job_networking(cfg):
        # only then: a slot without it has networking, as for HTCondor before 24.7.3
        facts[JOB_NETWORKING_ATTR] = False
    # STARTD_ENFORCE_DISK_LIMITS: IsEnforcingDiskUsage and the LVM attributes; the
    # startd does not start without its backing store, so configured means ready
    lvm = lvm_settings(cfg)
    facts.update(slot_attributes(lvm, loopback=lvm.automatic, ready=True))
    return facts


# The one reading of these two knobs: the slot ad publishes what the starter does.
def wants_cgroups(cfg: KnobReader) -> bool:
    """CONDORPY_USE_CGROUPS: contain jobs in cgroups where the host allows it."""
    return cfg.knob_bool("CONDORPY_USE_CGROUPS")


def no_job_networking(cfg: KnobReader) -> bool:
    """NO_JOB_NETWORKING: jobs run with their own loopback and no other network; the
    slot ad says ``HasJobNetworking = false``, as HTCondor's starter does."""
    # HTCondor defaults it in the code (false), not in its table: condor_config_val
    # says it is not defined, and so does condorpy's
    return cfg.get_bool("NO_JOB_NETWORKING", False)


def enforces_disk(cfg: KnobReader) -> bool:
    """CONDORPY_ENFORCE_DISK_USAGE: hold a job whose sandbox outgrows its request."""
    return cfg.knob_bool("CONDORPY_ENFORCE_DISK_USAGE")
