"""Flow-log building blocks: the streaming blob reader at every cut, minute sets, address
classes, activity-log forms and times."""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest

from forensics import flowlogs_read
from forensics.errors import ForensicsError
from forensics.flowlogs_events import load_events, parse_time
from forensics.flowlogs_model import MinuteSet, is_internal
from forensics.flowlogs_read import Blob, NotFlowLogError, iter_records

from .flowlog_blobs import at, record, tup

MAC = "000D3AAA0001"


def _records(n: int) -> list[dict[str, object]]:
    return [record(m, MAC, [("nsg", [("UserRule_a", [
        tup(at(m), "10.0.0.4", "10.0.0.5", 40000 + m, 443, "E", ps=1, bs=2, pr=3, br=4)])])])
        for m in range(n)]


def _blob(path: Path) -> Blob:
    return Blob(path=str(path), name=path.name, size=path.stat().st_size)


def _read(path: Path) -> tuple[list[dict[str, object]], Blob]:
    blob = _blob(path)
    got = []
    for rec in iter_records(blob):
        blob.records += 1
        got.append(rec)
    return got, blob


@pytest.mark.parametrize("chunk", [7, 64, 1000, 1 << 20])
@pytest.mark.parametrize("indent", [None, 4])
def test_reader_gives_the_records_whatever_the_piece_size(
        chunk: int, indent: int | None, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(flowlogs_read, "CHUNK", chunk)
    recs = _records(9)
    path = tmp_path / "PT1H.json"
    path.write_text(json.dumps({"records": recs}, indent=indent))
    got, blob = _read(path)
    assert got == recs and blob.status == "ok" and blob.warnings == []


def test_reader_at_every_cut_keeps_the_whole_records_before_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A download cut at any byte: every record that ends before the cut is read, a warning
    says where it stopped, and nothing raises."""
    monkeypatch.setattr(flowlogs_read, "CHUNK", 97)
    recs = _records(3)
    text = '{"records":[' + ",".join(json.dumps(r) for r in recs) + "]}"
    ends = []
    pos = len('{"records":[')
    for r in recs:
        pos += len(json.dumps(r))
        ends.append(pos)
        pos += 1
    path = tmp_path / "PT1H.json"
    for cut in range(len('{"records":['), len(text)):
        path.write_text(text[:cut])
        got, blob = _read(path)
        assert got == recs[: sum(1 for e in ends if e <= cut)], cut
        assert blob.status == "partial" and blob.warnings, cut
    path.write_text(text)
    got, blob = _read(path)
    assert got == recs and blob.status == "ok"


def test_reader_shapes_that_are_not_a_blob_file(tmp_path: Path) -> None:
    recs = _records(2)
    one = tmp_path / "one.json"
    one.write_text(json.dumps(recs[0]))            # a single record
    assert _read(one)[0] == [recs[0]]
    many = tmp_path / "many.json"
    many.write_text(json.dumps(recs))              # a list of records
    assert _read(many)[0] == recs
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"name": "x", "records": recs}))  # other keys first
    assert _read(other)[0] == recs
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"value": [1, 2]}))
    with pytest.raises(NotFlowLogError, match="not a flow-log blob"):
        _read(bad)


def test_minute_set_merge_equals_marking_each_minute() -> None:
    rnd = random.Random(7)
    for _ in range(500):
        a, b, want = MinuteSet(), MinuteSet(), {}
        for s in (a, b):
            for _ in range(rnd.randrange(0, 25)):
                m, f = 29_000_000 + rnd.randrange(-500, 500), 1 << rnd.randrange(6)
                s.mark(m, f)
                want[m] = want.get(m, 0) | f
        a.merge(b)
        assert {a.origin + i: f for i, f in enumerate(a.flags) if f} == want


@pytest.mark.parametrize(("ip", "internal"), [
    ("10.1.2.3", True), ("172.16.0.1", True), ("172.31.255.255", True), ("172.32.0.1", False),
    ("172.15.9.9", False), ("192.168.1.1", True), ("192.169.1.1", False),
    ("100.64.0.1", True), ("100.127.255.255", True), ("100.128.0.1", False),
    ("169.254.169.254", True), ("168.63.129.16", True), ("168.63.129.17", False),
    ("127.0.0.1", True), ("8.8.8.8", False), ("203.0.113.50", False), ("198.51.100.7", False),
    ("fd00::1", True), ("fe80::1", True), ("2001:db8::1", False), ("not-an-ip", True),
])
def test_internal_addresses(ip: str, internal: bool) -> None:
    assert is_internal(ip) is internal


def test_times_and_ages() -> None:
    now = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    assert parse_time("90m", "--since", now) == datetime(2026, 3, 2, 10, 30, tzinfo=UTC)
    assert parse_time("1d2h", "--since", now) == datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
    assert parse_time("2026-03-02T09:20", "--since") == datetime(2026, 3, 2, 9, 20,
                                                                 tzinfo=UTC)
    assert parse_time("2026-03-02T10:20+01:00", "--until") == datetime(2026, 3, 2, 9, 20,
                                                                      tzinfo=UTC)
    with pytest.raises(ForensicsError, match="--until 'soon'"):
        parse_time("soon", "--until")


def test_activity_log_writes_are_deduplicated_and_failures_dropped(tmp_path: Path) -> None:
    base = {"caller": "a@b", "operationName": {"value": "Microsoft.Network/x/write"},
            "resourceId": "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/"
                          "networkSecurityGroups/nsg/securityRules/r"}
    events = [
        {**base, "eventTimestamp": "2026-03-02T09:10:05Z", "status": {"value": "Started"},
         "correlationId": "c1"},
        {**base, "eventTimestamp": "2026-03-02T09:10:09Z", "status": {"value": "Succeeded"},
         "correlationId": "c1"},
        {**base, "eventTimestamp": "2026-03-02T09:30:00Z", "status": {"value": "Failed"},
         "correlationId": "c2"},
    ]
    path = tmp_path / "ev.json"
    path.write_text(json.dumps(events))
    (ev,) = load_events(str(path))
    assert ev.time == datetime(2026, 3, 2, 9, 10, 5, tzinfo=UTC)
    assert ev.describe() == "x/write on nsg/r by a@b at 09:10:05 UTC"
    path.write_text("[1, 2]")
    with pytest.raises(ForensicsError, match="entry 1 is int"):
        load_events(str(path))
    path.write_text("")
    with pytest.raises(ForensicsError, match="is empty"):
        load_events(str(path))
