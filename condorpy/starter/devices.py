"""STARTER_HIDE_GPU_DEVICES: a job opens only its own GPUs' device nodes.

Why a cgroup device program and not a mount namespace that hides the other nodes: the
kernel asks the program on every open and mknod of a device node, whatever path
reaches it (a fresh ``mknod``, ``/proc/<pid>/root`` of a process outside the job, a
second devtmpfs mount), so nothing the job does with file systems gets round it; a mount
namespace only hides names. It is also what HTCondor does on cgroup v2.

The decision (which nodes to deny) is pure and tested on the host: :func:`parse_information`
reads the driver's per-GPU ``information`` file, :func:`denied_devices` matches the slot's
AssignedGPUs against that inventory, :func:`device_program` assembles the program. Only
:func:`hide_unassigned_gpus` loads and attaches it.

Only the GPUs' own nodes (``/dev/nvidiaN``) are denied; the control nodes
(``nvidiactl``, ``nvidia-uvm``, ``nvidia-uvm-tools``, ``nvidia-modeset``,
``nvidia-caps/*``) stay, as CUDA needs them. A MIG instance (``MIG-GPU-<uuid>/gi/ci``)
opens through its parent GPU's node, which therefore stays open to it.
"""

from __future__ import annotations

import ctypes
import os
import platform
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from condorpy.starter.libc import libc

NVIDIA_MAJOR = 195           # the driver's fixed character major, when nvidiactl is absent


@dataclass(frozen=True)
class GpuNode:
    """One GPU as the driver lists it: its UUID (``GPU-…``), the minor of its
    ``/dev/nvidiaN`` node, and its PCI bus id (CUDA's default device order)."""
    uuid: str
    minor: int
    bus_id: str


@dataclass(frozen=True)
class DeviceDecision:
    denied: tuple[tuple[int, int], ...]      # (major, minor) character devices
    unknown: tuple[str, ...] = ()            # assigned ids the inventory does not have


def parse_information(text: str, bus_id: str) -> GpuNode | None:
    """``/proc/driver/nvidia/gpus/<bus>/information``: the ``GPU UUID`` and
    ``Device Minor`` lines; None when either is missing."""
    uuid = re.search(r"^GPU UUID:\s*(\S+)", text, re.MULTILINE)
    minor = re.search(r"^Device Minor:\s*(\d+)", text, re.MULTILINE)
    if uuid is None or minor is None:
        return None
    return GpuNode(uuid.group(1), int(minor.group(1)), bus_id)


def _bare(uuid: str) -> str:
    return uuid[4:].lower() if uuid.upper().startswith("GPU-") else uuid.lower()


def _owner(gpu_id: str, nodes: Sequence[GpuNode]) -> GpuNode | None:
    """The node an AssignedGPUs id opens through: ``CUDA<n>`` by PCI order, a GPU
    UUID or HTCondor's short form of it (a prefix), or a MIG instance's parent."""
    m = re.fullmatch(r"CUDA(\d+)", gpu_id)
    if m:
        ordered = sorted(nodes, key=lambda n: n.bus_id.lower())
        index = int(m.group(1))
        return ordered[index] if index < len(ordered) else None
    mig = re.fullmatch(r"MIG-(GPU-[0-9a-fA-F-]+)/\d+/\d+", gpu_id)
    wanted = _bare(mig.group(1) if mig else gpu_id)
    if not wanted or gpu_id.upper().startswith("MIG-") and mig is None:
        return None          # a MIG UUID does not name its parent
    matches = [n for n in nodes if _bare(n.uuid).startswith(wanted)]
    return matches[0] if len(matches) == 1 else None


def node_of(gpu_id: str, nodes: Sequence[GpuNode]) -> GpuNode | None:
    """The node an AssignedGPUs id opens through, None when none matches."""
    return _owner(gpu_id, nodes)


def denied_devices(assigned: Iterable[str], nodes: Sequence[GpuNode],
                   major: int = NVIDIA_MAJOR) -> DeviceDecision:
    """The GPU nodes to deny a job assigned ``assigned``. An id that matches no GPU
    denies nothing (as HTCondor does): a wrong guess must not take a job's own GPU."""
    keep: set[int] = set()
    unknown = []
    for gpu_id in assigned:
        node = _owner(gpu_id, nodes)
        if node is None:
            unknown.append(gpu_id)
        else:
            keep.add(node.minor)
    if unknown:
        return DeviceDecision((), tuple(unknown))
    return DeviceDecision(tuple(sorted((major, n.minor) for n in nodes
                                       if n.minor not in keep)))


# --- the program -------------------------------------------------------------------
# struct bpf_cgroup_dev_ctx { u32 access_type (access << 16 | type); u32 major; u32 minor }
_DEVCG_DEV_CHAR = 2
_LDX_W, _AND32_K, _JNE32_K, _MOV64_K, _EXIT = 0x61, 0x54, 0x56, 0xB7, 0x95


def _insn(code: int, dst: int = 0, src: int = 0, off: int = 0, imm: int = 0) -> bytes:
    return struct.pack("<BBhi", code, (src << 4) | dst, off, imm)


def device_program(denied: Sequence[tuple[int, int]]) -> bytes:
    """A BPF_PROG_TYPE_CGROUP_DEVICE program that refuses these character devices
    (every access: open for read or write, and mknod) and allows every other."""
    code = [_insn(_LDX_W, 2, 1, 0), _insn(_AND32_K, 2, imm=0xFFFF),   # r2 = type
            _insn(_LDX_W, 3, 1, 4), _insn(_LDX_W, 4, 1, 8)]           # r3, r4 = major, minor
    body = []
    for major, minor in denied:
        body += [_insn(_JNE32_K, 3, off=3, imm=major), _insn(_JNE32_K, 4, off=2, imm=minor),
                 _insn(_MOV64_K, 0, imm=0), _insn(_EXIT)]
    allow = [_insn(_MOV64_K, 0, imm=1), _insn(_EXIT)]
    # a block device is never denied: jump over the whole list
    code.append(_insn(_JNE32_K, 2, off=len(body), imm=_DEVCG_DEV_CHAR))
    return b"".join(code + body + allow)


# --- loading it --------------------------------------------------------------------
_NR_BPF = {"x86_64": 321, "aarch64": 280, "ppc64le": 361, "s390x": 351}
_BPF_PROG_LOAD, _BPF_PROG_ATTACH = 5, 8
_PROG_TYPE_CGROUP_DEVICE, _ATTACH_CGROUP_DEVICE = 15, 6


class DeviceProgramError(OSError):
    pass


def _bpf(cmd: int, attr: ctypes.Array[ctypes.c_char]) -> int:
    nr = _NR_BPF.get(platform.machine())
    if nr is None:
        raise DeviceProgramError(0, f"no bpf system call number for {platform.machine()}")
    c = libc()
    result = int(c.syscall(ctypes.c_long(nr), ctypes.c_int(cmd), attr,
                           ctypes.c_uint(len(attr))))
    if result < 0:
        code = ctypes.get_errno()
        raise DeviceProgramError(code, os.strerror(code))
    return result


def attach_program(cgroup_dir: str, program: bytes) -> None:
    """Load ``program`` and attach it to ``cgroup_dir``, without letting a cgroup below
    replace it (no BPF_F_ALLOW_OVERRIDE); it goes when the cgroup is removed."""
    insns = ctypes.create_string_buffer(program, len(program))
    license = ctypes.create_string_buffer(b"GPL")
    attr = ctypes.create_string_buffer(128)
    struct.pack_into("<IIQQ", attr, 0, _PROG_TYPE_CGROUP_DEVICE, len(program) // 8,
                     ctypes.addressof(insns), ctypes.addressof(license))
    prog = _bpf(_BPF_PROG_LOAD, attr)
    try:
        target = os.open(cgroup_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            attach = ctypes.create_string_buffer(128)
            struct.pack_into("<IIII", attach, 0, target, prog, _ATTACH_CGROUP_DEVICE, 0)
            _bpf(_BPF_PROG_ATTACH, attach)
        finally:
            os.close(target)
    finally:
        os.close(prog)


def gpu_inventory(gpus_dir: str) -> list[GpuNode]:
    """The driver's GPUs (``/proc/driver/nvidia/gpus``); none when it is absent."""
    try:
        names = sorted(os.listdir(gpus_dir))
    except OSError:
        return []
    nodes = []
    for bus in names:
        try:
            with open(os.path.join(gpus_dir, bus, "information")) as fh:
                node = parse_information(fh.read(), bus)
        except OSError:
            continue
        if node is not None:
            nodes.append(node)
    return nodes


def nvidia_major(dev_dir: str) -> int:
    try:
        return os.major(os.stat(os.path.join(dev_dir, "nvidiactl")).st_rdev)
    except OSError:
        return NVIDIA_MAJOR


def hide_unassigned_gpus(cgroup_dir: str | None, assigned: Sequence[str], *,
                         gpus_dir: str, dev_dir: str, say: Callable[[str], None]) -> None:
    """Deny the job's cgroup every GPU node but its own; says why when it cannot."""
    nodes = gpu_inventory(gpus_dir)
    if not nodes:
        return                     # no NVIDIA GPU on this machine: nothing to hide
    decision = denied_devices(assigned, nodes, nvidia_major(dev_dir))
    if decision.unknown:
        say(f"GPU devices are NOT hidden: {', '.join(decision.unknown)} matches no GPU "
            f"in {gpus_dir}")
        return
    if not decision.denied:
        return
    if cgroup_dir is None:
        say("GPU devices are NOT hidden: the job has no cgroup")
        return
    try:
        attach_program(cgroup_dir, device_program(decision.denied))
    except OSError as exc:
        say(f"GPU devices are NOT hidden: cannot attach a device program to "
            f"{cgroup_dir}: {exc.strerror or exc}")
