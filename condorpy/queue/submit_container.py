"""The docker and container universes of a submit description, as job attributes.

``universe = docker`` and ``universe = container`` are not universes of their own to
HTCondor but toppings on the vanilla universe (``JobUniverse`` stays 5): the job ad
says ``WantDocker`` or ``WantContainer``, names its image, and its ``Requirements``
ask for a slot that advertises the runtime (``TARGET.HasDocker``, or
``TARGET.HasContainer`` with the kind of image the slot must take). A vanilla job that
names ``docker_image`` or ``container_image`` is a container job as well.

Pure, like :mod:`condorpy.queue.submit`, which calls it while it builds each job's ad:
the description comes in through a small builder port, the file system through a
callable that says whether a path exists. The attribute names, values and errors are
those of condor_submit 25.x; where 23.9 differs (an absolute executable in a container
job was never transferred before 24.0) the difference is an option.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from condorpy.classad import ClassAd
from condorpy.config import KnobReader
from condorpy.config.typed import boolean_value, integer_value
from condorpy.errors import SubmitError

__all__ = ["Topping", "ImageKind", "ContainerOptions", "ContainerBuilder", "image_kind",
           "set_topping", "set_images", "container_command", "set_container_keywords",
           "container_inputs", "requirement_clause", "COMMANDS", "PORT_SUFFIX"]

# The submit commands this module reads (besides ``<service>_container_port``).
COMMANDS = ("docker_image", "docker_network_type", "docker_pull_policy",
            "docker_override_entrypoint", "docker_send_credentials", "container_image",
            "container_target_dir", "transfer_container", "container_is_common",
            "container_service_names")
PORT_SUFFIX = "_container_port"

# Networks every docker runtime has: a job that names another one also asks for a
# slot that advertises it in DockerNetworks.
_BUILTIN_NETWORKS = ("host", "none", "nat")
# Image locations no container runtime of an EP can start from.
_REFUSED_PREFIXES = ("instance://", "library://", "shub://")
# Image locations the EP fetches itself: never transferred with the job.
_FETCHED_PREFIXES = ("docker://", "oras://")


class Topping(Enum):
    """What runs the job's program: the EP itself, Docker, or a container runtime."""
    NONE = "none"
    DOCKER = "docker"
    CONTAINER = "container"


class ImageKind(Enum):
    """A container image as a slot must be able to take it."""
    DOCKER_REPO = "DockerURL"       # docker://... : HasDockerURL
    SIF = "SIF"                     # a Singularity image file: HasSIF
    SANDBOX = "SandboxImage"        # a directory or an image file: HasSandboxImage


@dataclass(frozen=True)
class ContainerOptions:
    """The submit side's configuration for container jobs.

    ``never_transfer_absolute_cmd`` is SUBMIT_CONTAINER_NEVER_XFER_ABSOLUTE_CMD (before
    24.0, an absolute executable was taken to be inside the image); ``shared_fs`` is
    CONTAINER_SHARED_FS (images under these directories are read in place)."""
    never_transfer_absolute_cmd: bool = False
    shared_fs: tuple[str, ...] = ("/cvmfs",)

    @classmethod
    def from_config(cls, cfg: KnobReader) -> ContainerOptions:
        # CONTAINER_SHARED_FS is a comma-separated list, as condor_submit splits it
        shared = cfg.get("CONTAINER_SHARED_FS") or ""
        return cls(cfg.knob_bool("SUBMIT_CONTAINER_NEVER_XFER_ABSOLUTE_CMD"),
                   tuple(p.strip() for p in shared.split(",") if p.strip()))


class ContainerBuilder(Protocol):
    """What this module asks of the ad being built."""

    @property
    def ad(self) -> ClassAd: ...

    def get(self, *keys: str) -> str | None: ...

    def fail(self, message: str, *keys: str) -> SubmitError: ...


def image_kind(image: str) -> ImageKind:
    """The kind of an image named by container_image; anything that is neither a
    docker: reference nor a .sif file is taken for a directory or image file."""
    text = image.strip()
    if text.startswith("docker:"):
        return ImageKind.DOCKER_REPO
    if text.endswith(".sif"):
        return ImageKind.SIF
    return ImageKind.SANDBOX


def _value(b: ContainerBuilder, key: str) -> str | None:
    """A command's value, trimmed; unset when empty (as condor_submit reads it)."""
    got = b.get(key)
    if got is None or not got.strip():
        return None
    return got.strip()


def _unquoted(text: str) -> str:
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] == '"':
        t = t[1:-1].strip()
    return t


def set_topping(b: ContainerBuilder, universe: str) -> Topping:
    """The job's topping from its universe (vanilla, docker or container, already
    checked) and the image commands; sets WantDocker / WantContainer /
    WantDockerImage. A docker job may not name container_image; no job may name both
    images."""
    said = universe.strip().lower()
    has_container = _value(b, "container_image") is not None
    has_docker = _value(b, "docker_image") is not None
    if said == "docker":
        if has_container:
            raise b.fail("docker universe does not allow container_image (use "
                         "docker_image)", "container_image")
        b.ad["WantDocker"] = True
        return Topping.DOCKER
    if has_docker and has_container:
        raise b.fail("cannot declare both docker_image and container_image",
                     "container_image", "docker_image")
    if said != "container" and not (has_docker or has_container):
        return Topping.NONE
    if has_docker:
        b.ad["WantDockerImage"] = True
    b.ad["WantContainer"] = True
    return Topping.CONTAINER


def set_images(b: ContainerBuilder, topping: Topping) -> None:
    """DockerImage and ContainerImage (with WantDockerImage / WantSIF /
    WantSandboxImage for the latter's kind), or the error for a job without one."""
    ad = b.ad
    if topping is Topping.NONE:
        return
    docker = _value(b, "docker_image")
    if docker is not None:
        image = _unquoted(docker)
        if not image:
            raise b.fail(f"{docker!r} is not a valid docker_image", "docker_image")
        ad["DockerImage"] = image
    if topping is Topping.DOCKER:
        if "DockerImage" not in ad:
            raise b.fail("docker jobs require a docker_image", "docker_image",
                         "universe")
        return
    container = _value(b, "container_image")
    if container is not None:
        image = _unquoted(container)
        if not image or image.startswith(_REFUSED_PREFIXES):
            raise b.fail(f"{container!r} is not a valid container image (instance://, "
                         "library:// and shub:// images cannot be used)",
                         "container_image")
        ad["ContainerImage"] = image
        kind = image_kind(image)
        flag = {ImageKind.DOCKER_REPO: "WantDockerImage", ImageKind.SIF: "WantSIF",
                ImageKind.SANDBOX: "WantSandboxImage"}[kind]
        ad[flag] = True
    elif "DockerImage" not in ad:
        raise b.fail("container jobs require a container_image or docker_image",
                     "container_image", "universe")


def container_command(b: ContainerBuilder, topping: Topping, iwd: str,
                      options: ContainerOptions) -> str:
    """The Cmd of a container job, setting TransferExecutable = false where the
    program is not sent with the job: no executable at all (the image's entrypoint
    runs), ``transfer_executable = false``, or (with ``never_transfer_absolute_cmd``)
    an absolute path, taken to be inside the image. A program that is not sent keeps
    its path as written, for the container to resolve."""
    assert topping is not Topping.NONE
    exe = _value(b, "executable")
    given = b.get("transfer_executable")
    transfer = True
    if given is not None:
        # condor_submit reads only a leading f/F here
        transfer = not given.strip()[:1] in ("f", "F")
    elif exe is not None and exe.startswith("/") and options.never_transfer_absolute_cmd:
        transfer = False
    if exe is None:
        transfer = False
    if not transfer:
        b.ad["TransferExecutable"] = False
        return exe or ""
    assert exe is not None
    return posixpath.normpath(posixpath.join(iwd, exe))


def _bool(b: ContainerBuilder, key: str) -> bool | None:
    text = _value(b, key)
    if text is None:
        return None
    got = boolean_value(text)
    if got is None:
        raise b.fail(f"{key} = {text} is invalid: it must be a boolean", key)
    return got


def set_container_keywords(b: ContainerBuilder, topping: Topping, *,
                           home: str | None, exists: Callable[[str], bool]) -> None:
    """The container commands that become job attributes as they are written
    (condor_submit sets them for any job; the EP reads them only for container
    jobs), and the service ports of a container job."""
    ad = b.ad
    for key, attr in (("docker_network_type", "DockerNetworkType"),
                      ("docker_pull_policy", "DockerPullPolicy")):
        text = _value(b, key)
        if text is not None:
            ad[attr] = text     # kept as written, quotes and all, as condor_submit does
    target = _value(b, "container_target_dir")
    if target is not None:
        ad["ContainerTargetDir"] = _unquoted(target)
    for key, attr in (("docker_override_entrypoint", "DockerOverrideEntrypoint"),
                      ("docker_send_credentials", "DockerSendCredentials"),
                      ("transfer_container", "TransferContainer"),
                      ("container_is_common", "ContainerIsCommon")):
        flag = _bool(b, key)
        if flag is not None:
            ad[attr] = flag
    if ad.evaluate("DockerSendCredentials") is True:
        # the credentials travel with the job from ~/.docker/config.json
        if not home:
            raise b.fail("docker_send_credentials: HOME is not set, so there is no "
                         "~/.docker/config.json to send", "docker_send_credentials")
        creds = posixpath.join(home, ".docker", "config.json")
        if not exists(creds):
            raise b.fail(f"docker_send_credentials: cannot find the docker credentials "
                         f"file {creds}", "docker_send_credentials")
    if topping is Topping.NONE:
        return
    services = _value(b, "container_service_names")
    if services is None:
        return
    ad["ContainerServiceNames"] = services
    for name in (s for s in services.replace(",", " ").split() if s):
        text = _value(b, name + PORT_SUFFIX)
        port = integer_value(text) if text is not None else None
        if port is None or not 0 <= port <= 65535:
            raise b.fail(f"container service {name!r} has no valid port: set "
                         f"{name}{PORT_SUFFIX} to a number from 0 to 65535",
                         name + PORT_SUFFIX, "container_service_names")
        ad[name + "_ContainerPort"] = port


def container_inputs(b: ContainerBuilder, topping: Topping,
                     options: ContainerOptions) -> list[str]:
    """The container image to transfer with the job's input (at most one path), with
    ContainerImageSource saying where the EP gets the image: ``local`` (not
    transferred: transfer_container = false, or on a shared file system), ``docker``
    or ``oras`` (fetched by the EP), or ``cedar`` (sent with the job, ContainerImage
    then naming it by its base name in the sandbox)."""
    ad = b.ad
    if topping is not Topping.CONTAINER:
        return []
    if ad.evaluate("TransferContainer") is False:
        ad["ContainerImageSource"] = "local"
        return []
    raw = _value(b, "container_image")
    if raw is None:
        return []
    image = _unquoted(raw)
    if any(image.startswith(base) for base in options.shared_fs if base):
        ad["ContainerImageSource"] = "local"
        return []
    for prefix in _FETCHED_PREFIXES:
        if image.startswith(prefix):
            ad["ContainerImageSource"] = prefix[:-3]
            return []
    trimmed = image.rstrip("/") if image.endswith("/") else image
    ad["ContainerImage"] = posixpath.basename(trimmed)
    ad["ContainerImageFullPath"] = image
    scheme, colon, _rest = trimmed.partition(":")
    ad["ContainerImageSource"] = scheme if colon else "cedar"
    return [image]


def requirement_clause(ad: ClassAd, topping: Topping) -> str | None:
    """What the job's Requirements ask of a slot for its topping (in place of the
    OpSys clause, which a container job does not get: the image brings its own)."""
    if topping is Topping.DOCKER:
        clause = "TARGET.HasDocker"
        network = ad.evaluate("DockerNetworkType")
        if isinstance(network, str) and network and network not in _BUILTIN_NETWORKS:
            clause += " && StringListMember(My.DockerNetworkType, TARGET.DockerNetworks)"
        return clause
    if topping is Topping.CONTAINER:
        if "DockerImage" in ad:
            return "TARGET.HasContainer && TARGET.HasDockerURL"
        image = ad.evaluate("ContainerImage")
        if isinstance(image, str):
            return f"TARGET.HasContainer && TARGET.Has{image_kind(image).value}"
        return "TARGET.HasContainer"
    return None
