"""Frame-by-frame agreement with tshark 4.0 on real captures (captures by Chris Sanders).

The truth files were produced by tshark 4.0.17; a single differing frame fails the test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from forensics.cli import main
from forensics.engine import analyze_capture
from forensics.tcp_analysis import flag_names

from .conftest import PCAPS, truth_files

CASES = truth_files()


@pytest.mark.skipif(not CASES, reason="shared/pcaps/truth not found beside the repository")
@pytest.mark.parametrize("truth_path", CASES, ids=[p.stem for p in CASES])
def test_tcp_flags_dns_icmp_match_tshark(truth_path: Path) -> None:
    truth = json.loads(truth_path.read_text())
    a = analyze_capture(str(PCAPS / truth["file"]))
    mine = {str(k): sorted(flag_names(v)) for k, v in a.frame_flags.items()}
    theirs = {k: sorted(v) for k, v in truth["tcp_analysis_frames"].items()}
    mismatches = {k: (mine.get(k), theirs.get(k)) for k in set(mine) | set(theirs)
                  if mine.get(k) != theirs.get(k)}
    assert mismatches == {}
    assert a.packets == truth["packets"]
    assert a.tcp_resets == truth["tcp_resets"]
    assert {str(k): v for k, v in a.dns.rcodes.items()} == truth["dns_rcodes"]
    assert a.icmp.type_code == truth["icmp_type_code"]


@pytest.mark.skipif(not CASES, reason="shared/pcaps/truth not found beside the repository")
def test_cli_frame_flags_and_totals_match_truth(tmp_path: Path) -> None:
    truth = json.loads((PCAPS / "truth" / "http_espn_fail.json").read_text())
    rc = main([str(PCAPS / "http_espn_fail.pcap"), "--semantic-dir", str(tmp_path),
               "--report-dir", str(tmp_path), "--frame-flags"])
    assert rc == 0
    doc = json.loads((tmp_path / "http_espn_fail_semantic.json").read_text())
    got = {k: sorted(v) for k, v in doc["frame_flags"].items()}
    assert got == {k: sorted(v) for k, v in truth["tcp_analysis_frames"].items()}
    nonzero = {k: v for k, v in doc["tcp_analysis"].items() if v}
    assert nonzero == truth["tcp_analysis_counts"]
    assert doc["tcp_resets"] == truth["tcp_resets"]
    assert doc["dns"]["rcode_numbers"] == truth["dns_rcodes"]
