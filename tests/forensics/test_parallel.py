"""Parallel analysis (issue #21): the same output, byte for byte, with 1 process or 4."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.forensics_gen import two_ended_pair
from forensics import parallel
from forensics.cli import run
from forensics.engine import analyze_capture
from forensics.report import executive_summary_md, forensic_report_md
from forensics.semantic import build_semantic
from lab.pcap import PcapWriter, pcapng_bytes

from .conftest import PCAPS
from .encap import duplicated, encapsulate, fragmented, to_ipv6, truncated
from .tcpgen import generate

CAPTURES = Path(__file__).parent / "captures"
REFERENCE = sorted(PCAPS.glob("*.pcap")) + sorted(CAPTURES.glob("*.pcap"))


def _outputs(path: Path, jobs: int) -> str:
    doc = build_semantic(analyze_capture(str(path), jobs), str(path), frame_flags=True)
    return "\n".join((json.dumps(doc, indent=1, default=str), forensic_report_md(doc, "x"),
                      executive_summary_md(doc, "x")))


@pytest.mark.parametrize("path", REFERENCE, ids=lambda p: p.name)
def test_reference_captures_identical_with_4_jobs(path: Path) -> None:
    assert _outputs(path, 4) == _outputs(path, 1)


def _write(w: PcapWriter, path: Path) -> Path:
    w.write(str(path))
    return path


GENERATED = {
    "tcpgen": lambda: generate(3),
    "ipv6_ext": lambda: to_ipv6(generate(4, 20), ext=True),
    "vxlan": lambda: encapsulate(generate(5, 20), "vxlan"),
    "gre": lambda: encapsulate(generate(6, 20), "gre"),
    "sll2": lambda: encapsulate(generate(7, 20), "sll2"),
    "qinq": lambda: encapsulate(generate(12, 20), "qinq"),
    "ppp": lambda: encapsulate(generate(13, 20), "ppp"),
    "ipip": lambda: encapsulate(generate(14, 20), "ipip"),
    "mpls": lambda: encapsulate(generate(15, 20), "mpls"),
    "fragmented": lambda: fragmented(generate(8, 20), 600),
    "duplicated": lambda: duplicated(generate(9, 20), 50_000),
    "snap54": lambda: truncated(generate(10, 20), 54),
}


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_generated_captures_identical_with_4_jobs(name: str, tmp_path: Path) -> None:
    path = _write(GENERATED[name](), tmp_path / f"{name}.pcap")
    assert _outputs(path, 4) == _outputs(path, 1)


def test_pcapng_is_split_by_the_analyzer_and_merged_exactly(tmp_path: Path) -> None:
    w = to_ipv6(generate(16, 30))
    w.packets += generate(17, 30).packets  # IPv4 and IPv6 flows in one pcapng
    w.packets.sort(key=lambda p: p[0])
    path = tmp_path / "mixed.pcapng"
    path.write_bytes(pcapng_bytes([(ts, data) for ts, data, _wire in w.packets]))
    assert parallel.analyze_parallel(str(path), 3) is not None
    assert _outputs(path, 3) == _outputs(path, 1)


def test_two_ended_pair_is_split_and_merged_exactly(tmp_path: Path) -> None:
    a, b = two_ended_pair(str(tmp_path), flows=120)
    for path in (a, b):
        shares = [parallel.run_share(path, i, 3) for i in range(3)]
        flows = [len(s.flows) for s in shares if s is not None]
        assert len(flows) == 3 and min(flows) > 20  # every share had real work
        assert parallel.analyze_parallel(path, 3) is not None  # merged, not redone
        assert _outputs(Path(path), 3) == _outputs(Path(path), 1)
    (tmp_path / "p").mkdir()
    (tmp_path / "s").mkdir()
    code = run([a, "--semantic-dir", str(tmp_path / "p"), "--report-dir", str(tmp_path / "p"),
                "--compare", b, "--jobs", "2"])
    assert code == 0
    code = run([a, "--semantic-dir", str(tmp_path / "s"), "--report-dir", str(tmp_path / "s"),
                "--compare", b, "--jobs", "1"])
    assert code == 0
    for f in sorted((tmp_path / "s").iterdir()):
        assert (tmp_path / "p" / f.name).read_bytes() == f.read_bytes()


def test_a_flow_seen_by_two_shares_is_redone_in_one_process(tmp_path: Path) -> None:
    """The same connection plain and inside a VXLAN tunnel: the split cannot hold."""
    plain = generate(11, 12)
    tunnelled = encapsulate(plain, "vxlan")
    mixed = PcapWriter()
    for i, (pkt, tpkt) in enumerate(zip(plain.packets, tunnelled.packets, strict=True)):
        ts, data, wire = pkt if i % 2 else tpkt
        mixed.add(ts, data, wire)
    path = _write(mixed, tmp_path / "mixed.pcap")
    assert parallel.analyze_parallel(str(path), 4) is None
    assert _outputs(path, 4) == _outputs(path, 1)


def test_jobs_follow_cores_above_the_size_threshold(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(generate(1, 5), tmp_path / "small.pcap")
    assert parallel.plan_jobs(str(path), None) == 1  # small: one process, nothing slower
    assert parallel.plan_jobs(str(path), 3) == 3  # --jobs wins
    monkeypatch.setattr(parallel, "PARALLEL_MIN_BYTES", 0)
    assert parallel.plan_jobs(str(path), None) == parallel.available_cores()


@pytest.mark.parametrize("value", ["0", "-2", "two", "1000"])
def test_bad_jobs_value_is_a_usage_error(value: str, tmp_path: Path) -> None:
    path = _write(generate(1, 2), tmp_path / "c.pcap")
    with pytest.raises(SystemExit) as exc:
        run([str(path), "--semantic-dir", str(tmp_path), "--report-dir", str(tmp_path),
             "--jobs", value])
    assert exc.value.code == 2


def test_mutated_captures_give_the_same_result_with_3_jobs(tmp_path: Path) -> None:
    """Corrupt records, cut files, broken headers: the split either holds or is redone."""
    import random

    from forensics.errors import ForensicsError

    from .test_fuzz import _mutate, _seeds

    rng = random.Random(21)
    seeds = _seeds()
    path = tmp_path / "fuzz.pcap"
    for _ in range(60):
        path.write_bytes(_mutate(rng, rng.choice(seeds)))
        try:
            one = _outputs(path, 1)
        except ForensicsError:
            with pytest.raises(ForensicsError):
                _outputs(path, 3)
            continue
        assert _outputs(path, 3) == one


def test_a_share_that_dies_is_redone_in_one_process(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """A share whose analysis breaks (here: it cannot read what share 0 dealt it) sends no
    result; the capture is analysed again in one process, with the same output."""
    from forensics import share_reader

    path = _write(generate(23, 30), tmp_path / "dies.pcap")
    one = _outputs(path, 1)

    def broken(*_args: object) -> object:
        raise OSError("the spool cannot be read")

    monkeypatch.setattr(share_reader, "dealt_records", broken)
    assert parallel.analyze_parallel(str(path), 2) is None
    assert _outputs(path, 2) == one
