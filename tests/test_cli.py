import subprocess
import sys


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "condorpy", *args],
                          capture_output=True, text=True, timeout=60)


def test_unknown_command_is_a_usage_error() -> None:
    r = run("no-such-command")
    assert r.returncode == 2
    assert "unknown command" in r.stderr
    assert "Traceback" not in r.stderr


def test_help_lists_commands() -> None:
    r = run("--help")
    assert r.returncode == 0
    for name in ("classad", "config-val", "status", "policy", "starter"):
        assert name in r.stdout
