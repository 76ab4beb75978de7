"""config-val publishes the machine's computed knobs exactly as HTCondor does on this host."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

KNOBS = ["OPSYS", "OPSYSANDVER", "OPSYSMAJORVER", "OPSYSNAME", "OPSYSVER", "OPSYSLONGNAME",
         "ARCH", "UNAME_ARCH", "FULL_HOSTNAME", "HOSTNAME", "DETECTED_CPUS", "DETECTED_MEMORY"]


@pytest.mark.differential
def test_computed_knobs_match_htcondor(tmp_path: Path) -> None:
    conf = tmp_path / "condor_config"
    conf.write_text("# empty\n")
    env = dict(os.environ, CONDOR_CONFIG=str(conf))
    ref = json.loads(subprocess.run(
        [sys.executable, "-c",
         "import htcondor2, json, sys; "
         "print(json.dumps({k: str(htcondor2.param.get(k)) for k in sys.argv[1:]}))", *KNOBS],
        env=env, capture_output=True, text=True, check=True, timeout=120).stdout)
    ours = subprocess.run([sys.executable, "-m", "condorpy", "config-val", "-config", str(conf),
                           *KNOBS], capture_output=True, text=True, timeout=120)
    assert ours.returncode == 0, ours.stderr
    assert dict(zip(KNOBS, ours.stdout.splitlines())) == ref
