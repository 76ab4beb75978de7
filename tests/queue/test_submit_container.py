"""universe = docker and universe = container in a submit description: the job
attributes, Requirements clauses and refusals of condor_submit 25.x (facts from
HTCondor's submit_utils.cpp; tests/pool/test_submit_container_dryrun.py compares the
same descriptions with condor_submit 23.9.6's own -dry-run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from condorpy.classad import ClassAd
from condorpy.errors import SubmitError
from condorpy.queue.submit import ContainerOptions, LocalFS, parse_submit, read_description
from condorpy.queue.submit_checks import check_executables, unused_lines
from condorpy.queue.submit_container import ImageKind, image_kind


class FakeFS:
    def __init__(self, files: tuple[str, ...] = ()) -> None:
        self.files = set(files)

    def read_bytes(self, path: str) -> bytes:
        raise FileNotFoundError(path)

    def glob(self, pattern: str) -> list[str]:
        return [pattern] if pattern in self.files else []

    def is_dir(self, path: str) -> bool:
        return False


def submit(text: str, **kw: object) -> list[ClassAd]:
    args: dict[str, object] = dict(cluster_id=7, owner="alice", submit_dir="/home/alice",
                                   qdate=0, env={"HOME": "/home/alice"}, fs=FakeFS())
    args.update(kw)
    return parse_submit(text, "job.sub", **args)  # type: ignore[arg-type]


def one(text: str, **kw: object) -> ClassAd:
    (ad,) = submit(text, **kw)
    return ad


def refused(text: str, **kw: object) -> SubmitError:
    with pytest.raises(SubmitError) as info:
        submit(text, **kw)
    assert info.value.file == "job.sub" and info.value.line is not None
    return info.value


def conjuncts(ad: ClassAd) -> list[str]:
    return [c.strip() for c in str(ad.lookup("Requirements")).split(" && ")]


def test_docker_universe_is_a_vanilla_job_that_wants_docker() -> None:
    ad = one("universe = docker\ndocker_image = debian:12\nexecutable = /bin/cat\n"
             "arguments = in\nqueue\n")
    assert ad["JobUniverse"] == 5 and ad["WantDocker"] is True
    assert ad["DockerImage"] == "debian:12"
    assert "WantContainer" not in ad and "ContainerImage" not in ad
    req = conjuncts(ad)
    assert req[:2] == ['(TARGET.Arch == "X86_64")', "TARGET.HasDocker"]
    # the image brings its own operating system: no OpSys clause
    assert not any("OpSys" in c for c in req)
    # 25.x sends an absolute executable with the job (24.0 changed this)
    assert ad["Cmd"] == "/bin/cat" and "TransferExecutable" not in ad


def test_an_absolute_executable_stays_in_the_image_with_the_23_knob() -> None:
    ad = one("universe = docker\ndocker_image = d\nexecutable = /bin/cat\nqueue\n",
             container=ContainerOptions(never_transfer_absolute_cmd=True))
    assert ad["Cmd"] == "/bin/cat" and ad["TransferExecutable"] is False


def test_a_container_job_may_leave_its_program_to_the_image() -> None:
    ad = one("universe = docker\ndocker_image = d\nqueue\n")
    assert ad["Cmd"] == "" and ad["TransferExecutable"] is False
    ad = one("universe = container\ncontainer_image = docker://d\nqueue\n")
    assert ad["Cmd"] == "" and ad["TransferExecutable"] is False


def test_a_program_not_transferred_keeps_its_path_as_written() -> None:
    ad = one("universe = docker\ndocker_image = d\nexecutable = bin/run\n"
             "transfer_executable = false\nqueue\n")
    assert ad["Cmd"] == "bin/run" and ad["TransferExecutable"] is False
    ad = one("universe = docker\ndocker_image = d\nexecutable = bin/run\nqueue\n")
    assert ad["Cmd"] == "/home/alice/bin/run"


def test_docker_commands_become_attributes_as_written() -> None:
    ad = one("universe = docker\ndocker_image = \"debian:12\"\ndocker_network_type = host\n"
             "docker_pull_policy = always\ndocker_override_entrypoint = true\n"
             "container_target_dir = \"/work\"\nqueue\n")
    assert ad["DockerImage"] == "debian:12"          # quotes stripped from the image
    assert ad["DockerNetworkType"] == "host" and ad["DockerPullPolicy"] == "always"
    assert ad["DockerOverrideEntrypoint"] is True
    assert ad["ContainerTargetDir"] == "/work"
    # host, none and nat are everywhere: no clause for them
    assert not any("DockerNetworks" in c for c in conjuncts(ad))


def test_another_network_must_be_advertised_by_the_slot() -> None:
    ad = one("universe = docker\ndocker_image = d\ndocker_network_type = mynet\nqueue\n")
    assert "StringListMember(My.DockerNetworkType,TARGET.DockerNetworks)" in \
        str(ad.lookup("Requirements")).replace(", ", ",")
    slot = ClassAd.parse_new('[ HasDocker = true; Arch = "X86_64"; Disk = 10000000; Memory = 4096;'
                 ' HasFileTransfer = true; DockerNetworks = "a, mynet";'
                 ' CondorVersion = "$CondorVersion: 25.0.0 $" ]')
    assert ad.evaluate("Requirements", slot) is True
    slot["DockerNetworks"] = "a"
    assert ad.evaluate("Requirements", slot) is False


@pytest.mark.parametrize("image,kind,flag", [
    ("docker://debian:12", ImageKind.DOCKER_REPO, "WantDockerImage"),
    ("/images/app.sif", ImageKind.SIF, "WantSIF"),
    ("/images/rootfs/", ImageKind.SANDBOX, "WantSandboxImage"),
    ("/images/app.tar", ImageKind.SANDBOX, "WantSandboxImage"),
])
def test_container_image_kinds(image: str, kind: ImageKind, flag: str) -> None:
    assert image_kind(image) is kind
    ad = one(f"universe = container\ncontainer_image = {image}\nqueue\n")
    assert ad["JobUniverse"] == 5 and ad["WantContainer"] is True and ad[flag] is True
    assert conjuncts(ad)[1:3] == ["TARGET.HasContainer", f"TARGET.Has{kind.value}"]


def test_a_fetched_image_is_not_transferred() -> None:
    ad = one("universe = container\ncontainer_image = docker://debian:12\nqueue\n")
    assert ad["ContainerImage"] == "docker://debian:12"
    assert ad["ContainerImageSource"] == "docker" and "TransferInput" not in ad


def test_a_local_image_goes_with_the_input_and_is_named_by_its_base_name() -> None:
    ad = one("universe = container\ncontainer_image = /images/app.sif\n"
             "transfer_input_files = a, b\nqueue\n")
    assert ad["TransferInput"] == "a,b,/images/app.sif"
    assert ad["ContainerImage"] == "app.sif"
    assert ad["ContainerImageFullPath"] == "/images/app.sif"
    assert ad["ContainerImageSource"] == "cedar"
    ad = one("universe = container\ncontainer_image = rootfs/\nqueue\n")
    assert ad["ContainerImage"] == "rootfs" and ad["TransferInput"] == "rootfs/"


def test_an_image_left_in_place() -> None:
    ad = one("universe = container\ncontainer_image = /images/app.sif\n"
             "transfer_container = false\nqueue\n")
    assert ad["TransferContainer"] is False and ad["ContainerImageSource"] == "local"
    assert ad["ContainerImage"] == "/images/app.sif" and "TransferInput" not in ad
    ad = one("universe = container\ncontainer_image = /cvmfs/app.sif\nqueue\n",
             container=ContainerOptions(shared_fs=("/cvmfs",)))
    assert ad["ContainerImageSource"] == "local" and "TransferInput" not in ad


def test_an_image_to_send_needs_file_transfer() -> None:
    err = refused("universe = container\ncontainer_image = app.sif\n"
                  "should_transfer_files = NO\nqueue\n")
    assert err.line == 3 and "transfer_container = false" in str(err)
    ad = one("universe = container\ncontainer_image = app.sif\n"
             "should_transfer_files = NO\ntransfer_container = false\nqueue\n")
    assert "TransferInput" not in ad and ad["ContainerImageSource"] == "local"


def test_an_image_makes_a_vanilla_job_a_container_job() -> None:
    ad = one("executable = /bin/true\ndocker_image = debian:12\nqueue\n")
    assert ad["WantContainer"] is True and ad["WantDockerImage"] is True
    assert "WantDocker" not in ad
    assert conjuncts(ad)[1:3] == ["TARGET.HasContainer", "TARGET.HasDockerURL"]
    ad = one("executable = /bin/true\ncontainer_image = app.sif\nqueue\n")
    assert ad["WantContainer"] is True and ad["WantSIF"] is True


def test_a_plain_vanilla_job_is_unchanged() -> None:
    ad = one("executable = /bin/true\nqueue\n")
    assert not any(k.startswith(("Want", "Docker", "Container")) for k in ad.keys()
                   if k not in ("WantRemoteSyscalls", "WantCheckpoint"))
    assert '(TARGET.OpSys == "LINUX")' in conjuncts(ad)


def test_service_ports() -> None:
    ad = one("universe = docker\ndocker_image = d\ncontainer_service_names = web, db\n"
             "web_container_port = 80\ndb_container_port = 5432\nqueue\n")
    assert ad["ContainerServiceNames"] == "web, db"
    assert ad["web_ContainerPort"] == 80 and ad["db_ContainerPort"] == 5432


def test_user_requirements_keep_their_place_before_the_runtime_clause() -> None:
    ad = one("universe = docker\ndocker_image = d\nrequirements = TARGET.Arch == \"ARM\"\n"
             "queue\n")
    assert conjuncts(ad)[:2] == ['(TARGET.Arch == "ARM")', "TARGET.HasDocker"]


def test_plus_requirements_replace_the_clauses() -> None:
    ad = one("universe = docker\ndocker_image = d\n+Requirements = true\nqueue\n")
    assert str(ad.lookup("Requirements")) == "true" and ad["WantDocker"] is True


@pytest.mark.parametrize("text,line,words", [
    ("universe = docker\nexecutable = /bin/true\nqueue\n", 1, "require a docker_image"),
    ("universe = docker\ndocker_image =   \nqueue\n", 2, "require a docker_image"),
    ("universe = docker\ndocker_image = d\ncontainer_image = a.sif\nqueue\n", 3,
     "does not allow container_image"),
    ("universe = container\ndocker_image = d\ncontainer_image = a.sif\nqueue\n", 3,
     "both docker_image and container_image"),
    ("universe = container\nqueue\n", 1, "container_image or docker_image"),
    ("universe = container\ncontainer_image = library://x/y\nqueue\n", 2,
     "not a valid container image"),
    ("universe = docker\ndocker_image = d\ncontainer_service_names = web\nqueue\n", 3,
     "web_container_port"),
    ("universe = docker\ndocker_image = d\ncontainer_service_names = web\n"
     "web_container_port = 70000\nqueue\n", 4, "0 to 65535"),
    ("universe = docker\ndocker_image = d\ndocker_override_entrypoint = maybe\nqueue\n",
     3, "must be a boolean"),
    ("universe = docker\ndocker_image = d\ndocker_send_credentials = true\nqueue\n", 3,
     "credentials file /home/alice/.docker/config.json"),
])
def test_refusals_name_the_line(text: str, line: int, words: str) -> None:
    err = refused(text)
    assert err.line == line and words in str(err)


def test_docker_credentials_are_checked_on_the_submit_side() -> None:
    ad = one("universe = docker\ndocker_image = d\ndocker_send_credentials = true\nqueue\n",
             fs=FakeFS(("/home/alice/.docker/config.json",)))
    assert ad["DockerSendCredentials"] is True
    err = refused("universe = docker\ndocker_image = d\ndocker_send_credentials = true\n"
                  "queue\n", env={})
    assert "HOME" in str(err)


def test_other_universes_are_still_refused() -> None:
    assert "not supported" in str(refused("universe = vm\nexecutable = x\nqueue\n"))


def test_container_commands_are_not_typos() -> None:
    text = ("universe = docker\ndocker_image = d\ndocker_pull_policy = always\n"
            "docker_send_credentials = false\ntransfer_container = false\n"
            "container_service_names = web\nweb_container_port = 80\n"
            "container_is_common = false\nqueue\n")
    assert unused_lines(read_description(text, "job.sub")) == []


def test_a_program_inside_the_image_is_not_looked_for_here(tmp_path: Path) -> None:
    for text in ("universe = docker\ndocker_image = d\nqueue\n",
                 "universe = docker\ndocker_image = d\nexecutable = /opt/app/run\n"
                 "transfer_executable = false\nqueue\n"):
        desc = read_description(text, "job.sub")
        ads = parse_submit(text, "job.sub", cluster_id=1, owner="a",
                           submit_dir=str(tmp_path), qdate=0, env={})
        check_executables(desc, ads, LocalFS())
    # sent with the job, it must exist here
    text = "universe = docker\ndocker_image = d\nexecutable = /opt/app/run\nqueue\n"
    ads = parse_submit(text, "job.sub", cluster_id=1, owner="a", submit_dir=str(tmp_path),
                       qdate=0, env={})
    with pytest.raises(SubmitError, match="does not exist"):
        check_executables(read_description(text, "job.sub"), ads, LocalFS())


def test_options_from_the_configuration() -> None:
    from condorpy.config import Config
    assert ContainerOptions.from_config(Config.from_mapping({})) == ContainerOptions()
    assert ContainerOptions().shared_fs == ("/cvmfs",)
    got = ContainerOptions.from_config(Config.from_mapping({
        "SUBMIT_CONTAINER_NEVER_XFER_ABSOLUTE_CMD": "true",
        "CONTAINER_SHARED_FS": "/cvmfs, /shared/images"}))
    assert got == ContainerOptions(True, ("/cvmfs", "/shared/images"))
