"""STARTER_HIDE_GPU_DEVICES's decision and program, without a kernel: which nodes a
job is denied for its AssignedGPUs, and the program's instructions."""

from __future__ import annotations

import struct

from condorpy.config import Config
from condorpy.machine.containment import containment_facts
from condorpy.machine.roots import HostRoots
from condorpy.starter.devices import GpuNode, denied_devices, device_program, \
    parse_information
from condorpy.starter.knobs import settings_from_knobs

INFO = """Model: \t\t NVIDIA A100-SXM4-40GB
IRQ:   \t\t 150
GPU UUID: \t GPU-a0223344-4545-5667-8899-aabbccddeeff
Video BIOS: \t 92.00.25.00.08
Bus Type: \t PCIe
Device Minor: \t 3
"""

NODES = [GpuNode("GPU-b1223344-0000-0000-0000-000000000000", 0, "0000:81:00.0"),
         GpuNode("GPU-a0223344-4545-5667-8899-aabbccddeeff", 3, "0000:01:00.0")]


def test_the_information_file_gives_uuid_and_minor() -> None:
    node = parse_information(INFO, "0000:01:00.0")
    assert node == GpuNode("GPU-a0223344-4545-5667-8899-aabbccddeeff", 3, "0000:01:00.0")
    assert parse_information("Model: x\n", "b") is None


def test_a_short_gpu_id_keeps_its_own_node_and_denies_the_others() -> None:
    assert denied_devices(["GPU-a0223344"], NODES).denied == ((195, 0),)
    assert denied_devices(["GPU-b1223344", "GPU-a0223344"], NODES).denied == ()


def test_no_gpu_assigned_denies_every_gpu() -> None:
    assert denied_devices([], NODES, major=240).denied == ((240, 0), (240, 3))


def test_cuda_ids_follow_pci_order() -> None:
    # CUDA0 is the lowest bus id, whatever its minor
    assert denied_devices(["CUDA0"], NODES).denied == ((195, 0),)
    assert denied_devices(["CUDA1"], NODES).denied == ((195, 3),)


def test_a_mig_instance_opens_through_its_parent() -> None:
    mig = "MIG-GPU-b1223344-0000-0000-0000-000000000000/1/0"
    assert denied_devices([mig], NODES).denied == ((195, 3),)


def test_an_unknown_id_denies_nothing() -> None:
    decision = denied_devices(["GPU-ffff", "CUDA7"], NODES)
    assert decision.denied == () and decision.unknown == ("GPU-ffff", "CUDA7")
    # a MIG UUID of the new form does not say which GPU it lives on
    assert denied_devices(["MIG-1234abcd-0000"], NODES).unknown == ("MIG-1234abcd-0000",)


def decode(program: bytes) -> list[tuple[int, int, int, int, int]]:
    out = []
    for i in range(0, len(program), 8):
        code, regs, off, imm = struct.unpack_from("<BBhi", program, i)
        out.append((code, regs & 0xF, regs >> 4, off, imm))
    return out


def run(program: bytes, kind: int, major: int, minor: int) -> int:
    """A small interpreter of the few instructions the program uses."""
    ctx = [kind | (3 << 16), major, minor]
    reg = [0] * 11
    insns = decode(program)
    pc = 0
    while True:
        code, dst, src, off, imm = insns[pc]
        pc += 1
        if code == 0x61:
            reg[dst] = ctx[off // 4]
        elif code == 0x54:
            reg[dst] &= imm
        elif code == 0x56:
            if reg[dst] != imm:
                pc += off
        elif code == 0xB7:
            reg[dst] = imm
        elif code == 0x95:
            return reg[0]
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


def test_the_program_refuses_only_the_denied_character_devices() -> None:
    prog = device_program([(195, 0), (195, 2)])
    assert len(prog) % 8 == 0
    assert run(prog, 2, 195, 0) == 0 and run(prog, 2, 195, 2) == 0
    assert run(prog, 2, 195, 1) == 1          # the job's own GPU
    assert run(prog, 2, 195, 255) == 1        # nvidiactl
    assert run(prog, 2, 1, 3) == 1            # /dev/null
    assert run(prog, 1, 195, 0) == 1          # a block device with the same numbers
    assert run(device_program([]), 2, 195, 0) == 1


def test_the_knobs_reach_the_settings_and_the_slot_ad() -> None:
    plain = settings_from_knobs(Config.from_mapping({}), execute="/x")
    assert plain.hide_gpu_devices and not plain.no_job_networking
    cfg = Config.from_mapping({"NO_JOB_NETWORKING": "true",
                               "STARTER_HIDE_GPU_DEVICES": "false"})
    s = settings_from_knobs(cfg, execute="/x")
    assert s.no_job_networking and not s.hide_gpu_devices
    assert containment_facts(cfg, HostRoots(), euid=0)["HasJobNetworking"] is False
    assert "HasJobNetworking" not in containment_facts(Config.from_mapping({}), HostRoots(),
                                                       euid=0)
