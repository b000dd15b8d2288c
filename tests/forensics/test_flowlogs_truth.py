"""Generated flow logs with planted truth (benchmarks/flowlogs_gen.py) → exact findings.

The generator knows which flows it denied, by which rule, in which minutes, which flow went
one way from when, and when the API calls stopped. The analyser, run as the CLI, must find
exactly those, with their counts, and nothing else above info, for several seeds and shapes;
and the result must not depend on how many processes read the blobs.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from benchmarks.flowlogs_gen import ACL_DATA, DENY_RULE, Plan, generate
from forensics.cli import main
from forensics.flowlogs_agg import Aggregator
from forensics.flowlogs_model import Filter
from forensics.flowlogs_read import discover, iter_records
from forensics.flowlogs_run import analyse

PLANS = {
    "reverted": Plan(nics=5, hours=3, tuples_per_minute=60, busy=3, seed=1, deny_from=40,
                     deny_until=70, one_way_from=100, stop_at=130),
    "denial_at_start": Plan(nics=4, hours=2, tuples_per_minute=40, busy=2, seed=2,
                            deny_from=0, deny_until=15, one_way_from=60, stop_at=90,
                            redis_conns=3),
    "still_denied": Plan(nics=6, hours=2, tuples_per_minute=50, busy=4, seed=3, deny_from=80,
                         deny_until=10_000, one_way_from=30, stop_at=50),
}


def _iso(t: Any) -> str:
    if isinstance(t, datetime):
        return t.strftime("%Y-%m-%dT%H:%MZ")
    return str(t)[:16].replace(" ", "T") + "Z"


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    out = {}
    for name, plan in PLANS.items():
        d = tmp_path_factory.mktemp(name)
        out[name] = (d, generate(str(d), plan))
    return out


def _run(d: Path, *extra: str) -> dict[str, Any]:
    out = d / "out"
    rc = main(["flowlogs", str(d / "blobs"), "--events", str(d / "events.json"), "--out",
               str(out), "--json", *extra])
    assert rc == 0
    return json.loads((out / "flowlogs_semantic.json").read_text())


@pytest.mark.parametrize("name", list(PLANS))
def test_planted_truth_is_found_exactly(name: str, worlds: dict[str, Any],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    d, truth = worlds[name]
    plan = PLANS[name]
    doc = _run(d)
    capsys.readouterr()
    serious = [f for f in doc["findings"] if f["severity"] in ("critical", "high")]
    # the denial window: one finding, the rule, the window, the records, the pairs
    den = [f for f in doc["findings"] if f["id"] == "flow_denied"
           and f["rule"]["name"] == DENY_RULE]
    assert len(den) == 1
    f = den[0]
    assert f["rule"]["acl_id"] == ACL_DATA
    assert f["window"]["from"] == _iso(min(x["first_minute"] for x in truth["denied"]))
    assert f["window"]["until"] == _iso(max(x["last_minute"] for x in truth["denied"]))
    assert f["counts"]["flow_records"] == sum(x["tuples"] for x in truth["denied"])
    assert f["counts"]["flows"] == len(truth["denied"])
    ongoing = plan.deny_until >= plan.hours * 60
    assert f["window"]["ongoing"] is ongoing
    assert f["severity"] == ("critical" if ongoing else "high")
    if not ongoing:
        assert f["events"]["end"] is not None
        assert f["window"]["allowed_again_from"] is not None
    if plan.deny_from > 0:
        assert f["events"]["start"]["caller"] == "alice@contoso.com"
    # the one-way flow: its records, from its first minute
    ow = [f for f in doc["findings"] if f["id"] == "flow_one_way"]
    assert len(ow) == 1
    (one,) = truth["one_way"]
    assert ow[0]["counts"]["flow_records"] == one["tuples"]
    assert ow[0]["counts"]["packets_sent"] == 6 * one["tuples"]  # 6 packets each, none back
    assert ow[0]["window"]["from"] == _iso(one["first_minute"])
    assert ow[0]["flows"][0]["dst"] == "203.0.113.50"
    # the stop: its last minute, matched to the route write
    st = [f for f in doc["findings"] if f["id"] == "flow_sudden_stop"]
    assert len(st) == 1
    (stop,) = truth["stopped"]
    assert st[0]["window"]["last_active"] == _iso(stop["last_minute"])
    assert st[0]["severity"] == "high" and "routes/write" in st[0]["event"]["operation"]
    # nothing else is serious: scanners' denials are medium
    assert {f["id"] for f in serious} == {"flow_denied", "flow_one_way", "flow_sudden_stop"}
    assert len(serious) == 3
    assert doc["inputs"]["tuples"] == truth["tuples"]


def test_same_result_with_any_number_of_processes(worlds: dict[str, Any],
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    d, _truth = worlds["reverted"]
    one = _run(d, "--jobs", "1")
    three = _run(d, "--jobs", "3")
    capsys.readouterr()
    one["inputs"]["paths"] = three["inputs"]["paths"]
    assert json.dumps(one, sort_keys=True) == json.dumps(three, sort_keys=True)


def test_fast_loop_equals_checked_path(worlds: dict[str, Any]) -> None:
    """The inlined loop and the path that checks every tuple build the same aggregate."""
    d, _truth = worlds["still_denied"]
    aggs = []
    for slow in (False, True):
        agg = Aggregator(Filter())
        agg.force_slow = slow
        for blob in discover([str(d / "blobs")]):
            agg.add_blob(blob, iter_records(blob))
        aggs.append(agg)
    fast, slow_agg = aggs
    assert fast.counts == slow_agg.counts
    assert fast.flows.keys() == slow_agg.flows.keys()
    for key, p in fast.flows.items():
        q = slow_agg.flows[key]
        assert p[:7] == q[:7], key
        assert (p[7].origin, p[7].flags) == (q[7].origin, q[7].flags), key
        assert p[8] == q[8], key
        assert p[9:14] == q[9:14], key


def test_duplicate_blob_across_processes_is_read_once(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str],
                                                      worlds: dict[str, Any]) -> None:
    """The same blob under two names lands in two readers: the split is checked and the
    input read again in one process, which keeps the first copy only."""
    d, truth = worlds["denial_at_start"]
    blobs = discover([str(d / "blobs")])
    copy = tmp_path / "zz-copy.json"
    copy.write_bytes(Path(blobs[0].path).read_bytes())
    agg = analyse(discover([str(d / "blobs"), str(copy)]), Filter(), jobs=2)
    assert agg.counts["tuples"] == truth["tuples"]
    assert agg.counts["duplicate_records"] == sum(1 for _ in iter_records(blobs[0]))
    single = analyse(discover([str(d / "blobs")]), Filter(), jobs=1)
    assert agg.counts["tuples_matched"] == single.counts["tuples_matched"]
