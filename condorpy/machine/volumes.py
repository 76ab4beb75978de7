"""Per-job scratch volumes (HTCondor's ``STARTD_ENFORCE_DISK_LIMITS``): each job's
scratch directory on a logical volume of its own, sized by its disk request, optionally
under dm-crypt, made and removed with the lvm, cryptsetup, mke2fs and mount commands.

The decisions (names, sizes, command lines, parsing ``lvs``, the retry back-off, what
the slot ad says) are pure functions and records; :class:`VolumeManager` carries them
out through a :class:`CommandRunner` port, so tests drive it with a fake. Commands run
without a shell; udev is not assumed (the lane's VM and many containers have none):
every lvm command gets ``--config`` turning udev off, and libdevmapper makes the
``/dev/mapper`` nodes itself (``DM_DISABLE_UDEV=1``).

Names and defaults are HTCondor's (src/condor_startd.V6/VolumeManager.cpp,
param_info.in): LVs are tagged ``htcondor_lv`` (and ``lv_is_encrypted``), the dm-crypt
mapping is ``<vg>-<lv>-enc``, the automatic backing store is a loop device over
``LVM_BACKING_FILE`` of ``LVM_BACKING_FILE_SIZE_MB``.
"""

from __future__ import annotations

import enum
import math
import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from condorpy.config import KnobReader, boolean_value
from condorpy.errors import MachineError

CONDOR_LV_TAG = "htcondor_lv"
ENCRYPTED_TAG = "lv_is_encrypted"
ENCRYPT_SUFFIX = "-enc"
KEY_BYTES = 32                      # 256-bit key, as HTCondor
FS_LABEL = "HTCondorLV_FS"
# the default extent size: a volume is at least this and a multiple of it
EXTENT_KB = 4096
REPORT_SEPARATOR = "\x1f"
# udev may be absent: no waiting for it, no rules, no device list from it
LVM_CONFIG = ("activation { udev_sync = 0 udev_rules = 0 verify_udev_operations = 1 } "
              "devices { obtain_device_list_from_udev = 0 }")
COMMAND_ENV = {"DM_DISABLE_UDEV": "1", "LVM_SUPPRESS_FD_WARNINGS": "1", "LC_ALL": "C"}

# HTCondor's hold for a job that filled its volume (CONDOR_HOLD_CODE::JobOutOfResources,
# OUT_OF_RESOURCES_SUB_CODE::Disk), and its vacate code for a volume that could not be
# made (CONDOR_HOLD_CODE::ScratchDirError)
HOLD_CODE_OUT_OF_RESOURCES = 34
HOLD_SUBCODE_DISK = 104
SCRATCH_DIR_ERROR = 1024

# slot ad attributes (HTCondor's condor_attributes.h)
ATTR_ENFORCING = "IsEnforcingDiskUsage"
ATTR_LOOPBACK = "LvmUsingLoopback"
ATTR_THIN = "LvmIsThinProvisioning"
ATTR_BACKING_STORE = "LvmBackingStore"
ATTR_DISK_QUANTUM = "DiskQuantum"
ATTR_HAS_ENCRYPT = "HasEncryptExecuteDirectory"
JOB_ATTR_ENCRYPT = "EncryptExecuteDirectory"


class VolumeError(MachineError):
    """A volume command failed; names the command and carries its stderr."""

    def __init__(self, message: str, *, argv: Sequence[str] = (), stderr: str = "",
                 status: int | None = None) -> None:
        where = f" ({' '.join(argv)}: status {status}: {stderr.strip() or 'no output'})" \
            if argv else ""
        super().__init__(message + where)
        self.argv = tuple(argv)
        self.stderr = stderr
        self.status = status


class HideMount(enum.Enum):
    """``LVM_HIDE_MOUNT``: mount the job's volume in a mount namespace of the starter's
    own (true), never (false), or where the job allows it (auto)."""
    NEVER = "false"
    ALWAYS = "true"
    AUTO = "auto"


def parse_hide_mount(text: str | None) -> HideMount:
    flag = boolean_value(text or "auto")
    if flag is None:
        return HideMount.AUTO       # HTCondor treats anything else as auto too
    return HideMount.ALWAYS if flag else HideMount.NEVER


# --- settings -------------------------------------------------------------------------

@dataclass(frozen=True)
class LvmSettings:
    enforce: bool = False                   # STARTD_ENFORCE_DISK_LIMITS
    volume_group: str | None = None         # LVM_VOLUME_GROUP_NAME
    thinpool: str | None = None             # LVM_THINPOOL_NAME
    thin: bool = False                      # LVM_USE_THIN_PROVISIONING
    hide_mount: HideMount = HideMount.AUTO  # LVM_HIDE_MOUNT
    backing_file: str = ""                  # LVM_BACKING_FILE
    backing_file_mb: int = 10240            # LVM_BACKING_FILE_SIZE_MB
    thin_extra_mb: int = 2000               # LVM_THIN_LV_EXTRA_SIZE_MB
    thick_margin: float = 0.98              # LVM_THICK_LV_MARGIN
    timeout_s: float = 120.0                # VOLUME_MANAGER_TIMEOUT
    encrypt_all: bool = False               # ENCRYPT_EXECUTE_DIRECTORY
    encryption_disabled: bool = False       # DISABLE_EXECUTE_DIRECTORY_ENCRYPTION
    auto_vg_name: str = "condor_STARTD"     # LVM_AUTO_VG_NAME (HTCondor's is unlisted)

    @property
    def automatic(self) -> bool:
        """No volume group (or no thin pool when thin) given: the startd makes its own
        over a loop-backed file."""
        return not self.volume_group or (self.thin and not self.thinpool)

    def wants_encryption(self, job_ad: Mapping[str, object]) -> bool:
        if self.encryption_disabled:
            return False
        return self.encrypt_all or job_ad.get(JOB_ATTR_ENCRYPT) is True


# The knobs of this module, each read here once.
KNOBS = ("STARTD_ENFORCE_DISK_LIMITS", "LVM_VOLUME_GROUP_NAME", "LVM_THINPOOL_NAME",
         "LVM_USE_THIN_PROVISIONING", "LVM_HIDE_MOUNT", "LVM_BACKING_FILE",
         "LVM_BACKING_FILE_SIZE_MB", "LVM_THIN_LV_EXTRA_SIZE_MB", "LVM_THICK_LV_MARGIN",
         "VOLUME_MANAGER_TIMEOUT", "ENCRYPT_EXECUTE_DIRECTORY",
         "DISABLE_EXECUTE_DIRECTORY_ENCRYPTION", "LVM_AUTO_VG_NAME")


def lvm_settings(cfg: KnobReader) -> LvmSettings:
    margin = cfg.knob_float("LVM_THICK_LV_MARGIN")
    if not 0.0 <= margin <= 1.0:
        raise cfg.invalid("LVM_THICK_LV_MARGIN", "a number from 0 to 1")
    size = cfg.knob_int("LVM_BACKING_FILE_SIZE_MB")
    if size <= 0:
        raise cfg.invalid("LVM_BACKING_FILE_SIZE_MB", "a positive number of MiB")
    return LvmSettings(
        enforce=cfg.knob_bool("STARTD_ENFORCE_DISK_LIMITS"),
        volume_group=cfg.get("LVM_VOLUME_GROUP_NAME") or None,
        thinpool=cfg.get("LVM_THINPOOL_NAME") or None,
        thin=cfg.knob_bool("LVM_USE_THIN_PROVISIONING"),
        hide_mount=parse_hide_mount(cfg.get("LVM_HIDE_MOUNT")),
        backing_file=cfg.get("LVM_BACKING_FILE") or "",
        backing_file_mb=size,
        thin_extra_mb=max(0, cfg.knob_int("LVM_THIN_LV_EXTRA_SIZE_MB")),
        thick_margin=margin,
        timeout_s=max(1.0, cfg.knob_float("VOLUME_MANAGER_TIMEOUT")),
        encrypt_all=cfg.knob_bool("ENCRYPT_EXECUTE_DIRECTORY"),
        encryption_disabled=cfg.knob_bool("DISABLE_EXECUTE_DIRECTORY_ENCRYPTION"),
        auto_vg_name=cfg.get("LVM_AUTO_VG_NAME") or "condor_STARTD")


# --- names and sizes ------------------------------------------------------------------

def lv_name(slot: str, startd_pid: int, serial: int) -> str:
    """A name never reused (HTCondor's LVM_USE_UNIQUE_LV_NAMES default): the slot, the
    startd's pid and a counter, e.g. ``slot1_1+812_3``."""
    return f"{slot}+{startd_pid}_{serial}"


def job_volume_name(slot_name: str, tag: str) -> str:
    """A starter's volume: its slot (without the host) and its unique tag, in the
    characters lvm allows."""
    raw = f"{slot_name.partition('@')[0] or 'slot'}+{tag}"
    return "".join(c if c.isalnum() and c.isascii() or c in "+_.-" else "_" for c in raw)


def mapper_path(vg: str, lv: str, encrypted: bool = False) -> str:
    """The device-mapper node of an LV (hyphens doubled, as lvm names it), or of its
    dm-crypt mapping."""
    if encrypted:
        return f"/dev/mapper/{crypt_name(vg, lv)}"
    return "/dev/mapper/{}-{}".format(vg.replace("-", "--"), lv.replace("-", "--"))


def crypt_name(vg: str, lv: str) -> str:
    return f"{vg}-{lv}{ENCRYPT_SUFFIX}"


def volume_size_kb(disk_kb: int, settings: LvmSettings) -> int:
    """The LV's size for a slot's Disk (KiB): at least one extent; a thin LV has
    LVM_THIN_LV_EXTRA_SIZE_MB more, so the hold comes before ENOSPC."""
    size = max(int(disk_kb), EXTENT_KB)
    if settings.thin:
        size += 1024 * settings.thin_extra_mb
    return size


def hold_limit_bytes(disk_kb: int, settings: LvmSettings) -> int:
    """Used bytes at which the job is held: its request; for a thick LV
    LVM_THICK_LV_MARGIN of it, since the filesystem's own blocks leave no headroom."""
    limit = max(int(disk_kb), EXTENT_KB) * 1024
    if not settings.thin:
        limit = math.floor(limit * settings.thick_margin)
    return limit


def hold_message(limit_bytes: int) -> str:
    return (f"Job has exceeded allocated disk ({limit_bytes / 1024 / 1024:.1f} MiB). "
            "Consider increasing the value of request_disk.")


# --- command lines --------------------------------------------------------------------

def _lvm(*args: str) -> tuple[str, ...]:
    return (args[0], "--config", LVM_CONFIG, *args[1:])


def lvcreate_argv(vg: str, lv: str, size_kb: int, *, thinpool: str | None,
                  encrypted: bool) -> tuple[str, ...]:
    tags = ("--addtag", CONDOR_LV_TAG) + (("--addtag", ENCRYPTED_TAG) if encrypted else ())
    where: tuple[str, ...]
    if thinpool:
        where = ("-V", f"{size_kb}k", "-T", f"{vg}/{thinpool}")
    else:
        # mke2fs writes what it needs: zeroing a thick volume first only costs time
        where = ("--zero", "n", "--wipesignatures", "n", "--yes", "-L", f"{size_kb}k", vg)
    return _lvm("lvcreate", "--autobackup", "n", "-n", lv, *tags, *where)


def lvremove_argv(vg: str, lv: str) -> tuple[str, ...]:
    return _lvm("lvremove", "--autobackup", "n", "--yes", f"{vg}/{lv}")


def lvs_argv(vg: str) -> tuple[str, ...]:
    return _lvm("lvs", "--noheadings", "--nameprefixes", "--separator", REPORT_SEPARATOR,
                "--units", "b", "--options",
                "vg_name,lv_name,pool_lv,lv_tags,lv_size,data_percent,vg_extent_size", vg)


def mkfs_argv(device: str) -> tuple[str, ...]:
    # no journal, no reserved blocks: the volume lives no longer than its job
    return ("mke2fs", "-q", "-F", "-t", "ext4", "-O", "^has_journal", "-E",
            "lazy_itable_init=1,nodiscard", "-m", "0", "-L", FS_LABEL, device)


def mount_argv(device: str, mountpoint: str) -> tuple[str, ...]:
    return ("mount", "-t", "ext4", "-o", "noatime,nodev,nosuid,barrier=0", device,
            mountpoint)


def umount_argv(mountpoint: str) -> tuple[str, ...]:
    return ("umount", "--lazy", mountpoint)


def crypt_open_argv(vg: str, lv: str) -> tuple[str, ...]:
    """Plain dm-crypt with the key read from stdin ("-"): never on a command line or in
    a file."""
    return ("cryptsetup", "open", "--type", "plain", "--cipher", "aes-xts-plain64",
            "--key-size", str(KEY_BYTES * 8), "--key-file", "-",
            "--keyfile-size", str(KEY_BYTES), mapper_path(vg, lv), crypt_name(vg, lv))


def crypt_close_argv(vg: str, lv: str) -> tuple[str, ...]:
    return ("cryptsetup", "close", crypt_name(vg, lv))


def auto_store_argvs(loopdev: str, vg: str, thinpool: str | None) -> list[tuple[str, ...]]:
    """The physical volume, volume group and (thin) pool over the backing loop device."""
    out = [_lvm("pvcreate", "--yes", loopdev),
           _lvm("vgcreate", "--autobackup", "n", vg, loopdev)]
    if thinpool:
        out.append(_lvm("lvcreate", "--autobackup", "n", "--type", "thin-pool", "-l",
                        "100%FREE", vg, "-n", thinpool))
    return out


# --- lvs output -----------------------------------------------------------------------

@dataclass(frozen=True)
class LvRecord:
    vg: str
    name: str
    pool: str
    tags: tuple[str, ...]
    size_bytes: int
    data_percent: float | None
    extent_bytes: int

    @property
    def ours(self) -> bool:
        return CONDOR_LV_TAG in self.tags

    @property
    def encrypted(self) -> bool:
        return ENCRYPTED_TAG in self.tags


def _report_value(item: str) -> tuple[str, str]:
    key, sep, rest = item.strip().partition("=")
    if not sep or len(rest) < 2 or rest[0] != "'" or rest[-1] != "'":
        raise ValueError(f"malformed lvm report field {item!r}")
    return key, rest[1:-1]


def _bytes(text: str) -> int:
    return int(text.rstrip("B") or 0)


def parse_lvs(text: str) -> list[LvRecord]:
    """``lvs --nameprefixes --separator \\x1f --units b`` output; bad lines skipped."""
    out = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            values = dict(_report_value(item) for item in line.split(REPORT_SEPARATOR))
            percent = values.get("LVM2_DATA_PERCENT", "")
            out.append(LvRecord(
                vg=values["LVM2_VG_NAME"], name=values["LVM2_LV_NAME"],
                pool=values.get("LVM2_POOL_LV", ""),
                tags=tuple(t for t in values.get("LVM2_LV_TAGS", "").split(",") if t),
                size_bytes=_bytes(values["LVM2_LV_SIZE"]),
                data_percent=float(percent) if percent else None,
                extent_bytes=_bytes(values.get("LVM2_VG_EXTENT_SIZE", "0B"))))
        except (KeyError, ValueError):
            continue
    return out


def leaked(records: Iterable[LvRecord], vg: str, live: Iterable[str] = ()) -> list[LvRecord]:
    """The LVs of ours in ``vg`` that no running job has (a thin pool is never ours)."""
    keep = set(live)
    return [r for r in records if r.vg == vg and r.ours and r.name not in keep]


# --- retrying what could not be removed -----------------------------------------------

def retry_due(iteration: int) -> bool:
    """HTCondor's cleanup back-off for a tick about once a minute
    (STARTD_CLEANUP_REMINDER_TIMER_INTERVAL, 62 s): on powers of two for the first hour,
    then hourly for a day, then daily."""
    if iteration <= 0:
        return False
    if iteration > 60 * 24:
        return iteration % (60 * 24) == 0
    if iteration > 60:
        return iteration % 60 == 0
    return iteration & (iteration - 1) == 0


@dataclass(frozen=True)
class VolumeRemovalFailed:
    """A job's volume that could not be removed: the record a broken slot is made of
    (HTCondor breaks the slot, 25.5.1), and a reminder retried with :func:`retry_due`."""
    volume_group: str
    volume: str
    encrypted: bool
    reason: str              # the failed command and its stderr
    slot: str | None = None

    @property
    def device(self) -> str:
        return mapper_path(self.volume_group, self.volume, self.encrypted)


@dataclass
class LeakedVolumes:
    """Volumes waiting to be removed again, each with the count of ticks since it
    failed; :meth:`due` says which to try at this tick."""
    waiting: dict[str, tuple[VolumeRemovalFailed, int]] = field(default_factory=dict)

    def add(self, failure: VolumeRemovalFailed) -> None:
        self.waiting.setdefault(failure.volume, (failure, 0))

    def due(self) -> list[VolumeRemovalFailed]:
        out = []
        for name, (failure, count) in list(self.waiting.items()):
            self.waiting[name] = (failure, count + 1)
            if retry_due(count + 1):
                out.append(failure)
        return out

    def removed(self, name: str) -> None:
        self.waiting.pop(name, None)

    def __len__(self) -> int:
        return len(self.waiting)


# --- the slot ad ----------------------------------------------------------------------

def slot_attributes(settings: LvmSettings, *, loopback: bool, ready: bool,
                    extent_kb: int = EXTENT_KB) -> dict[str, object]:
    """What HTCondor's startd adds to each slot ad when it enforces disk with LVM."""
    if not (settings.enforce and ready):
        return {ATTR_HAS_ENCRYPT: False} if settings.enforce else {}
    store = settings.volume_group or settings.auto_vg_name
    if settings.thin:
        store += "/" + (settings.thinpool or settings.auto_vg_name + "_THINPOOL")
    attrs: dict[str, object] = {ATTR_ENFORCING: True, ATTR_BACKING_STORE: store,
                                ATTR_DISK_QUANTUM: extent_kb,
                                ATTR_HAS_ENCRYPT: not settings.encryption_disabled}
    if loopback:
        attrs[ATTR_LOOPBACK] = True
    if settings.thin:
        attrs[ATTR_THIN] = True
    return attrs


# --- the I/O shell --------------------------------------------------------------------

@dataclass(frozen=True)
class CommandResult:
    status: int
    stdout: str
    stderr: str


class CommandRunner(Protocol):
    def run(self, argv: Sequence[str], *, stdin: bytes | None = None,
            timeout: float) -> CommandResult: ...


class SubprocessRunner:
    """Runs a command with no shell and udev turned off; a missing command or a timeout
    is a status like any other failure."""

    def run(self, argv: Sequence[str], *, stdin: bytes | None = None,
            timeout: float) -> CommandResult:
        env = dict(os.environ)
        env.update(COMMAND_ENV)
        try:
            done = subprocess.run(list(argv), input=stdin, capture_output=True,
                                  timeout=timeout, env=env, check=False,
                                  stdin=None if stdin is not None else subprocess.DEVNULL)
        except FileNotFoundError:
            return CommandResult(127, "", f"{argv[0]}: command not found")
        except subprocess.TimeoutExpired:
            return CommandResult(124, "", f"timed out after {timeout:g} s")
        return CommandResult(done.returncode, done.stdout.decode(errors="replace"),
                             done.stderr.decode(errors="replace"))


@dataclass(frozen=True)
class JobVolume:
    """A job's volume as made: what removing it needs."""
    volume_group: str
    name: str
    mountpoint: str
    size_kb: int
    limit_bytes: int
    encrypted: bool

    @property
    def device(self) -> str:
        return mapper_path(self.volume_group, self.name, self.encrypted)


def volume_usage(mountpoint: str) -> tuple[int, int, int]:
    """(used bytes, files, bytes still free) of a mounted volume, by statvfs: the whole
    filesystem is the job's, so no walk is needed."""
    st = os.statvfs(mountpoint)
    block = st.f_frsize or st.f_bsize
    used = (st.f_blocks - st.f_bfree) * block
    return used, st.f_files - st.f_ffree, st.f_bavail * block


class VolumeManager:
    """Makes, finds and removes the volumes of one volume group (and thin pool)."""

    def __init__(self, settings: LvmSettings, runner: CommandRunner, *,
                 mounts_file: str = "/proc/self/mounts",
                 random_bytes: object = os.urandom) -> None:
        self.settings = settings
        self.runner = runner
        self.mounts_file = mounts_file
        self.random = random_bytes
        self.volume_group = settings.volume_group or settings.auto_vg_name
        self.thinpool = (settings.thinpool or f"{self.volume_group}_THINPOOL") \
            if settings.thin else None
        self.loop_device: str | None = None

    def _run(self, what: str, argv: Sequence[str], stdin: bytes | None = None) -> str:
        done = self.runner.run(argv, stdin=stdin, timeout=self.settings.timeout_s)
        if done.status != 0:
            raise VolumeError(what, argv=argv, stderr=done.stderr, status=done.status)
        return done.stdout

    # the backing store ---------------------------------------------------------------

    def set_up(self) -> None:
        """The automatic backing store when no volume group is given: a loop device over
        LVM_BACKING_FILE, a PV, a VG (and a thin pool) on it. Reuses a store already
        there (a restarted startd)."""
        if not self.settings.automatic:
            return
        path = self.settings.backing_file
        if not path:
            raise VolumeError("STARTD_ENFORCE_DISK_LIMITS without LVM_VOLUME_GROUP_NAME "
                              "needs LVM_BACKING_FILE")
        want = self.settings.backing_file_mb * 1024 * 1024
        if not os.path.exists(path):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.posix_fallocate(fd, 0, want)
            except OSError as exc:
                os.close(fd)
                os.unlink(path)
                raise VolumeError(f"cannot allocate {want} bytes for {path}: "
                                  f"{exc.strerror}") from None
            os.close(fd)
        elif os.stat(path).st_size < want:
            raise VolumeError(f"the backing file {path} is smaller than "
                              f"LVM_BACKING_FILE_SIZE_MB ({self.settings.backing_file_mb})")
        listing = self._run("cannot list loop devices",
                            ("losetup", "--list", "--noheadings", "--output",
                             "NAME,BACK-FILE"))
        for line in listing.splitlines():
            parts = line.split(None, 1)
            if len(parts) == 2 and _same_file(parts[1].strip(), path):
                self.loop_device = parts[0]
                break
        if self.loop_device is None:
            self.loop_device = self._run(
                f"cannot attach {path} to a loop device",
                ("losetup", "--find", "--show", path)).strip()
        vgs = self.runner.run(_lvm("vgs", "--noheadings", "-o", "vg_name",
                                   self.volume_group), timeout=self.settings.timeout_s)
        if vgs.status == 0 and vgs.stdout.strip() == self.volume_group:
            return
        for argv in auto_store_argvs(self.loop_device, self.volume_group, self.thinpool):
            self._run("cannot make the automatic LVM backing store", argv)

    # finding and removing leftovers ----------------------------------------------------

    def list_volumes(self) -> list[LvRecord]:
        return parse_lvs(self._run(f"cannot list the volumes of {self.volume_group}",
                                   lvs_argv(self.volume_group)))

    def sweep(self, live: Iterable[str] = ()) -> list[VolumeRemovalFailed]:
        """Removes the volumes of ours no running job has (left by a crash); returns
        those that could not be removed."""
        failures = []
        for record in leaked(self.list_volumes(), self.volume_group, live):
            failure = self.remove_named(record.name, record.encrypted)
            if failure is not None:
                failures.append(failure)
        return failures

    def remove_named(self, name: str, encrypted: bool, mountpoint: str | None = None,
                     slot: str | None = None) -> VolumeRemovalFailed | None:
        """Unmount (wherever a crash left it mounted), close the dm-crypt mapping and
        remove the LV. None when it is gone (or was), else the failure record."""
        vg = self.volume_group
        try:
            for device in (mapper_path(vg, name, True), mapper_path(vg, name)):
                for where in self._mounted_at(device, mountpoint):
                    self._run(f"cannot unmount {where}", umount_argv(where))
            if os.path.exists(mapper_path(vg, name, True)):
                self._run("cannot close the encrypted volume", crypt_close_argv(vg, name))
            if not os.path.exists(mapper_path(vg, name)):
                return None
            done = self.runner.run(lvremove_argv(vg, name), timeout=self.settings.timeout_s)
            if done.status != 0 and "Failed to find logical volume" not in done.stderr:
                raise VolumeError("cannot remove the volume", argv=lvremove_argv(vg, name),
                                  stderr=done.stderr, status=done.status)
        except VolumeError as exc:
            return VolumeRemovalFailed(vg, name, encrypted, str(exc), slot)
        return None

    def _mounted_at(self, device: str, mountpoint: str | None) -> list[str]:
        found = []
        try:
            with open(self.mounts_file, encoding="utf-8") as f:
                for line in f:
                    parts = line.split()
                    if len(parts) >= 2 and parts[0] == device:
                        found.append(parts[1].replace("\\040", " "))
        except OSError:
            pass
        if mountpoint and not found and os.path.ismount(mountpoint):
            found.append(mountpoint)
        return found

    # one job's volume ------------------------------------------------------------------

    def create(self, name: str, disk_kb: int, mountpoint: str, *, encrypt: bool,
               owner: tuple[int, int] | None = None) -> JobVolume:
        """The LV (thin or thick), its dm-crypt mapping with a fresh random key passed
        on stdin, an ext4 filesystem, mounted at ``mountpoint`` (which must exist and be
        empty). Anything half-made is removed before the error is raised."""
        vg, size = self.volume_group, volume_size_kb(disk_kb, self.settings)
        self._run(f"cannot create the job's volume {vg}/{name}",
                  lvcreate_argv(vg, name, size, thinpool=self.thinpool, encrypted=encrypt))
        try:
            if encrypt:
                key = self.random(KEY_BYTES)  # type: ignore[operator]
                assert isinstance(key, bytes) and len(key) == KEY_BYTES
                self._run(f"cannot encrypt the job's volume {vg}/{name}",
                          crypt_open_argv(vg, name), stdin=key)
                del key
            device = mapper_path(vg, name, encrypt)
            self._run(f"cannot make a filesystem on {device}", mkfs_argv(device))
            self._run(f"cannot mount {device} at {mountpoint}",
                      mount_argv(device, mountpoint))
            try:
                os.rmdir(os.path.join(mountpoint, "lost+found"))
            except OSError:
                pass
            if owner is not None:
                os.chown(mountpoint, *owner)
            os.chmod(mountpoint, 0o700)
        except (VolumeError, OSError) as exc:
            failure = self.remove_named(name, encrypt, mountpoint)
            extra = f"; and removing it failed: {failure.reason}" if failure else ""
            if isinstance(exc, VolumeError):
                raise VolumeError(f"{exc}{extra}") from None
            raise VolumeError(f"cannot prepare {mountpoint}: {exc.strerror}{extra}") from None
        return JobVolume(vg, name, mountpoint, size, hold_limit_bytes(disk_kb, self.settings),
                         encrypt)

    def remove(self, volume: JobVolume, slot: str | None = None) -> VolumeRemovalFailed | None:
        return self.remove_named(volume.name, volume.encrypted, volume.mountpoint, slot)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False
