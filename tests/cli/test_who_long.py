"""`condorpy who -long`: the ads of the slots that run a job, as condor_who -long."""

from __future__ import annotations

from condorpy.classad import ClassAd
from condorpy.cli.queue_cmds import who_parser
from condorpy.queue.who_long import render_who_long


def test_only_slots_with_a_job_whole_and_sorted() -> None:
    busy = ClassAd.parse_old('Name = "slot1_1@h"\nJobId = "3.0"\nactivity = "Busy"\n'
                             'Cpus = 1\n')
    idle = ClassAd.parse_old('Name = "slot1@h"\nActivity = "Idle"\n')
    assert render_who_long([idle, busy]) == ('activity = "Busy"\nCpus = 1\nJobId = "3.0"\n'
                                             'Name = "slot1_1@h"\n\n')
    # no job running: nothing at all, as condor_who -long prints
    assert render_who_long([idle]) == ""


def test_long_is_in_the_help() -> None:
    assert "-long" in who_parser().format_help()
