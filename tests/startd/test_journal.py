"""Where the daemon logs: journald (structured fields, priorities) when its standard
error is the journal stream systemd named, the StartLog file otherwise."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from condorpy.startd.journal import (JournalHandler, PrefixFormatter, fields, handlers,
                                     priority, public_claim_id, record_fields,
                                     stderr_is_journal)


def test_fields_upper_case_no_none_and_claims_made_public() -> None:
    got = fields(job_id="3.0", slot="slot1_1", exit_code=0, hold_code=None,
                 claim_id="<condorpy>#1700000000#0123456789abcdef")
    assert got["JOB_ID"] == "3.0" and got["SLOT"] == "slot1_1" and got["EXIT_CODE"] == "0"
    assert "HOLD_CODE" not in got
    assert got["CLAIM_ID"].startswith("<condorpy>#1700000000#")
    assert "0123456789abcdef" not in got["CLAIM_ID"]
    assert public_claim_id("<a>#1#secret") == public_claim_id("<a>#1#secret")
    assert public_claim_id("<a>#1#secret") != public_claim_id("<a>#1#other")
    assert "#" not in public_claim_id("nohash") and len(public_claim_id("nohash")) == 12


def test_priorities() -> None:
    assert [priority(lv) for lv in (logging.DEBUG, logging.INFO, logging.WARNING,
                                    logging.ERROR, logging.CRITICAL)] == [7, 6, 4, 3, 2]


def test_handler_sends_message_priority_and_only_the_records_fields() -> None:
    sent: list[tuple[str, dict[str, Any]]] = []
    handler = JournalHandler(lambda msg, **kw: sent.append((msg, kw)))
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger("condorpy.test.journal")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    logger.addHandler(handler)
    try:
        logger.warning("job %s: ended", "3.0",
                       extra=fields(event="job_exit", job_id="3.0", slot="slot1_1",
                                    hold_code=34))
        logger.info("plain line")
    finally:
        logger.removeHandler(handler)
    (msg, kw), (msg2, kw2) = sent
    assert msg == "job 3.0: ended"
    assert kw["PRIORITY"] == "4" and kw["SYSLOG_IDENTIFIER"] == "condorpy-startd"
    assert kw["EVENT"] == "job_exit" and kw["JOB_ID"] == "3.0" and kw["HOLD_CODE"] == "34"
    assert kw["LOGGER"] == "condorpy.test.journal" and kw["CODE_FUNC"]
    # systemd.journal.send formats CODE_LINE with {:d}: it must be a number.
    assert isinstance(kw["CODE_LINE"], int)
    assert all(k.isupper() for k in kw), kw        # journald takes upper-case names only
    assert msg2 == "plain line" and kw2["PRIORITY"] == "6" and "JOB_ID" not in kw2


def test_record_fields_ignore_what_is_not_a_field() -> None:
    rec = logging.LogRecord("x", logging.INFO, "f", 1, "m", None, None)
    rec.SLOT = "slot1"
    rec.lower = "no"
    rec.MESSAGE = "cannot override"
    assert record_fields(rec) == {"SLOT": "slot1"}


def test_stderr_is_journal_compares_device_and_inode(tmp_path: Path) -> None:
    with open(tmp_path / "stream", "w") as fh:
        st = os.fstat(fh.fileno())
        assert stderr_is_journal({"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}, fh)
        assert not stderr_is_journal({"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino + 1}"}, fh)
        assert not stderr_is_journal({"JOURNAL_STREAM": "nonsense"}, fh)
        assert not stderr_is_journal({}, fh)


def test_handlers_journal_or_start_log(tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "StartLog"
    got, where = handlers({}, str(log), foreground=False)
    assert where == str(log) and len(got) == 1
    assert isinstance(got[0], logging.FileHandler)
    got[0].close()
    got, _ = handlers({}, str(log), foreground=True)
    assert len(got) == 2
    for h in got:
        h.close()
    stream = open(tmp_path / "journal-stream", "w")
    monkeypatch.setattr(sys, "stderr", stream)
    st = os.fstat(stream.fileno())
    env = {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"}
    sent: list[str] = []
    got, where = handlers(env, str(tmp_path / "unused"), foreground=True,
                          send=lambda m, **_kw: sent.append(m))
    assert where == "the systemd journal" and len(got) == 1
    assert isinstance(got[0], JournalHandler)
    assert not (tmp_path / "unused").exists()
    monkeypatch.setattr("condorpy.startd.journal.journal_send", lambda: None)
    got, where = handlers(env, str(tmp_path / "unused"), foreground=True)
    assert "no systemd-python" in where
    got[0].handle(logging.LogRecord("x", logging.ERROR, "f", 1, "two\nlines", None, None))
    stream.flush()
    assert (tmp_path / "journal-stream").read_text() == "<3>two\n<3>lines\n"
    stream.close()


def test_a_peers_undecodable_bytes_do_not_lose_the_line(tmp_path: Path) -> None:
    # CEDAR strings are decoded with surrogateescape: a user name that is not UTF-8
    # reaches the log as lone surrogates
    text = "command 465 from con\udc94or@vm denied"
    record = logging.LogRecord("x", logging.ERROR, "f", 1, text, None, None)
    log = tmp_path / "StartLog"
    got, _ = handlers({}, str(log), foreground=False)
    got[0].handle(record)
    got[0].close()
    assert "con\\udc94or@vm denied" in log.read_text()
    sent: list[str] = []
    JournalHandler(lambda m, **_kw: sent.append(m.encode().decode())).handle(record)
    assert sent == ["command 465 from con\\udc94or@vm denied"]


def test_prefix_formatter() -> None:
    rec = logging.LogRecord("x", logging.WARNING, "f", 1, "careful", None, None)
    assert PrefixFormatter("%(message)s").format(rec) == "<4>careful"
