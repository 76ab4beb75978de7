from pathlib import Path

import pytest

from condorpy.machine import InventoryError
from condorpy.machine.resources import custom_resources
from tests.machine.fakehost import OpaqueConfig, knobs, roots, write

NO_GPUS = {"STARTD_DETECT_GPUS": "false"}


def _script(tmp: Path, body: str, name: str = "inv.sh") -> Path:
    p = write(tmp / name, "#!/bin/sh\n" + body)
    p.chmod(0o755)
    return p


def test_counts_and_id_lists(tmp_path: Path) -> None:
    cfg = knobs({**NO_GPUS, "MACHINE_RESOURCE_Cogs": "16", "MACHINE_RESOURCE_actuator": "a1, a2 a3",
                      "OFFLINE_MACHINE_RESOURCE_actuator": "a2"})
    res = custom_resources(cfg, roots(tmp_path))
    assert res["Cogs"].count == 16 and res["Cogs"].ids == ()
    assert res["actuator"].ids == ("a1", "a3") and res["actuator"].count == 2


def test_machine_resource_names_filters(tmp_path: Path) -> None:
    cfg = knobs({**NO_GPUS, "MACHINE_RESOURCE_Cogs": "16", "MACHINE_RESOURCE_actuator": "8",
                      "MACHINE_RESOURCE_NAMES": "Cogs"})
    assert list(custom_resources(cfg, roots(tmp_path))) == ["Cogs"]


def test_reserved_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InventoryError, match="MACHINE_RESOURCE_Memory"):
        custom_resources(knobs({**NO_GPUS, "MACHINE_RESOURCE_Memory": "4"}), roots(tmp_path))


def test_inventory_command_with_properties_and_offline(tmp_path: Path) -> None:
    script = _script(tmp_path, """cat <<'AD'
# a comment line
DetectedFPGAs="fpga0, fpga1, fpga2"
OfflineFPGAs="fpga2"
Common=[ Vendor="Xilinx"; ]
fpga1=[ id="fpga1"; Lanes=8; ]
FPGADriver="2.1"
AD
""")
    cfg = knobs({**NO_GPUS, "MACHINE_RESOURCE_INVENTORY_FPGAs": f"{script} --verbose"})
    r = custom_resources(cfg, roots(tmp_path))["FPGAs"]
    assert r.ids == ("fpga0", "fpga1") and r.count == 2
    assert r.properties["fpga1"] == {"Vendor": "Xilinx", "Lanes": 8}
    assert r.properties["fpga0"] == {"Vendor": "Xilinx"}
    # what is left of the inventory ad goes to the machine ad, Detected<name> included
    assert r.extra_attrs == {"DetectedFPGAs": "fpga0, fpga1, fpga2", "OfflineFPGAs": "fpga2",
                             "FPGADriver": "2.1"}


@pytest.mark.parametrize("body,match", [
    ("echo 'DetectedFoo = ['\n", "line 1"),
    ("echo 'Nothing=1'\n", "no DetectedFoo"),
    ("echo oops >&2; exit 3\n", "status 3: oops"),
])
def test_bad_inventory_output_names_the_knob(tmp_path: Path, body: str, match: str) -> None:
    cfg = knobs({**NO_GPUS, "MACHINE_RESOURCE_INVENTORY_Foo": str(_script(tmp_path, body))})
    with pytest.raises(InventoryError, match="MACHINE_RESOURCE_INVENTORY_Foo") as e:
        custom_resources(cfg, roots(tmp_path))
    assert match in str(e.value)


def test_missing_and_slow_commands(tmp_path: Path) -> None:
    cfg = knobs({**NO_GPUS, "MACHINE_RESOURCE_INVENTORY_Foo": str(tmp_path / "nope")})
    with pytest.raises(InventoryError, match="command not found"):
        custom_resources(cfg, roots(tmp_path))
    slow = _script(tmp_path, "sleep 5\n", "slow.sh")
    cfg = knobs({**NO_GPUS, "MACHINE_RESOURCE_INVENTORY_Foo": str(slow)})
    with pytest.raises(InventoryError, match="did not finish within 0.2 seconds"):
        custom_resources(cfg, roots(tmp_path), timeout=0.2)


def test_no_shell_is_involved(tmp_path: Path) -> None:
    script = _script(tmp_path, 'echo "DetectedFoo=\\"$1\\""\n')
    cfg = knobs({**NO_GPUS, "MACHINE_RESOURCE_INVENTORY_Foo": f"{script} 'x;y' $HOME"})
    r = custom_resources(cfg, roots(tmp_path))["Foo"]
    assert r.ids == ("x;y",)


def test_gpus_feature_uses_builtin_discovery(tmp_path: Path) -> None:
    # what `use FEATURE : GPUs` with GPU_DISCOVERY_EXTRA = -simulate:2,1,4,1 expands to
    cfg = knobs({"MACHINE_RESOURCE_INVENTORY_GPUs":
                      "/usr/libexec/condor_gpu_discovery -properties -simulate:2,1,4,1",
                      "OFFLINE_MACHINE_RESOURCE_GPUs": "GPU-a0223334"})
    g = custom_resources(cfg, roots(tmp_path))["GPUs"]
    assert g.ids == ("GPU-b1223334",) and g.count == 1
    assert g.properties["GPU-b1223334"]["Capability"] == 8.0
    assert g.properties["GPU-a0223334"]["DeviceName"] == "Tesla V100-PCIE-16GB"
    assert g.extra_attrs == {"DetectedGPUs": "GPU-a0223334, GPU-b1223334",
                             "OfflineGPUs": "GPU-a0223334"}


def test_default_gpu_detection(tmp_path: Path) -> None:
    # no GPU knobs: STARTD_DETECT_GPUS runs discovery; on this fake host it finds none
    g = custom_resources(knobs({}), roots(tmp_path))["GPUs"]
    assert (g.count, g.ids) == (0, ())
    sim = custom_resources(knobs({"GPU_DISCOVERY_EXTRA": "-simulate:0,2"}), roots(tmp_path))
    assert sim["GPUs"].ids == ("GPU-a0223334", "GPU-b1223334")
    assert custom_resources(knobs(NO_GPUS), roots(tmp_path)) == {}
    # HTCondor's boolean spellings switch discovery off, or are refused as "on"
    assert custom_resources(knobs({"STARTD_DETECT_GPUS": "0"}), roots(tmp_path)) == {}
    for on in ("true", "1", "TRUE"):
        with pytest.raises(InventoryError, match="STARTD_DETECT_GPUS"):
            custom_resources(knobs({"STARTD_DETECT_GPUS": on}), roots(tmp_path))
    with pytest.raises(InventoryError, match="STARTD_DETECT_GPUS.*not valid"):
        custom_resources(knobs({"STARTD_DETECT_GPUS": "-frobnicate"}), roots(tmp_path))


def test_resources_found_without_a_name_listing(tmp_path: Path) -> None:
    cfg = OpaqueConfig({"MACHINE_RESOURCE_NAMES": "Cogs", "MACHINE_RESOURCE_Cogs": "4",
                         "MACHINE_RESOURCE_INVENTORY_GPUs": "condor_gpu_discovery -simulate:0,1"})
    res = custom_resources(cfg, roots(tmp_path))
    assert res["Cogs"].count == 4
    # MACHINE_RESOURCE_NAMES leaves GPUs out, as in HTCondor
    assert "GPUs" not in res


def test_inventory_values_may_be_constant_expressions(tmp_path: Path) -> None:
    script = _script(tmp_path, "echo 'DetectedFoo = 2 * 3'; echo 'FooMemory = 4 * 1024'\n")
    r = custom_resources(knobs({**NO_GPUS, "MACHINE_RESOURCE_INVENTORY_Foo": str(script)}),
                         roots(tmp_path))["Foo"]
    assert (r.count, r.extra_attrs) == (6, {"DetectedFoo": 6, "FooMemory": 4096})
    bad = _script(tmp_path, "echo 'DetectedFoo = Other + 1'\n", "bad.sh")
    with pytest.raises(InventoryError, match="MACHINE_RESOURCE_INVENTORY_Foo, line 1"):
        custom_resources(knobs({**NO_GPUS, "MACHINE_RESOURCE_INVENTORY_Foo": str(bad)}), roots(tmp_path))
