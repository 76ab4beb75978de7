"""GPU discovery with the options and output of HTCondor's ``condor_gpu_discovery``.

Devices come from the CUDA driver, as HTCondor's come (:mod:`condorpy.machine.gpu_cuda`,
with MIG instances from NVML); else from NVML (``pynvml``, package nvidia-ml-py) when it
imports and finds a device; else from ``nvidia-smi --query-gpu``; else there are none (and
that is not an error). ``-simulate[:D[,N,...]]`` replaces detection with HTCondor's table of simulated
devices, so GPU slots can be configured and tested on machines without GPUs.

The result is rendered as the text ``condor_gpu_discovery`` prints (``DetectedGPUs``,
``Common=[...]``, ``GPU_xxxxxxxx=[...]`` or the ``-not-nested`` prefixed attributes);
:mod:`condorpy.machine.resources` reads that text exactly as it reads the output of any
other ``MACHINE_RESOURCE_INVENTORY_<name>`` command.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from condorpy.machine.roots import HostRoots

# --- the devices ----------------------------------------------------------------------


@dataclass(frozen=True)
class GpuDevice:
    """One device as a backend reports it; None means the backend did not say."""

    uuid: str                        # bare (CUDA style) or NVML's "GPU-..."/"MIG-..."
    name: str | None = None
    pci_id: str | None = None
    memory_bytes: int | None = None
    capability: tuple[int, int] | None = None
    clock_khz: int | None = None
    compute_units: int | None = None
    ecc: bool | None = None
    driver_version: int | None = None  # CUDA driver version, e.g. 12020
    # -dynamic properties: (FanSpeedPct, PowerUsage_mw, DieTempC, EccErrorsSingleBit,
    # EccErrorsDoubleBit), None where the backend cannot read them (all, or one)
    dynamic: tuple[int | None, ...] | None = None


@dataclass(frozen=True)
class _SimModel:
    name: str
    sm: int            # 0xMm
    clock_khz: int
    units: int
    ecc: bool
    memory_bytes: int


@dataclass(frozen=True)
class _SimConfig:
    driver: int
    model: _SimModel
    mig_memory_mb: tuple[int, ...] = ()   # non-empty: the device is in MIG mode


_MIB = 1024 * 1024
_GT330 = _SimModel("GeForce GT 330", 0x12, 1340_000, 12, False, 1024 * _MIB)
_GTX480 = _SimModel("GeForce GTX 480", 0x20, 1400_000, 15, False, 1536 * _MIB)
_V100 = _SimModel("Tesla V100-PCIE-16GB", 0x70, 1380_000, 80, True, 24220 * _MIB)
_TITAN = _SimModel("TITAN RTX", 0x75, 1770_000, 72, False, 24220 * _MIB)
# HTCondor's table gives the A100s 40536 * 1024 * 1204 bytes (not * 1024): its
# simulated A100 reports GlobalMemoryMb=47661, and so does condorpy's.
_A100 = _SimModel("A100-SXM4-40GB", 0x80, 1410_000, 42, True, 40536 * 1024 * 1204)
_A100_1G = _SimModel("NVIDIA A100-SXM4-40GB MIG 1g.5gb", 0x80, 1410_000, 42, True,
                     4864 * 1024 * 1204)
_A100_3G = _SimModel("NVIDIA A100-SXM4-40GB MIG 3g.20gb", 0x80, 1410_000, 42, True,
                     20096 * 1024 * 1204)

# HTCondor's table of simulated devices (-simulate:D), in its order
SIMULATED: tuple[_SimConfig, ...] = (
    _SimConfig(6000, _GT330),
    _SimConfig(4020, _GTX480),
    _SimConfig(11020, _V100),
    _SimConfig(11020, _TITAN),
    _SimConfig(11020, _A100),
    _SimConfig(11020, _A100_3G, (20086, 20082)),
    _SimConfig(11040, _A100_1G, (4861,) * 7),
    _SimConfig(11040, _A100_3G, (20086, 20082)),
)


def _sim_uuid(index: int, mig: int = 0x34) -> str:
    b = bytes([((index * 0x11) + 0xA0) & 0xFF, 0x22, 0x33, mig & 0xFF, 0x44, 0x45, 0x56, 0x67,
               0x89, 0x9A, 0xAB, 0xBC, 0xCD, 0xDE, 0xEF, 0xF0])
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _leading_int(text: str) -> int:
    """C's atoi: the integer a string starts with (after blanks), 0 when none."""
    m = re.match(r"\s*([+-]?\d+)", text)
    return int(m.group(1)) if m else 0


def parse_simulate(spec: str | None) -> list[int]:
    """``-simulate[:D[,N[,D2,N2...]]]`` -> the table index of each simulated device.

    As condor_gpu_discovery reads it: no list is one device of entry 0, an empty list
    none at all, and a list starting with the size of the table one of every entry."""
    if spec is None:
        return [0]
    if spec and _leading_int(spec) == len(SIMULATED):
        return list(range(len(SIMULATED)))
    nums = [n for n in spec.split(",")]
    out: list[int] = []
    i = 0
    while i < len(nums) and spec:
        try:
            d = int(nums[i])
            n = int(nums[i + 1]) if i + 1 < len(nums) else 1
        except ValueError:
            raise ValueError(f"simulation must be in range of 0-{len(SIMULATED)}, "
                             f"got {spec!r}") from None
        if not 0 <= d < len(SIMULATED) or n < 0:
            raise ValueError(f"simulation must be in range of 0-{len(SIMULATED)}, got {spec!r}")
        out.extend([d] * n)
        i += 2
    return out


def _sim_dynamic(dev_id: int) -> tuple[int, int, int, int, int]:
    # HTCondor's simulated NVML answers base + jitter + its handle (0x100 | device);
    # the jitter is set only by nvmlInit, which a simulation never calls: 0
    handle = 0x100 | (dev_id & 0x0F)
    return (9 + handle, 29 + handle, 89 + handle, 0, 0)


def simulated_devices(indexes: Sequence[int]) -> tuple[list[GpuDevice], dict[str, list[GpuDevice]]]:
    """(devices, MIG children by parent uuid) for the simulated table entries.

    As HTCondor's simulation reports them: no driver version, and MIG instances with
    memory, clock and ECC of their own and, as 25.x reports them (23.9 leaves these
    out), the parent's capability and PCI bus id."""
    devices: list[GpuDevice] = []
    migs: dict[str, list[GpuDevice]] = {}
    for dev_id, ix in enumerate(indexes):
        cfg = SIMULATED[ix]
        m = cfg.model
        cc = (m.sm >> 4, m.sm & 0xF)
        parent = GpuDevice(uuid=_sim_uuid(dev_id), name=m.name, pci_id=f"0000:{dev_id + 0x40:02x}:00.0",
                           memory_bytes=m.memory_bytes, capability=cc, clock_khz=m.clock_khz,
                           compute_units=m.units, ecc=m.ecc, dynamic=_sim_dynamic(dev_id))
        devices.append(parent)
        children = []
        for mig_id, mem in enumerate(cfg.mig_memory_mb):
            if cfg.driver >= 11040:
                uuid = "MIG-" + _sim_uuid(dev_id, mig_id)
            else:
                uuid = f"MIG-GPU-{_sim_uuid(dev_id)}/{mig_id}/0"
            children.append(GpuDevice(uuid=uuid, memory_bytes=mem * _MIB, capability=cc,
                                      clock_khz=m.clock_khz, ecc=m.ecc, pci_id=parent.pci_id))
        if children:
            migs[parent.uuid] = children
    return devices, migs


# --- real backends ----------------------------------------------------------------------


def _nvml_devices() -> tuple[list[GpuDevice], dict[str, list[GpuDevice]]] | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no driver, no device: not an error
        return None
    try:
        return _nvml_enumerate(pynvml)
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def _call(nv: Any, name: str, *args: Any) -> Any:
    """nv.name(*args), or None when this pynvml lacks the call or the device refuses it."""
    fn = getattr(nv, name, None)
    if fn is None:
        return None
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - a property NVML cannot give is left out, as HTCondor does
        return None


def _text(v: Any) -> str | None:
    if v is None:
        return None
    return v.decode() if isinstance(v, bytes) else str(v)


def _nvml_one(nv: Any, h: Any, driver: int | None) -> GpuDevice:
    uuid = _text(_call(nv, "nvmlDeviceGetUUID", h)) or ""
    mem = _call(nv, "nvmlDeviceGetMemoryInfo", h)
    cc = _call(nv, "nvmlDeviceGetCudaComputeCapability", h)
    clock = _call(nv, "nvmlDeviceGetMaxClockInfo", h, getattr(nv, "NVML_CLOCK_SM", 1))
    ecc = _call(nv, "nvmlDeviceGetEccMode", h)
    attrs = _call(nv, "nvmlDeviceGetAttributes", h)
    pci = _call(nv, "nvmlDeviceGetPciInfo", h)
    pci_id = None
    if pci is not None:
        pci_id = f"{pci.domain:04X}:{pci.bus:02X}:{pci.device:02X}.0"
    return GpuDevice(
        uuid=uuid, name=_text(_call(nv, "nvmlDeviceGetName", h)), pci_id=pci_id,
        memory_bytes=int(mem.total) if mem is not None else None,
        capability=(int(cc[0]), int(cc[1])) if cc else None,
        clock_khz=int(clock) * 1000 if clock else None,
        compute_units=int(attrs.multiprocessorCount) if attrs is not None else None,
        ecc=bool(ecc[0]) if ecc else None, driver_version=driver)


def _nvml_enumerate(nv: Any) -> tuple[list[GpuDevice], dict[str, list[GpuDevice]]] | None:
    count = _call(nv, "nvmlDeviceGetCount")
    if not count:
        return None
    driver = _call(nv, "nvmlSystemGetCudaDriverVersion")
    devices: list[GpuDevice] = []
    migs: dict[str, list[GpuDevice]] = {}
    for i in range(count):
        h = _call(nv, "nvmlDeviceGetHandleByIndex", i)
        if h is None:
            continue
        dev = _nvml_one(nv, h, driver)
        # CUDA reports bare uuids and HTCondor's ids and DeviceUuid are built from those
        dev = replace(dev, uuid=dev.uuid.removeprefix("GPU-"))
        devices.append(dev)
        mode = _call(nv, "nvmlDeviceGetMigMode", h)
        if mode and mode[0]:
            children = []
            for j in range(_call(nv, "nvmlDeviceGetMaxMigDeviceCount", h) or 0):
                ch = _call(nv, "nvmlDeviceGetMigDeviceHandleByIndex", h, j)
                if ch is None:
                    continue
                child = _nvml_one(nv, ch, driver)
                children.append(replace(child, capability=child.capability or dev.capability,
                                        clock_khz=child.clock_khz or dev.clock_khz,
                                        ecc=dev.ecc if child.ecc is None else child.ecc,
                                        pci_id=child.pci_id or dev.pci_id))
            if children:
                migs[dev.uuid] = children
    return devices, migs


_SMI_FIELDS = ("uuid", "name", "pci.bus_id", "memory.total", "ecc.mode.current",
               "clocks.max.sm", "compute_cap")


def _smi_num(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


# like condor_gpu_discovery, detect every device, not just those this process may use
VISIBILITY_VARS = ("CUDA_VISIBLE_DEVICES", "GPU_DEVICE_ORDINAL", "HIP_VISIBLE_DEVICES",
                    "ROCR_VISIBLE_DEVICES")


def nvidia_smi_devices(roots: HostRoots, timeout: float = 30.0) -> list[GpuDevice] | None:
    exe = roots.which("nvidia-smi")
    if exe is None:
        return None
    env = {k: v for k, v in roots.environ().items() if k not in VISIBILITY_VARS}
    fields = list(_SMI_FIELDS)
    out = None
    for _ in range(2):
        try:
            proc = subprocess.run([str(exe), f"--query-gpu={','.join(fields)}",
                                   "--format=csv,noheader,nounits"],
                                  capture_output=True, text=True, errors="replace",
                                  timeout=timeout,
                                  stdin=subprocess.DEVNULL, check=False, env=env)
        except (OSError, subprocess.TimeoutExpired):
            return None
        if proc.returncode == 0:
            out = proc.stdout
            break
        # drivers before 510 do not know compute_cap: ask again without it
        if "compute_cap" in fields:
            fields.remove("compute_cap")
            continue
        return None
    if out is None:
        return None
    driver = _smi_cuda_version(exe, timeout, env)
    devices = []
    for line in out.splitlines():
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != len(fields):
            continue
        row = dict(zip(fields, cols))
        cap = None
        if "compute_cap" in row and "." in row["compute_cap"]:
            a, b = row["compute_cap"].split(".", 1)
            if a.isdigit() and b.isdigit():
                cap = (int(a), int(b))
        mem = _smi_num(row["memory.total"])
        clock = _smi_num(row["clocks.max.sm"])
        bus = row["pci.bus_id"]
        dom, _, restbus = bus.partition(":")
        pci = f"{dom[-4:]}:{restbus}" if restbus else bus
        ecc = {"enabled": True, "disabled": False}.get(row["ecc.mode.current"].lower())
        devices.append(GpuDevice(uuid=row["uuid"].removeprefix("GPU-"), name=row["name"], pci_id=pci,
                                 memory_bytes=int(mem * 1024 * 1024) if mem is not None else None,
                                 capability=cap, clock_khz=int(clock * 1000) if clock else None,
                                 ecc=ecc, driver_version=driver))
    return devices or None


def _smi_cuda_version(exe: Any, timeout: float, env: dict[str, str]) -> int | None:
    try:
        proc = subprocess.run([str(exe)], capture_output=True, text=True, errors="replace",
                              timeout=timeout,
                              stdin=subprocess.DEVNULL, check=False, env=env)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"CUDA Version:\s*(\d+)\.(\d+)", proc.stdout)
    return int(m.group(1)) * 1000 + int(m.group(2)) * 10 if m else None


# --- options ----------------------------------------------------------------------------


@dataclass
class GpuOptions:
    properties: bool = False
    extra: bool = False
    dynamic: bool = False
    nested: bool = True
    uuid_ids: bool = True          # -uuid / -short-uuid (default) vs -by-index
    short_uuid: bool = True
    prefix: str | None = None
    tag: str = "GPUs"
    simulate: list[int] | None = None
    repeat: int = 0
    divide: bool = False
    packed: bool = False
    config_syntax: bool = False
    cron: bool = False
    mixed: bool = False
    devices: list[str] = field(default_factory=list)


def _is_opt(arg: str, name: str, min_len: int) -> tuple[bool, str | None]:
    """HTCondor's option matching: an unambiguous prefix of at least min_len; '--' is exact."""
    if not arg.startswith("-"):
        return False, None
    body = arg[1:]
    exact = min_len < 0
    if body.startswith("-"):
        body, exact = body[1:], True
    value = None
    if ":" in body:
        body, value = body.split(":", 1)
    if not body or not name.startswith(body):
        return False, None
    if exact and body != name:
        return False, None
    return len(body) >= max(min_len, 1), value


def parse_options(argv: Sequence[str]) -> GpuOptions:
    o = GpuOptions()
    args = list(argv)
    i = 0
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None

        def m(name: str, n: int) -> bool:
            return _is_opt(a, name, n)[0]

        if m("properties", 1):
            o.properties = True
        elif m("extra", 3):
            o.properties = o.extra = True
        elif m("nested", 2):
            o.nested = True
        elif m("not-nested", 6) or m("no-nested", 5):
            o.nested = False
        elif m("dynamic", 3):
            o.properties = o.dynamic = True
        elif m("cron", 4):
            o.cron = True
        elif m("mixed", 3) or m("hetero", 3):
            o.mixed = True
        elif m("opencl", -1) or m("cuda", -1) or m("hip", -1) or m("verbose", 4) \
                or m("diagnostic", 4) or m("nvcuda", -1) or m("cudart", 6) or m("dirty-environment", 4):
            pass  # detection-library choices and diagnostics: condorpy has one detection path
        elif m("repeat", -1) or m("divide", -1):
            if nxt is None or nxt.startswith("-"):
                o.repeat = o.repeat or 2
            else:
                o.repeat = int(nxt)
                i += 1
            o.divide = m("divide", -1)
        elif m("packed", -1):
            o.packed = True
        elif m("config", -1):
            o.config_syntax = True
        elif m("tag", 3):
            if nxt is not None:
                o.tag = nxt
                i += 1
        elif m("by-index", 4):
            o.uuid_ids = o.short_uuid = False
        elif m("uuid", 2):
            o.uuid_ids, o.short_uuid = True, False
        elif m("short-uuid", -1):
            o.uuid_ids = o.short_uuid = True
        elif m("prefix", 3):
            if nxt is not None:
                o.prefix = nxt
                i += 1
        elif m("device", 3):
            if nxt is None or nxt.startswith("-"):
                raise ValueError("-device requires an argument")
            o.devices.extend(x.strip() for x in nxt.split(",") if x.strip())
            i += 1
        elif _is_opt(a, "simulate", 3)[0]:
            o.simulate = (o.simulate or []) + parse_simulate(_is_opt(a, "simulate", 3)[1])
        else:
            raise ValueError(f"option {a} is not valid")
        i += 1
    return o


# --- rendering ------------------------------------------------------------------------------

_CORES_PER_SM = {0x10: 8, 0x11: 8, 0x12: 8, 0x13: 8, 0x20: 32, 0x21: 48, 0x30: 192, 0x32: 192,
                 0x35: 192, 0x37: 192, 0x50: 128, 0x52: 128, 0x53: 128, 0x60: 64, 0x61: 128,
                 0x62: 128, 0x70: 64, 0x72: 64, 0x75: 64, 0x80: 64, 0x86: 128, 0x90: 128,
                 0xA0: 128, 0xA1: 128, 0xA3: 128, 0xB0: 128, 0xC0: 128, 0xC1: 128}


def cores_per_cu(major: int, minor: int) -> int:
    # unknown (newer) architectures count like the newest known one
    return _CORES_PER_SM.get((major << 4) + minor, 128)


def gpu_id(uuid: str, short: bool) -> str:
    if uuid.startswith("MIG-"):
        return uuid
    gid = uuid if uuid.startswith("GPU-") else "GPU-" + uuid
    return gid[:12] if short else gid


def _props(d: GpuDevice, extra: bool, dynamic: bool) -> dict[str, str]:
    """Property values as ClassAd literal text, formatted as condor_gpu_discovery does."""
    p: dict[str, str] = {}
    if d.uuid:
        p["DeviceUuid"] = f'"{d.uuid}"'
    if d.name:
        p["DeviceName"] = f'"{d.name}"'
    if d.pci_id:
        p["DevicePciBusId"] = f'"{d.pci_id}"'
    if d.capability:
        p["Capability"] = f"{d.capability[0]}.{d.capability[1]}"
    if d.ecc is not None:
        p["ECCEnabled"] = "true" if d.ecc else "false"
    if d.memory_bytes is not None:
        p["GlobalMemoryMb"] = f"{d.memory_bytes / (1024 * 1024):.0f}"
    if d.driver_version is not None:
        p["DriverVersion"] = f"{d.driver_version // 1000}.{d.driver_version % 100}"
        p["MaxSupportedVersion"] = str(d.driver_version)
    if extra:
        if d.clock_khz is not None:
            p["ClockMhz"] = f"{d.clock_khz * 1e-3:.2f}"
        if d.compute_units:
            p["ComputeUnits"] = str(d.compute_units)
        if d.capability:
            p["CoresPerCU"] = str(cores_per_cu(*d.capability))
    if dynamic and d.dynamic is not None:
        for key, value in zip(("FanSpeedPct", "PowerUsage_mw", "DieTempC", "EccErrorsSingleBit",
                               "EccErrorsDoubleBit"), d.dynamic):
            if value is not None:
                p[key] = str(value)
    return p


class _Whitelist:
    """-device / CUDA_VISIBLE_DEVICES / GPU_DEVICE_ORDINAL entries as condor_gpu_discovery
    reads them: ``[letters]digits`` is a machine-level index, anything else an id prefix."""

    def __init__(self, items: Sequence[str]) -> None:
        self.by_index: set[int] = set()
        self.by_prefix: set[str] = set()
        self.by_uuid: set[str] = set()
        for item in items:
            m = re.fullmatch(r"[A-Za-z]*(\d+)", item)
            if m:
                self.by_index.add(int(m.group(1)))
            else:
                self.by_prefix.add(item)

    def empty(self) -> bool:
        return not (self.by_index or self.by_prefix or self.by_uuid)

    def index_listed(self, index: int) -> bool:
        return not self.by_index or index in self.by_index

    def ignores(self, index: int) -> bool:
        """Only indexes are listed, and this is not one of them."""
        return not self.by_prefix and not self.by_uuid and not self.index_listed(index)

    def allows(self, gpu_id: str, index: int) -> bool:
        match = True
        for pre in self.by_prefix:
            if gpu_id.startswith(pre):
                return True
            match = False
        for uuid in self.by_uuid:
            if (gpu_id[4:] if gpu_id.startswith("GPU-") else gpu_id) == uuid:
                return True
            match = False
        return match if not self.by_index else index in self.by_index


def _device_props(opts: GpuOptions, devices: Sequence[GpuDevice],
                  migs: dict[str, list[GpuDevice]], pre: str) \
        -> tuple[list[str], dict[str, dict[str, str]]]:
    """The detected ids in condor_gpu_discovery's order (the CUDA devices by index, then
    every MIG instance by uuid) and, with -properties, each one's properties."""
    wl = _Whitelist(opts.devices)
    ids: list[str] = []
    props: dict[str, dict[str, str]] = {}
    for index, d in enumerate(devices):
        if wl.ignores(index):
            continue
        if d.uuid and not wl.allows(gpu_id(d.uuid, False), index):
            continue
        if d.uuid in migs:
            # a MIG parent cannot run jobs itself; an index that names it names the
            # instances whose ids carry its uuid (the MIG-GPU-<uuid>/... style)
            if not wl.empty() and wl.index_listed(index):
                wl.by_prefix.add("MIG-" + gpu_id(d.uuid, False))
                wl.by_uuid.add(d.uuid)
            continue
        gid = gpu_id(d.uuid, opts.short_uuid) if (opts.uuid_ids and d.uuid) else f"{pre}{index}"
        ids.append(gid)
        if opts.properties:
            props[gid] = _props(d, opts.extra, opts.dynamic)
    for child in sorted((c for cs in migs.values() for c in cs), key=lambda c: c.uuid):
        if not wl.allows(child.uuid, -1):
            continue
        gid = gpu_id(child.uuid, opts.short_uuid)
        ids.append(gid)
        if opts.properties:
            props[gid] = _props(child, opts.extra, opts.dynamic)
    return ids, props


_DYNAMIC = ("FanSpeedPct", "PowerUsage_mw", "DieTempC", "EccErrorsSingleBit",
            "EccErrorsDoubleBit")


def _common(opts: GpuOptions, dev_props: dict[str, dict[str, str]]) -> dict[str, str]:
    """The properties every device shares (the first device by id, compared with the
    rest); dynamic ones never count, and with -divide neither does GlobalMemoryMb (as
    25.x has it: 23.9 left the undivided size in Common)."""
    if not opts.properties or opts.mixed or not dev_props:
        return {}
    ordered = [dev_props[k] for k in sorted(dev_props)]
    return {key: val for key, val in ordered[0].items()
            if key not in _DYNAMIC and all(p.get(key) == val for p in ordered[1:])
            and not (opts.repeat and opts.divide and key == "GlobalMemoryMb")}


def render(opts: GpuOptions, devices: Sequence[GpuDevice], migs: dict[str, list[GpuDevice]],
           prefix: str = "CUDA") -> str:
    """The text condor_gpu_discovery prints for these devices and options."""
    pre = opts.prefix or prefix
    if not devices:
        empty: list[str] = [] if opts.cron else [f"Detected{opts.tag}=0"]
        if opts.config_syntax:
            empty.append(f"NUM_DETECTED_{opts.tag}=0")
        return "".join(line + "\n" for line in empty)
    ids, dev_props = _device_props(opts, devices, migs, pre)
    common = _common(opts, dev_props)

    detected = ", ".join(ids)
    if opts.repeat:
        if opts.packed:
            detected = ", ".join(g for g in ids for _ in range(opts.repeat))
        else:
            detected = ", ".join([detected] * opts.repeat) if ids else ""
        if opts.divide:
            for p in dev_props.values():
                if "GlobalMemoryMb" in p:
                    mem = int(p["GlobalMemoryMb"])
                    p["GlobalMemoryMb"] = str(mem // opts.repeat)
                    if mem:
                        p["DeviceMemoryMb"] = str(mem)

    lines: list[str] = []
    if not opts.cron:
        lines.append(f"Detected{opts.tag}={detected}" if opts.config_syntax
                     else f'Detected{opts.tag}="{detected}"')
    if opts.config_syntax:
        lines.append(f"NUM_DETECTED_{opts.tag}={len(ids)}")
    if opts.properties:
        if common:
            if opts.nested:
                lines.append("Common=[ " + "".join(f"{k}={v}; " for k, v in sorted(common.items())) + "]")
            else:
                lines.extend(f"{pre}{k}={v}" for k, v in sorted(common.items()))
        for gid in sorted(dev_props):
            if not dev_props[gid]:
                continue
            own = {k: v for k, v in sorted(dev_props[gid].items()) if k not in common}
            attr = gid.replace("-", "_").replace("/", "_")
            if opts.nested:
                lines.append(f'{attr}=[ id="{gid}"; ' + "".join(f"{k}={v}; " for k, v in own.items()) + "]")
            else:
                lines.extend(f"{attr}{k}={v}" for k, v in own.items())
    return "".join(line + "\n" for line in lines)


def _driver_devices(opts: GpuOptions, roots: HostRoots) \
        -> tuple[list[GpuDevice], dict[str, list[GpuDevice]]] | None:
    """HTCondor's order of sources: the devices and their basic properties from CUDA,
    MIG instances from NVML; NVML alone where CUDA says nothing."""
    from condorpy.machine.gpu_cuda import cuda_devices

    nvml = _nvml_devices()
    # no NVIDIA driver, no CUDA: spare every start-up a child process
    if not (roots.dev / "nvidiactl").exists():
        return nvml
    cuda = cuda_devices(roots.environ(), dynamic=opts.dynamic, hidden=VISIBILITY_VARS,
                        cuda_library=roots.cuda_library, nvml_library=roots.nvml_library)
    if cuda is None:
        return nvml
    return cuda, nvml[1] if nvml is not None else {}


def discover(argv: Sequence[str], roots: HostRoots) -> str:
    """Run the built-in condor_gpu_discovery with these arguments; returns its output text."""
    opts = parse_options(argv)
    # the daemon's own visibility list limits what it reports, by machine-level index or id
    env = roots.environ()
    for var in VISIBILITY_VARS[:2]:
        opts.devices.extend(x.strip() for x in env.get(var, "").split(",") if x.strip())
    if opts.simulate is not None:
        devices, migs = simulated_devices(opts.simulate)
    else:
        found = _driver_devices(opts, roots) if roots.use_nvml else None
        if found is None:
            smi = nvidia_smi_devices(roots)
            found = (smi, {}) if smi else ([], {})
        devices, migs = found
    return render(opts, devices, migs)
