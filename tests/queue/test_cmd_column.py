"""condor_q's CMD column shows the job's own command, as condor_q 23.9.6 printed it for
the same ads (``condor_q -jobads FILE -nobatch`` in the reference chroot, recorded here):
``(JobDescription)`` when set, else the basename of Cmd and the arguments as written
(Arguments, else Args). Nothing the daemon adds to run the job shows there (issue #23)."""

from __future__ import annotations

from condorpy.classad import ClassAd
from condorpy.queue.formats import ScheddLabel, render_queue

BASE = dict(Owner="alice", QDate=1700000000, JobStatus=1, ClusterId=3)


def _cmd_cells(*ads: ClassAd) -> list[str]:
    out = render_queue(list(ads), schedd=ScheddLabel("s", "a"), now=1700000200,
                       utc_offset=0, layout="nobatch")
    rows = [line for line in out.splitlines() if line.startswith("   3.")]
    return [row[row.index(" I ") + 3:].strip() for row in rows]


def test_cmd_is_the_jobs_own_command_and_arguments() -> None:
    ads = [ClassAd(dict(BASE, ProcId=0, Cmd="/bin/sleep", Arguments="8 'a b'",
                        JobDescription="my job")),
           ClassAd(dict(BASE, ProcId=1, Cmd="/usr/bin/echo", Args="hello from 3.1")),
           ClassAd(dict(BASE, ProcId=2, Cmd="/home/alice/run.sh", Arguments="8 'a b'")),
           ClassAd(dict(BASE, ProcId=3, Cmd="/home/alice/run.sh", Arguments="",
                        Args="ignored"))]
    # 3.0 and 3.1 as condor_q 23.9.6 printed them; 3.2, 3.3 by the same rule
    assert _cmd_cells(*ads) == ["(my job)", "echo hello from 3.1", "run.sh 8 'a b'",
                                "run.sh"]
