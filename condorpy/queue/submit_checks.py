"""condor_submit's checks before anything is queued: lines nothing reads (a typo'd
command), an executable that cannot run, and (in the daemon) job ads whose expressions
cost more than an evaluation budget.

Pure: the description comes in as read by :func:`condorpy.queue.submit.read_description`
and the file system through a small port. A line is unused, as in condor_submit 23.9,
when it is neither a submit command (condorpy's own or one HTCondor knows that condorpy
accepts and ignores) nor a macro that a used line expands with ``$(...)``; it is worth a
warning, never a refusal. The executable checks raise
:class:`~condorpy.errors.SubmitError` naming the file and the line.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from condorpy.classad import Budget, CallContext, ClassAd
from condorpy.classad.budget import DEFAULT_SECONDS
from condorpy.errors import SubmitError
from condorpy.queue.submit import SubmitDescription, statement_parts

__all__ = ["SubmitWarning", "ProgramFS", "unused_lines", "check_executables",
           "costly_expression", "KNOWN_COMMANDS"]

# The commands condorpy's submit reads (and the job attribute names it, like
# condor_submit, takes for some of them).
_CONDORPY = """
universe executable arguments args arguments2 environment env environment2 getenv
input stdin output stdout error stderr log initialdir initial_dir iwd job_iwd
stream_output stream_error hold priority prio notification notify_user rank preferences
periodic_hold periodic_hold_reason periodic_hold_subcode periodic_release periodic_remove
on_exit_hold on_exit_hold_reason on_exit_hold_subcode on_exit_remove leave_in_queue
job_lease_duration job_max_vacate_time kill_sig batch_name should_transfer_files
when_to_transfer_output transfer_input_files transfer_output_files transfer_executable
request_cpus request_memory request_disk request_gpus
require_gpus requirements
docker_image docker_network_type docker_pull_policy docker_override_entrypoint
docker_send_credentials container_image container_target_dir transfer_container
container_is_common container_service_names
requestcpus requestmemory requestdisk requestgpus requiregpus userlog streamout streamerr
jobleaseduration jobmaxvacatetime
"""
# Submit commands of HTCondor 23.9/25.x that condorpy accepts without acting on them
# (other universes, grid and cloud, accounting, DAGMan, ...): not typos.
_HTCONDOR = """
accounting_group accounting_group_user allowed_execute_duration allowed_job_duration
append_files arc_application arc_data_staging arc_resources arc_rte
aws_access_key_id_file aws_region aws_secret_access_key_file azure_admin_key
azure_admin_username azure_auth_file azure_image azure_location azure_size
batch_extra_submit_args batch_id batch_project batch_queue batch_runtime
buffer_block_size buffer_files buffer_size checkpoint_destination checkpoint_exit_code
cloud_label_names compress_files concurrency_limits concurrency_limits_expr
copy_to_spool core_size coresize cron_day_of_month cron_day_of_week cron_hour
cron_minute cron_month cron_prep_time cron_window cuda_version dagman_job_id dagman_log
deferral_prep_time deferral_time deferral_window delegate_job_gsi_credentials_lifetime
description disk_usage dont_encrypt_input_files
dont_encrypt_output_files ec2_access_key_id ec2_ami_id ec2_availability_zone
ec2_block_device_mapping ec2_ebs_volumes ec2_elastic_ip ec2_iam_profile_arn
ec2_iam_profile_name ec2_instance_type ec2_keypair ec2_keypair_file ec2_key_pair
ec2_key_pair_file ec2_parameter_names ec2_secret_access_key ec2_security_groups
ec2_security_ids ec2_spot_price ec2_tag_names ec2_user_data ec2_user_data_file
ec2_vpc_ip ec2_vpc_subnet email_attributes encrypt_execute_directory
encrypt_input_files encrypt_output_files erase_output_and_error_on_restart
exit_requirements fetch_files file_remaps gce_account gce_auth_file gce_image
gce_json_file gce_machine_type gce_metadata gce_metadata_file gce_preemptible
gpus_maximum_capability gpus_minimum_capability gpus_minimum_memory
gpus_minimum_runtime grid_resource gs_access_key_id_file gs_secret_access_key_file
hold_kill_sig image_size interactive_args interactive_executable jar_files
java_vm_args java_vm_arguments java_vm_arguments2 jobset job_ad_information_attrs
job_machine_attrs job_machine_attrs_history_length keep_claim_idle kill_sig_timeout
load_profile local_files log_xml machine_count manifest manifest_dir match_list_length
materialize_max_idle max_idle max_job_retirement_time max_materialize max_retries
max_transfer_input_mb max_transfer_output_mb memory_usage mount_under_scratch
next_job_start_delay nice_user node_count nodecount noop_job noop_job_exit_code
noop_job_exit_signal on_evict_checks output_destination output_directory
parallel_script_shadow parallel_script_starter periodic_vacate preserve_relative_paths
primary_unix_group project_name public_input_files remote_initialdir remove_kill_sig
rendezvousdir retry_request_disk retry_request_memory retry_request_memory_increase
retry_request_memory_max retry_until run_as_owner s3_access_key_id_file
s3_secret_access_key_file scitokens_file shell skip_if_dataflow stack_size
starter_debug starter_log stream_input submit_event_notes submit_event_notes_attrs
submit_event_user_notes success_exit_code suspend_job_at_exec tool_daemon_args
tool_daemon_arguments tool_daemon_arguments2 tool_daemon_cmd tool_daemon_error
tool_daemon_input tool_daemon_output transferinputfiles transferoutputfiles
transfer_checkpoint_files transfer_common_input transfer_error
transfer_input transfer_output transfer_output_remaps transfer_plugins ulog_execute_attrs useoauthservices
use_oauth_services use_scitoken use_scitokens use_x509userproxy vm_checkpoint vm_disk
vm_macaddr vm_memory vm_networking vm_networking_type vm_no_output_vm vm_type vm_vcpus
vm_vnc wantnametag want_ads want_graceful_removal want_io_proxy want_job_networking
want_remote_io x509userproxy xen_initrd xen_kernel xen_kernel_params xen_root
"""
KNOWN_COMMANDS: frozenset[str] = frozenset((_CONDORPY + _HTCONDOR).split())
# Families of commands whose names end (or, for a container service's port, begin) in
# a name of the user's choosing.
_KNOWN_PREFIXES = ("request_", "require_", "cloud_label_", "ec2_parameter_", "ec2_tag_",
                   "remote_", "transform_body_")
_KNOWN_SUFFIXES = ("_container_port",)
# What condor_submit itself calls a typo of one of its commands, and request_<tag>
# names so near a standard request that a custom resource by that name is unlikely.
_STANDARD_REQUESTS = ("request_cpus", "request_memory", "request_disk", "request_gpus")
_NOT_RESOURCES = {"request_cpu": "request_cpus", "request_gpu": "request_gpus"}

# $(name), $(name:default), $Fpnx(name), $INT(name,fmt), ...: the name expanded
_REFERENCE = re.compile(r"\$([A-Za-z]*)\(\s*([A-Za-z_][A-Za-z0-9_.]*)")


@dataclass(frozen=True)
class SubmitWarning:
    """A line of the description that nothing reads; the job is queued without it."""
    file: str
    line: int
    key: str
    value: str
    suggestion: str | None       # the command it was probably meant to be

    def __str__(self) -> str:
        said = f"{self.key} = {self.value}".rstrip()
        text = (f"{self.file}, line {self.line}: warning: nothing reads '{said}': it is "
                f"not a submit command and no $(...) uses it")
        if self.suggestion is not None:
            text += f"; is it a typo of {self.suggestion}?"
        else:
            text += "; is it a typo?"
        return text + " (the job is submitted without it)"


def _references(text: str) -> Iterable[str]:
    for m in _REFERENCE.finditer(text):
        if m.group(1).upper() != "ENV":
            yield m.group(2).lower()


def _is_command(lc: str) -> bool:
    if lc in _NOT_RESOURCES:
        return False
    return lc in KNOWN_COMMANDS or lc.startswith(_KNOWN_PREFIXES) or \
        lc.endswith(_KNOWN_SUFFIXES)


def _suggest(lc: str) -> str | None:
    import difflib  # (only for a line nothing reads: not in every submit's start-up)
    if lc in _NOT_RESOURCES:
        return _NOT_RESOURCES[lc]
    if lc.startswith("request_") and lc not in _STANDARD_REQUESTS:
        near = difflib.get_close_matches(lc, _STANDARD_REQUESTS, n=1, cutoff=0.85)
        return near[0] if near else None
    near = difflib.get_close_matches(lc, sorted(KNOWN_COMMANDS), n=1, cutoff=0.75)
    return near[0] if near else None


def unused_lines(desc: SubmitDescription) -> list[SubmitWarning]:
    """Warnings for the lines nothing reads, in the order of the file (one per name:
    its last assignment, the one that would count)."""
    assigns, queue_texts = statement_parts(desc)
    last: dict[str, tuple[int, str, str]] = {}
    for line, key, value in assigns:
        last[key.lower()] = (line, key, value)
    # What condorpy reads: commands, +Attr/MY.Attr, queue statements; then whatever
    # they expand, and so on.
    pending: list[str] = list(queue_texts)
    used: set[str] = set()
    for lc, (_line, key, value) in last.items():
        if key.startswith("+") or lc.startswith("my.") or _is_command(lc):
            pending.append(value)
    while pending:
        for name in _references(pending.pop()):
            if name not in used:
                used.add(name)
                got = last.get(name)
                if got is not None:
                    pending.append(got[2])
    out: list[SubmitWarning] = []
    for lc, (line, key, value) in last.items():
        if key.startswith("+") or lc.startswith("my.") or lc in used:
            continue
        # request_<tag> near a standard request is read (as a custom resource) yet
        # almost surely a typo: worth the same warning
        near_request = lc.startswith("request_") and lc not in _STANDARD_REQUESTS \
            and _suggest(lc) is not None
        if _is_command(lc) and not near_request:
            continue
        out.append(SubmitWarning(desc.source, line, key, value, _suggest(lc)))
    return sorted(out, key=lambda w: w.line)


# --- the executable ---------------------------------------------------------------

class ProgramFS(Protocol):
    """What the executable check asks of the file system."""

    def kind(self, path: str) -> str:
        """'missing', 'dir', 'empty', 'noexec' or 'ok'."""
        ...


def _line_of(desc: SubmitDescription, key: str) -> int | None:
    assigns, _queues = statement_parts(desc)
    found = None
    for line, k, _v in assigns:
        if k.lower() == key:
            found = line
    return found


def _transferred(ad: ClassAd) -> bool:
    # With file transfer the executable is copied into the sandbox and made executable
    # there (as HTCondor's starter does); in place it must already be.
    return ad.evaluate("ShouldTransferFiles") == "YES" and \
        ad.evaluate("TransferExecutable") is not False


def _inside_image(ad: ClassAd) -> bool:
    # A container job's program that is not sent with it is found in the image (or it
    # has none: the image's entrypoint runs): nothing on this side to check.
    container = ad.evaluate("WantDocker") is True or ad.evaluate("WantContainer") is True
    return container and ad.evaluate("TransferExecutable") is False


def check_executables(desc: SubmitDescription, ads: Sequence[ClassAd],
                      fs: ProgramFS) -> None:
    """Refuse the submission when a job's executable is missing, a directory, empty,
    or (run in place) not executable."""
    seen: set[str] = set()
    for ad in ads:
        cmd = ad.evaluate("Cmd")
        if not isinstance(cmd, str) or "$$(" in cmd or cmd in seen:
            continue
        if _inside_image(ad):
            continue
        seen.add(cmd)
        kind = fs.kind(cmd)
        why = {"missing": "does not exist", "dir": "is a directory",
               "empty": "is empty (zero length)",
               "noexec": "is not executable (chmod +x it, or transfer it)"}.get(kind)
        if kind == "noexec" and _transferred(ad):
            why = None
        if why is not None:
            shown = cmd if posixpath.isabs(cmd) else repr(cmd)
            raise SubmitError(f"executable {shown} {why}; nothing was submitted",
                              file=desc.source, line=_line_of(desc, "executable"))


# --- what the job's expressions cost ------------------------------------------------

# What checking one more job ad of a submission may cost beyond one evaluation's budget:
# about ten times what an ordinary job ad costs (a hundred-odd steps, a few hundred
# microseconds), so that the check stays proportional to the request's size while a
# submission of many ads, each of its own shape and each just under the budget, is
# refused before it has cost their sum.
PER_JOB_STEPS = 2000
PER_JOB_SECONDS = 0.002


def costly_expression(ads: Sequence[ClassAd], slot: ClassAd | None, steps: int,
                      clock: Callable[[], float]) -> str | None:
    """Why the submission is refused when its job ads cannot be evaluated within their
    budget, on ``clock``: every attribute of each ad, against ``slot`` (one of this
    machine's slot ads, as the matchmaker will), ``steps`` (and the library's seconds)
    for any one ad, and for all of them together one budget plus
    :data:`PER_JOB_STEPS` and :data:`PER_JOB_SECONDS` per ad; None when they fit.

    Refusing here means an ad whose Requirements, Rank, JobPrio or periodic expressions
    double through their references, or backtrack in a regular expression, never
    enters the queue, where each match cycle and policy interval would pay for it
    again. The procs of a submission that share their expressions (the usual case:
    one submit file) are checked once; what depends on a proc's own constants or on
    another slot is still bounded, and held, when it is evaluated there.
    """
    n = len(ads)
    budget = Budget(steps + PER_JOB_STEPS * n, DEFAULT_SECONDS + PER_JOB_SECONDS * n,
                    clock, each=DEFAULT_SECONDS)
    ctx = CallContext(budget=budget)
    checked: set[tuple[tuple[str, int], ...]] = set()
    for i, ad in enumerate(ads):
        # (the names and expression objects of its attributes that are not constants:
        # read from the ad's tables, a few microseconds an ad, since a submission may
        # hold 100,000)
        exprs, consts = ad.exprs, ad.consts
        shape = tuple((lc, id(exprs[lc])) for lc in exprs if lc not in consts)
        if shape in checked:
            continue
        checked.add(shape)
        before = budget.used
        for lc, _ in shape:
            ad.evaluate(lc, slot, ctx)
            if budget.exceeded or budget.used - before > steps:
                name = ad.name_of(lc) or lc
                text = str(exprs[lc])
                if len(text) > 200:
                    text = text[:197] + "..."
                whose = "its expressions" if budget.used - before > steps or \
                    len(checked) == 1 else "the expressions of the submission's job ads"
                return (f"job ad {i}: {whose} exceed the evaluation budget ({steps} "
                        f"steps, {DEFAULT_SECONDS:g} s per job ad: "
                        f"CONDORPY_EVAL_STEP_LIMIT) against this machine's slot; it ran "
                        f"out in {name} = {text}")
    return None
