# condorpy: ending the jobs, shared by prerm and postrm (put in place of
# #CONDORPY_JOBS# by dh_installdeb, see debian/rules).
#
# Jobs do not live in condorpy.service's cgroup, so that a restart of the daemon
# never ends them: under systemd they live in the delegated scope condorpy-jobs.scope
# (knob CONDORPY_JOBS_SCOPE), without systemd in <the daemon's cgroup, or the root's
# condorpy.starters.leaf>/starters.leaf with their own cgroups beside it
# (htcondor/job_*.slice). Stopping the service therefore leaves them running: removing
# the package has to end them itself, and every wait here is bounded.
CONDORPY_CGROOT=/sys/fs/cgroup
CONDORPY_STATE=/var/lib/condorpy
CONDORPY_QUEUE=$CONDORPY_STATE/spool/condorpy_queue.sqlite3

condorpy_say() { echo "condorpy: $*" >&2; }

# Installing into another root (DPKG_ROOT) or a chroot: the processes and cgroups
# this machine shows are not the ones of the package being removed.
condorpy_same_root() {
    [ "$(stat -L -c %d:%i "/proc/$1/root" 2>/dev/null)" = "$(stat -L -c %d:%i / 2>/dev/null)" ]
}
condorpy_may_act() {
    [ -z "${DPKG_ROOT:-}" ] && [ -d /proc/1 ] && condorpy_same_root 1
}

condorpy_alive() {
    [ -d "/proc/$1" ] || return 1
    case "$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1)" in
        Z|X|"") return 1 ;;
    esac
    return 0
}

# wait_gone SECONDS PID...: true once none of the processes is left.
condorpy_wait_gone() {
    wn=$(($1 * 5)); shift
    while :; do
        left=""
        for p in "$@"; do condorpy_alive "$p" && left="$left $p"; done
        [ -z "$left" ] && return 0
        [ "$wn" -gt 0 ] || return 1
        sleep 0.2; wn=$((wn - 1))
    done
}

# The jobs' scopes, found by their cgroups (the keep-alive's init.leaf beside the
# starters' leaf), so that a scope named by CONDORPY_JOBS_SCOPE is found too; their
# cgroup directories, absolute.
condorpy_scope_dirs() {
    [ -d /run/systemd/system ] || return 0
    find "$CONDORPY_CGROOT" -mindepth 2 -maxdepth 4 -type d -name init.leaf 2>/dev/null |
        while read -r leaf; do
            dir=${leaf%/init.leaf}
            case "$dir" in
                */condorpy-jobs.scope) echo "$dir" ;;
                *.scope) [ -d "$dir/starters.leaf" ] && echo "$dir" ;;
            esac
        done || true
    return 0
}

# Daemons: the processes holding the job store's lock (the writer of the queue).
condorpy_daemons() {
    find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 -lname "$CONDORPY_QUEUE.lock" \
        2>/dev/null | cut -d/ -f3 | sort -u |
        while read -r p; do condorpy_same_root "$p" && echo "$p"; done || true
    return 0
}

# Starters the daemon recorded (pid and start time, so that a reused pid is spared);
# needs python3's sqlite3, and is only a help where the cgroups below say nothing.
condorpy_recorded_starters() {
    [ -f "$CONDORPY_QUEUE" ] && command -v python3 >/dev/null 2>&1 || return 0
    python3 - "$CONDORPY_QUEUE" 2>/dev/null <<'PY' |
import sqlite3, sys
db = sqlite3.connect("file:%s?mode=ro" % sys.argv[1], uri=True, timeout=5)
for pid, start in db.execute("SELECT pid, process_start FROM starters"):
    print(pid, start)
PY
    while read -r p start; do
        [ "$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f20)" = "$start" ] \
            && condorpy_same_root "$p" && echo "$p"
    done || true
    return 0
}

# cgroup directories (absolute) that hold starters and jobs.
condorpy_job_cgroups() {
    condorpy_scope_dirs
    anchors=""
    [ -d "$CONDORPY_CGROOT/condorpy.starters.leaf" ] && anchors="$CONDORPY_CGROOT"
    for p in $(condorpy_daemons); do
        cg=$(sed -n 's/^0:://p' "/proc/$p/cgroup" 2>/dev/null || true)
        case "$cg" in
            ""|/) continue ;;
            */daemon.leaf) cg=${cg%/daemon.leaf} ;;
        esac
        anchors="$anchors $CONDORPY_CGROOT$cg"
    done
    for a in $anchors; do
        if [ "$a" = "$CONDORPY_CGROOT" ]; then
            leaf=$a/condorpy.starters.leaf
        else
            leaf=$a/starters.leaf
        fi
        [ -d "$leaf" ] && echo "$leaf"
        find "$a" -mindepth 1 -maxdepth 3 -type d -name 'job_*.slice' 2>/dev/null || true
    done
    return 0
}

condorpy_cgroup_procs() {
    find "$1" -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u
    return 0
}

condorpy_populated() {
    [ -d "$1" ] && ! grep -qx 'populated 0' "$1/cgroup.events" 2>/dev/null
}

# Kill everything in a cgroup subtree: cgroup.kill where the kernel has it (5.14),
# else every process found, again until none is left.
condorpy_kill_cgroup() {
    if [ -f "$1/cgroup.kill" ]; then
        echo 1 >"$1/cgroup.kill" 2>/dev/null || true
    fi
    for p in $(condorpy_cgroup_procs "$1"); do kill -KILL "$p" 2>/dev/null || true; done
}

# SIGTERM first, where the processes can still do something useful with it: a
# daemon saves its queue, a starter vacates its job.
condorpy_term() {
    what=$1 seconds=$2; shift 2
    [ $# -gt 0 ] || return 0
    condorpy_say "stopping $what: $*"
    kill -TERM "$@" 2>/dev/null || true
    condorpy_wait_gone "$seconds" "$@" && return 0
    condorpy_say "$what still running after ${seconds} s: killing $*"
    kill -KILL "$@" 2>/dev/null || true
    condorpy_wait_gone 5 "$@" || true
}

# Processes working in the state (cwd or an open file under execute/ or spool/): at
# purge only, when that state is about to go and they would write into a removed tree.
condorpy_state_users() {
    self=$$
    keep=" $self "
    p=$self
    while [ "$p" -gt 1 ] 2>/dev/null; do
        p=$(sed 's/.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f2)
        [ -n "$p" ] || break
        keep="$keep$p "
    done
    { find /proc/[0-9]*/cwd -maxdepth 0 \( -lname "$CONDORPY_STATE/execute/*" \
          -o -lname "$CONDORPY_STATE/spool/*" \) 2>/dev/null
      find /proc/[0-9]*/fd -mindepth 1 -maxdepth 1 \( -lname "$CONDORPY_STATE/execute/*" \
          -o -lname "$CONDORPY_STATE/spool/*" \) 2>/dev/null
    } | cut -d/ -f3 | sort -u | while read -r p; do
        case "$keep" in *" $p "*) continue ;; esac
        condorpy_same_root "$p" && echo "$p"
    done || true
    return 0
}

# The forceful part, bounded: what is left in the jobs' cgroups, scopes and records.
condorpy_kill_jobs() {
    cgroups=$(condorpy_job_cgroups)
    pids="$(condorpy_daemons) $(condorpy_recorded_starters)"
    [ "${1:-}" = purge ] && pids="$pids $(condorpy_state_users)"
    pids=$(echo $pids)
    [ -n "$cgroups$pids" ] || return 0
    [ -n "$pids" ] && condorpy_say "killing what is left of condorpy: $pids"
    kill -KILL $pids 2>/dev/null || true
    kn=75        # 15 s
    while :; do
        busy=""
        for cg in $cgroups; do
            if condorpy_populated "$cg"; then
                busy="$busy $cg"
                condorpy_kill_cgroup "$cg"
            fi
        done
        [ -z "$busy" ] && condorpy_wait_gone 0 $pids && break
        if [ "$kn" -le 0 ]; then
            condorpy_say "still not empty after 15 s:$busy (pids: $(for cg in $busy; do condorpy_cgroup_procs "$cg"; done | tr '\n' ' '))"
            break
        fi
        sleep 0.2; kn=$((kn - 1))
    done
    for dir in $(condorpy_scope_dirs); do
        # Empty now: the stop is quick, and the unit goes with it (also when a stop
        # that timed out above left it failed).
        timeout 30 deb-systemd-invoke stop "${dir##*/}" >/dev/null 2>&1 || true
        systemctl reset-failed "${dir##*/}" >/dev/null 2>&1 || true
    done
    if [ -d /run/systemd/system ]; then
        systemctl reset-failed condorpy-jobs.scope >/dev/null 2>&1 || true
    fi
    # Cgroups the daemon made outside systemd's units: empty ones are removed, deepest first.
    for cg in $cgroups; do
        case "$cg" in "$CONDORPY_CGROOT"/*.scope) continue ;; esac
        find "$cg" -depth -type d -exec rmdir {} \; 2>/dev/null || true
    done
    return 0
}

# The orderly part, then the forceful one: on removal, the daemon and the jobs go
# (jobs are vacated: their starters get SIGTERM), each step bounded in time.
condorpy_end_jobs() {
    condorpy_may_act || return 0
    # A daemon that systemd does not run (started by hand, in a container) first,
    # so that it starts nothing more.
    condorpy_term "the condorpy daemon" 30 $(condorpy_daemons)
    for dir in $(condorpy_scope_dirs); do
        condorpy_say "stopping ${dir##*/} (its starters vacate their jobs)"
        timeout 90 deb-systemd-invoke stop "${dir##*/}" >/dev/null 2>&1 || true
    done
    starters=""
    for cg in $(condorpy_job_cgroups); do
        case "$cg" in *.leaf) starters="$starters $(condorpy_cgroup_procs "$cg")" ;; esac
    done
    condorpy_term "condorpy starters" 30 $(echo $starters $(condorpy_recorded_starters) |
                                          tr ' ' '\n' | sort -u)
    condorpy_kill_jobs "${1:-}"
}

# Remove directories that jobs may still be writing into: again and again for up to
# 30 s, ending what still writes there; what is left after that is said, not fatal.
condorpy_remove_state() {
    rn=60
    while :; do
        rm -rf "$@" 2>/dev/null || true
        left=""
        for d in "$@"; do [ -e "$d" ] && left="$left $d"; done
        [ -z "$left" ] && return 0
        if [ "$rn" -le 0 ]; then
            condorpy_say "could not remove everything in 30 s; left:"
            find $left 2>/dev/null | head -n 20 >&2 || true
            condorpy_may_act && for p in $(condorpy_state_users); do
                condorpy_say "  in use by $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
            done
            return 0
        fi
        condorpy_may_act && condorpy_kill_jobs purge
        sleep 0.5; rn=$((rn - 1))
    done
}
# --- end of the jobs' part ---------------------------------------------------------
