"""`condorpy q`, `condorpy history`, `condorpy who` and the live `condorpy status`:
fetch ads from the running daemon and print them in HTCondor's layouts."""

from __future__ import annotations

import getpass
import sys
from typing import Any, Sequence

from condorpy.classad import ClassAd
from condorpy.clock import SystemClock
from condorpy.config import load_config
from condorpy.slots.status_format import (render_autoformat, render_json, render_long,
                                          render_table)
from condorpy.startd.client import DaemonUnreachable, call
from condorpy.startd.paths import client_socket
from condorpy.queue.query import Query, parse_query
from condorpy.queue.formats import (ScheddLabel, render_history, render_queue,
                                          render_who)


def _split_config(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """``-config FILE`` (or ``--config``) from anywhere on the line, the rest as it is."""
    rest: list[str] = []
    config: str | None = None
    it = iter(argv)
    for arg in it:
        if arg in ("-config", "--config"):
            config = next(it, None)
            if config is None:
                raise SystemExit(f"{arg} needs a file name")
        elif arg.startswith("--config="):
            config = arg.split("=", 1)[1]
        else:
            rest.append(arg)
    return config, rest


def _fetch(config: str | None, command: str, args: dict[str, Any]) -> Any:
    return call(client_socket(load_config(config)), command, args)


def _ads(texts: list[str], source: str) -> list[ClassAd]:
    return [ClassAd.parse_old(t, source=source) for t in texts]


def _other_output(query: Query, ads: list[ClassAd]) -> str | None:
    if query.output == "long":
        return render_long(ads)
    if query.output == "json":
        return render_json(ads)
    if query.output == "af":
        return render_autoformat(ads, query.attrs)
    return None


def q_main(argv: list[str]) -> int:
    config, rest = _split_config(argv)
    query = parse_query(rest, "q")
    got = _fetch(config, "q", {})
    every = _ads(got["ads"], "the daemon's queue")
    chosen = query.select(every)
    out = _other_output(query, chosen)
    if out is None:
        layout = query.output if query.output in ("nobatch", "hold", "run",
                                                    "totals") else "batch"
        me = getpass.getuser() if not (query.ids or query.owners) else None
        out = render_queue(chosen, schedd=ScheddLabel(got["schedd"], got["address"]),
                           now=float(got["now"]), utc_offset=SystemClock().utc_offset,
                           layout=layout, all_ads=every, me=me)  # type: ignore[arg-type]
    sys.stdout.write(out)
    return 0


def history_main(argv: list[str]) -> int:
    config, rest = _split_config(argv)
    query = parse_query(rest, "history")
    got = _fetch(config, "history", _pushed_down(query))
    chosen = query.select(_ads(got["ads"], "the daemon's history"))
    if query.limit is not None:
        chosen = chosen[:query.limit]
    out = _other_output(query, chosen)
    if out is None:
        out = render_history(chosen, utc_offset=SystemClock().utc_offset)
    sys.stdout.write(out)
    return 0


def _pushed_down(query: Query) -> dict[str, Any]:
    """The selection and limit as the daemon's history takes them, so that it reads
    only as far as needed; the ads that come back are selected here again, which
    changes nothing."""
    ids = [f"ClusterId == {i.cluster}" + (f" && ProcId == {i.proc}" if i.proc is not None
                                          else "") for i in query.ids]
    ids += [f'Owner == "{o}"' for o in query.owners]
    parts = [" || ".join(f"({s})" for s in ids)] if ids else []
    parts += [str(c) for c in query.constraints]
    args: dict[str, Any] = {}
    if parts:
        args["constraint"] = " && ".join(f"({p})" for p in parts)
    if query.limit is not None:
        args["limit"] = query.limit
    return args


def who_main(argv: list[str]) -> int:
    config, rest = _split_config(argv)
    if rest:
        raise SystemExit(f"condorpy who: unexpected argument {rest[0]!r}")
    got = _fetch(config, "who", {})
    ads = _ads(got["ads"], "the daemon's slots")
    dirs = got.get("job_dirs")
    sys.stdout.write(render_who(ads, startd_pid=got.get("pid"),
                                job_dirs=dirs if isinstance(dirs, dict) else None))
    return 0


def live_status(config: str | None, long: bool, af: list[str] | None, constraint: Any,
                json_out: bool) -> int:
    """`condorpy status` without --offline: the running daemon's slot ads."""
    try:
        got = _fetch(config, "status", {})
    except DaemonUnreachable as exc:
        raise DaemonUnreachable(f"{exc}; `condorpy status --offline` shows the ads this "
                                f"machine would advertise") from None
    ads = _ads(got["ads"], "the daemon's slots")
    if constraint is not None:
        ads = [ad for ad in ads if constraint.evaluate(my=ad) is True]
    if long:
        out = render_long(ads)
    elif af:
        out = render_autoformat(ads, af)
    elif json_out:
        out = render_json(ads)
    else:
        out = render_table(ads, float(got["now"])) if ads else ""
    sys.stdout.write(out)
    return 0
