"""Running a starter in a thread of the test process, and talking to it."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from condorpy.starter.protocol import StarterClient
from condorpy.starter.settings import StarterSettings
from condorpy.starter.starter import Outcome, Starter


AD_TEXT = 'MyType = "Test"\n'


@dataclass
class Running:
    starter: Starter
    thread: threading.Thread
    result: list[Outcome] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)

    def client(self, timeout_s: float = 10.0) -> StarterClient:
        deadline = time.monotonic() + timeout_s
        path = self.starter.socket_path
        while True:
            if os.path.exists(path):
                try:
                    return StarterClient(path)
                except (ConnectionRefusedError, FileNotFoundError):
                    pass
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise TimeoutError(f"starter socket {path} never appeared")
            time.sleep(0.005)

    def outcome(self, timeout_s: float = 20.0) -> Outcome:
        self.thread.join(timeout_s)
        assert not self.thread.is_alive(), "starter did not finish"
        if self.errors:
            raise self.errors[0]
        return self.result[0]


def start(job: Mapping[str, object], slot: Mapping[str, object],
          settings: StarterSettings, tag: str) -> Running:
    starter = Starter(job, slot, settings, tag=tag, job_ad_text=AD_TEXT,
                      machine_ad_text=AD_TEXT, notice=lambda _t: None)
    running = Running(starter, threading.Thread(target=lambda: None))

    def body() -> None:
        try:
            running.result.append(starter.run())
        except BaseException as exc:  # surfaced in outcome()
            running.errors.append(exc)

    running.thread = threading.Thread(target=body, daemon=True)
    running.thread.start()
    return running


def run(job: Mapping[str, object], slot: Mapping[str, object] | None,
        settings: StarterSettings) -> Outcome:
    return Starter(job, slot or {"Name": "slot1@test", "Cpus": 1}, settings,
                   job_ad_text=AD_TEXT, machine_ad_text=AD_TEXT,
                   notice=lambda _t: None).run()


def pids_with_marker(marker: str) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if marker.encode() in fh.read():
                    found.append(int(name))
        except OSError:
            continue
    return found
