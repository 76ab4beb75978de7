# Shared helpers of the real-kernel lane scripts (sourced, not run).
# shellcheck shell=bash

vm_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
vm_cache="${CONDORPY_VM_CACHE:-$vm_dir/.cache}"

vm_say() { printf '%s: %s\n' "${vm_prog:-tests/vm}" "$*" >&2; }
vm_die() { vm_say "$*"; exit "${vm_fail_status:-125}"; }

# Root runs apt itself (CI, this machine); anyone else goes through sudo, and
# without sudo gets told what to install instead of a password prompt that hangs.
vm_as_root() {
    if [[ $(id -u) -eq 0 ]]; then
        "$@"
    elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo -n "$@"
    else
        vm_die "needs root to run: $* (run it by hand, or make sudo work without a password)"
    fi
}

# vm_need_packages CMD:PACKAGE ... installs PACKAGE when CMD is missing. The
# package lists are refreshed only when apt does not know a package, since an
# update costs more than the install on a machine whose lists are current.
vm_need_packages() {
    local want=() pair
    for pair in "$@"; do
        command -v "${pair%%:*}" >/dev/null 2>&1 || [[ -x "${pair%%:*}" ]] || want+=("${pair#*:}")
    done
    [[ ${#want[@]} -eq 0 ]] && return 0
    command -v apt-get >/dev/null || vm_die "missing ${want[*]} and no apt-get to install them"
    vm_say "installing ${want[*]}"
    local p
    for p in "${want[@]}"; do
        if ! apt-cache show "$p" >/dev/null 2>&1; then
            vm_as_root flock /tmp/condorpy-apt.lock apt-get -o DPkg::Lock::Timeout=600 update -qq >&2 || vm_die "apt-get update failed"
            break
        fi
    done
    # dpkg's progress goes nowhere; apt's errors still reach stderr.
    DEBIAN_FRONTEND=noninteractive vm_as_root flock /tmp/condorpy-apt.lock apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
        "${want[@]}" >/dev/null || vm_die "could not install ${want[*]}"
}

# The newest cached kernel directory (empty when none), for runs that cannot
# reach the package index.
vm_cached_kernel() {
    local d
    for d in "$vm_cache"/kernel/*/vmlinuz; do
        [[ -f "$d" ]] && dirname "$d"
    done | sort -V | tail -n 1
}

# vm_precompile REPO: byte-compile the checkout's Python (condorpy/ and tests/, the
# pool lane's chroots under .cache left alone) on this machine, before a boot. The
# VM sees the checkout read-only under a throw-away overlay, so whatever its Python
# compiles is lost: without the host's .pyc files every start of a Python in the VM
# (pytest, a daemon, a starter, each condorpy command) compiles the modules it
# imports again, emulated. compileall leaves up-to-date files alone (a fraction of a
# second); a failure only costs the VM that time, hence no exit.
vm_precompile() {
    local repo="$1" py="$1/.venv/bin/python"
    [[ -x "$py" ]] || py="$(command -v python3 || true)"
    [[ -n "$py" ]] || return 0
    (cd "$repo" && find condorpy tests -name .cache -prune -o -name '*.py' -print 2>/dev/null \
        | "$py" -m compileall -q -i - >/dev/null 2>&1) || vm_say "byte-compiling $repo failed; the VM compiles it itself"
}
