"""condorpy's submit of docker and container universe jobs against condor_submit
23.9.6's -dry-run (in the reference pool's chroot) on the same files: the container
attributes, Cmd, TransferExecutable, TransferInput and Requirements agree, and the same
descriptions are refused.

Differences that are a matter of version are named, not hidden: before 24.0 an
absolute executable of a container job was never transferred (condorpy follows 25.x
unless SUBMIT_CONTAINER_NEVER_XFER_ABSOLUTE_CMD is set, which these comparisons set);
25.x adds ContainerImageFullPath, docker_send_credentials and container_is_common
(23.9 calls the last two unused); the disk clause's version guard is as in
test_submit_dryrun.py.
"""

from __future__ import annotations

import re
import shutil
from typing import Any

import pytest

from condorpy.errors import SubmitError
from condorpy.queue.submit import ContainerOptions, parse_submit, read_description
from condorpy.queue.submit_checks import check_executables, unused_lines
from tests.pool.refpool import RefPool
from tests.pool.test_submit_dryrun import GUARD, ChrootFS, _canon, _dry_run, _value
from tests.pool.test_submit_dryrun import pool as _dryrun_pool

pytestmark = pytest.mark.pool

pool = _dryrun_pool       # the same chroot overlay as the other dry-run comparisons

MATTERS = ("JobUniverse", "Cmd", "TransferExecutable", "TransferInput", "Requirements",
           "WantDocker", "WantContainer", "WantDockerImage", "WantSIF", "WantSandboxImage",
           "DockerImage", "ContainerImage", "ContainerImageSource", "DockerNetworkType",
           "DockerPullPolicy", "DockerOverrideEntrypoint", "ContainerTargetDir",
           "TransferContainer", "ContainerServiceNames", "web_ContainerPort",
           "db_ContainerPort", "Arguments", "ShouldTransferFiles")
# 23.9's rule for an absolute executable, so that Cmd and TransferExecutable compare
AS_23 = ContainerOptions(never_transfer_absolute_cmd=True)

CASES = {
    "docker_minimal": "universe = docker\ndocker_image = debian:12\nexecutable = /bin/true\n"
                      "queue\n",
    "docker_no_executable": "universe = docker\ndocker_image = debian:12\nqueue\n",
    "docker_relative_exe": "universe = docker\ndocker_image = debian:12\n"
                           "executable = run.sh\narguments = a b\nqueue\n",
    "docker_exe_in_image": "universe = docker\ndocker_image = debian:12\n"
                           "executable = bin/app\ntransfer_executable = false\nqueue\n",
    "docker_commands": "universe = docker\ndocker_image = \"debian:12\"\n"
                       "docker_network_type = host\ndocker_pull_policy = always\n"
                       "docker_override_entrypoint = true\ncontainer_target_dir = \"/w\"\n"
                       "queue\n",
    "docker_network_other": "universe = docker\ndocker_image = debian:12\n"
                            "docker_network_type = mynet\nqueue\n",
    "docker_services": "universe = docker\ndocker_image = debian:12\n"
                       "container_service_names = web, db\nweb_container_port = 80\n"
                       "db_container_port = 5432\nqueue\n",
    "docker_user_requirements": "universe = Docker\ndocker_image = d\n"
                                "requirements = TARGET.Arch == \"aarch64\"\nqueue\n",
    "container_docker_url": "universe = container\ncontainer_image = docker://debian:12\n"
                            "executable = /bin/true\ncontainer_target_dir = /work\nqueue\n",
    "container_sif": "universe = container\ncontainer_image = img.sif\n"
                     "transfer_input_files = in.txt\nqueue\n",
    "container_dir": "universe = container\ncontainer_image = imgdir\nqueue\n",
    "container_dir_slash_in_place": "universe = container\ncontainer_image = imgdir/\n"
                                    "transfer_container = false\nqueue\n",
    "container_image_file": "universe = container\ncontainer_image = img.tar\nqueue\n",
    "container_docker_image": "universe = container\ndocker_image = debian:12\nqueue\n",
    "vanilla_with_docker_image": "docker_image = debian:12\nexecutable = /bin/true\nqueue\n",
    "vanilla_with_container_image": "container_image = img.sif\nexecutable = /bin/true\n"
                                    "queue\n",
    "container_in_place_no_transfer": "universe = container\ncontainer_image = img.sif\n"
                                      "should_transfer_files = NO\n"
                                      "transfer_container = false\nqueue\n",
}
REFUSED = {
    "docker_without_image": "universe = docker\nexecutable = /bin/true\nqueue\n",
    "docker_empty_image": "universe = docker\ndocker_image =   \nqueue\n",
    "docker_with_container_image": "universe = docker\ndocker_image = d\n"
                                   "container_image = img.sif\nqueue\n",
    "both_images": "universe = container\ndocker_image = d\ncontainer_image = img.sif\n"
                   "queue\n",
    "container_without_image": "universe = container\nqueue\n",
    "library_image": "universe = container\ncontainer_image = library://x/y\nqueue\n",
    "service_without_port": "universe = docker\ndocker_image = d\n"
                            "container_service_names = web\nqueue\n",
    "service_bad_port": "universe = docker\ndocker_image = d\n"
                        "container_service_names = web\nweb_container_port = 70000\nqueue\n",
    "entrypoint_not_bool": "universe = docker\ndocker_image = d\n"
                           "docker_override_entrypoint = maybe\nqueue\n",
    "image_without_transfer": "universe = container\ncontainer_image = img.sif\n"
                              "should_transfer_files = NO\nqueue\n",
    "missing_program_sent": "universe = docker\ndocker_image = d\nexecutable = nothere.sh\n"
                            "queue\n",
}


def _prepare(pool: RefPool, case: str) -> str:
    inside = f"/tmp/condorpy-container-dryrun/{case}"
    where = pool.root / inside.lstrip("/")
    shutil.rmtree(where, ignore_errors=True)
    (where / "imgdir").mkdir(parents=True)
    for name in ("img.sif", "img.tar", "in.txt"):
        (where / name).write_text("x")
    (where / "run.sh").write_text("#!/bin/sh\n")
    (where / "run.sh").chmod(0o755)
    return inside


def _ours(pool: RefPool, inside: str, text: str) -> list[Any]:
    class ChrootPrograms:
        def kind(self, path: str) -> str:
            full = pool.root / inside.lstrip("/") / path if not path.startswith("/") \
                else pool.root / path.lstrip("/")
            return "ok" if full.exists() else "missing"

    ads = parse_submit(text, "job.sub", cluster_id=1, owner="root", submit_dir=inside,
                       qdate=0, env={}, fs=ChrootFS(pool.root), container=AS_23)
    check_executables(read_description(text, "job.sub"), ads, ChrootPrograms())
    return ads


@pytest.mark.parametrize("case", sorted(CASES))
def test_container_job_ads_agree_with_condor_submit(pool: RefPool, case: str) -> None:
    inside = _prepare(pool, case)
    theirs = _dry_run(pool, inside, CASES[case])
    assert theirs, f"{case}: condor_submit -dry-run queued nothing"
    ours = _ours(pool, inside, CASES[case])
    assert len(ours) == len(theirs)
    for mine, their in zip(ours, theirs):
        for name in MATTERS:
            their_text = their.get(name)
            got_text = _value(mine, name)
            if name == "Requirements" and got_text is not None:
                got_text = got_text.replace(GUARD, "(TARGET.Disk >= RequestDisk)")
            if name == "TransferExecutable":
                # HTCondor writes it only when false; absent is true
                want, got = their_text != "false", got_text != "false"
            else:
                want, got = _canon(name, their_text), _canon(name, got_text)
            assert got == want, f"{case}: {name}: condorpy {got_text!r}, " \
                                f"condor_submit {their_text!r}"


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_the_same_container_descriptions_are_refused(pool: RefPool, case: str) -> None:
    inside = _prepare(pool, case)
    (pool.root / inside.lstrip("/") / "job.sub").write_text(REFUSED[case])
    res = pool.condor("condor_submit", "-dry-run", "-", "job.sub", cwd=inside,
                            check=False)
    assert res.returncode != 0 and "ERROR" in res.stderr, res.stderr
    with pytest.raises(SubmitError) as info:
        _ours(pool, inside, REFUSED[case])
    assert info.value.file == "job.sub" and info.value.line is not None


ALL_COMMANDS = ("universe = docker\ndocker_image = d\ndocker_pull_policy = always\n"
                "docker_network_type = host\ndocker_override_entrypoint = false\n"
                "docker_send_credentials = false\ncontainer_target_dir = /w\n"
                "transfer_container = false\ncontainer_is_common = false\n"
                "container_service_names = web\nweb_container_port = 80\nqueue\n")
# submit commands 25.x added: 23.9's condor_submit calls them unused
SINCE_24 = ["container_is_common", "docker_send_credentials"]


def test_container_commands_are_not_typos_to_either(pool: RefPool) -> None:
    inside = _prepare(pool, "all_commands")
    (pool.root / inside.lstrip("/") / "job.sub").write_text(ALL_COMMANDS)
    res = pool.condor("condor_submit", "-dry-run", "-", "job.sub", cwd=inside)
    theirs = sorted(re.findall(r"the line '(\w+) = [^']*' was unused", res.stderr))
    assert theirs == SINCE_24, res.stderr
    assert unused_lines(read_description(ALL_COMMANDS, "job.sub")) == []
