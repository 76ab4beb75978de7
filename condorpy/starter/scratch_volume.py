"""The job's scratch directory on a volume of its own (STARTD_ENFORCE_DISK_LIMITS):
made and mounted at the sandbox before anything is written into it, measured by
statvfs instead of a walk, and removed before the directory is.

The volume work itself is condorpy.machine.volumes; this module decides, for one
starter, whether the mount is hidden in a mount namespace of the starter's own
(LVM_HIDE_MOUNT) and how the job is held when it fills its volume.
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Callable, Mapping

from condorpy.errors import StarterError
from condorpy.machine import volumes
from condorpy.machine.volumes import HideMount, JobVolume, LvmSettings, VolumeError, \
    VolumeManager, VolumeRemovalFailed
from condorpy.starter.holds import HoldCode, JobHold
from condorpy.starter.libc import check, libc
from condorpy.starter.usage import OUT_OF_RESOURCES_DISK, DiskReading, DiskWatch

CLONE_NEWNS = 0x00020000
MS_REC = 0x4000
MS_SLAVE = 1 << 19


def hide_mount_wanted(setting: HideMount, own_process: bool) -> bool | None:
    """True: hide; False: do not; None: LVM_HIDE_MOUNT = true cannot be honoured (a
    starter sharing its process with others cannot have a namespace of its own)."""
    if setting is HideMount.NEVER:
        return False
    if not own_process:
        return None if setting is HideMount.ALWAYS else False
    return True


def private_mounts() -> None:
    """This process into a mount namespace of its own whose mounts do not propagate
    back (the job's volume is then seen by the starter and the job alone)."""
    check(libc().unshare(CLONE_NEWNS))
    check(libc().mount(b"none", b"/", None, ctypes.c_ulong(MS_REC | MS_SLAVE), None))


class ScratchVolume:
    """One job's volume, from creation to removal."""

    def __init__(self, settings: LvmSettings, *, own_process: bool,
                 say: Callable[[str], None],
                 manager: VolumeManager | None = None) -> None:
        self.settings = settings
        self.own_process = own_process
        self.say = say
        self.manager = manager or VolumeManager(settings, volumes.SubprocessRunner())
        self.volume: JobVolume | None = None
        self.hidden = False
        self.removal_failure: VolumeRemovalFailed | None = None

    def enter_namespace(self) -> None:
        """Into a mount namespace of the starter's own, per LVM_HIDE_MOUNT: before the
        sandbox is made, since a descriptor opened earlier still looks up paths in
        the namespace it was opened in, where the volume is not mounted."""
        hide = hide_mount_wanted(self.settings.hide_mount, self.own_process)
        if hide is None:
            raise StarterError("LVM_HIDE_MOUNT = true, but this starter shares its "
                               "process and cannot hide the job's volume")
        if hide:
            try:
                private_mounts()
                self.hidden = True
            except OSError as exc:
                if self.settings.hide_mount is HideMount.ALWAYS:
                    raise StarterError("LVM_HIDE_MOUNT = true, but no mount namespace "
                                       f"could be made: {exc.strerror}") from None
                self.say(f"the job's volume is not hidden (no mount namespace: "
                         f"{exc.strerror})")

    def make(self, name: str, disk_kb: int, mountpoint: str,
             job_ad: Mapping[str, object], owner: tuple[int, int] | None) -> JobVolume:
        """The volume mounted at ``mountpoint`` (an empty directory just made). A volume
        that cannot be made is the machine's failure: the job goes back to the queue
        (HTCondor's vacate code ScratchDirError)."""
        if self.settings.encryption_disabled and job_ad.get(volumes.JOB_ATTR_ENCRYPT) is True:
            # HTCondor's startd refuses such a job rather than run it unencrypted
            raise StarterError("the job asks for an encrypted scratch directory and "
                               "DISABLE_EXECUTE_DIRECTORY_ENCRYPTION is set")
        try:
            self.volume = self.manager.create(
                name, disk_kb, mountpoint, encrypt=self.settings.wants_encryption(job_ad),
                owner=owner)
        except VolumeError as exc:
            raise StarterError(f"cannot make the job's scratch volume: {exc}") from None
        return self.volume

    def watch(self, interval_s: float, clock: Callable[[], float]) -> DiskWatch:
        assert self.volume is not None
        return VolumeWatch(self.volume, interval_s, clock)

    def remove(self, slot: str | None) -> VolumeRemovalFailed | None:
        """Unmounted and removed; the failure record when it could not be (the slot is
        then broken until a retry removes it)."""
        if self.volume is None:
            return None
        self.removal_failure = self.manager.remove(self.volume, slot)
        if self.removal_failure is None:
            self.volume = None
        return self.removal_failure


class VolumeWatch(DiskWatch):
    """The sandbox's use read from its filesystem (statvfs), every ``interval_s``. Over
    means over the hold limit, or the filesystem full: a small thick volume's own
    metadata can keep it from ever holding LVM_THICK_LV_MARGIN of its size in files."""

    holds_at_end = True     # a full volume at the end: the job's writes failed

    def __init__(self, volume: JobVolume, interval_s: float,
                 clock: Callable[[], float]) -> None:
        super().__init__(volume.mountpoint, volume.limit_bytes // 1024, interval_s, clock)
        self.volume = volume
        self.full = False

    def _read(self) -> DiskReading:
        used, files, free = volumes.volume_usage(self.volume.mountpoint)
        self.full = free == 0
        return DiskReading(used // 1024, files, True)

    def tick(self) -> DiskReading | None:
        self.due = self.clock() + self.interval_s
        try:
            return self._read()
        except OSError:
            return None

    def over(self, kb: int) -> bool:
        return self.full or kb * 1024 >= self.volume.limit_bytes

    def hold(self, reading: DiskReading, job_id: str) -> JobHold:
        return JobHold(volumes.hold_message(self.volume.limit_bytes),
                       HoldCode.JOB_OUT_OF_RESOURCES, OUT_OF_RESOURCES_DISK, job=job_id)

    def final(self) -> DiskReading:
        try:
            return self._read()
        except OSError:
            return DiskReading(0, 0, False)

    def close(self) -> None:
        pass
