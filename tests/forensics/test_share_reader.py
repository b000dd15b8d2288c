"""The chunked share reader (forensics/share_reader.py): the vector rule places every packet
where split.py's rule does, and records across chunk boundaries, in either byte order and at
either timestamp resolution, give the single-process output byte for byte."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from forensics import chunks, reader
from forensics.linklayer import L3_AT
from forensics.share_reader import shares_of_chunk
from forensics.split import share_of_record
from lab.pcap import PcapWriter

from .encap import encapsulate, fragmented, to_ipv6, truncated
from .tcpgen import generate
from .test_parallel import _outputs

# name -> (capture, whether its packets spread over the shares: tunnels, IPv6 extension
# headers, VLAN tags under SLL, and cut-off headers all go to share 0)
MIXES = {
    "ethernet": (lambda: generate(3, 20), True),
    "ipv6": (lambda: to_ipv6(generate(4, 20)), True),
    "ipv6_ext": (lambda: to_ipv6(generate(4, 20), ext=True), False),
    "vxlan": (lambda: encapsulate(generate(5, 20), "vxlan"), False),
    "vlan": (lambda: encapsulate(generate(6, 20), "vlan"), True),
    "qinq": (lambda: encapsulate(generate(12, 20), "qinq"), True),
    "sll": (lambda: encapsulate(generate(7, 20), "sll"), True),
    "sll_vlan": (lambda: encapsulate(generate(7, 20), "sll_vlan"), False),
    "raw": (lambda: encapsulate(generate(9, 20), "raw"), True),
    "raw_ip_12": (lambda: _as_linktype(encapsulate(generate(9, 20), "raw"), 12), True),
    "raw_ipv4_228": (lambda: _as_linktype(encapsulate(generate(9, 20), "raw"), 228), True),
    "raw_ipv6_229": (lambda: _as_linktype(encapsulate(to_ipv6(generate(4, 20)), "raw"), 229),
                     True),
    "fragmented": (lambda: fragmented(generate(8, 20), 600), True),
    "snap40": (lambda: truncated(generate(10, 20), 40), True),  # the ports are in
    "snap36": (lambda: truncated(generate(10, 20), 36), False),  # the ports are cut off
}


def _as_linktype(w: PcapWriter, linktype: int) -> PcapWriter:
    """The same packets under another raw-IP link type number."""
    w.linktype = linktype
    return w


def _records(blob: bytes) -> tuple[int, list[int], list[int]]:
    """Link type, record header offsets and captured lengths of a little-endian pcap."""
    linktype = struct.unpack_from("<I", blob, 20)[0]
    offs, caps, off = [], [], 24
    while off + 16 <= len(blob):
        caplen = struct.unpack_from("<I", blob, off + 8)[0]
        offs.append(off)
        caps.append(caplen)
        off += 16 + caplen
    return linktype, offs, caps


@pytest.mark.parametrize("name", sorted(MIXES))
@pytest.mark.parametrize("shares", [2, 3, 4])
def test_the_vector_rule_is_the_rule_of_split_py(name: str, shares: int) -> None:
    make, spread = MIXES[name]
    blob = make().to_bytes()
    linktype, offs, caps = _records(blob)
    if linktype not in L3_AT:
        pytest.skip(f"link type {linktype} is split by the analyzer, not the reader")
    got = shares_of_chunk(blob, np.array(offs, dtype=np.int64), np.array(caps, dtype=np.int64),
                          linktype, shares).tolist()
    want = [share_of_record(blob, o + 16, c, linktype, shares) for o, c in zip(offs, caps,
                                                                               strict=True)]
    assert got == want
    assert (len(set(got)) > 1) == spread


def _big_endian(blob: bytes) -> bytes:
    """The same pcap written by a big-endian machine."""
    magic, vmaj, vmin, zone, sig, snap, lt = struct.unpack_from("<IHHiIII", blob, 0)
    out = [struct.pack(">IHHiIII", magic, vmaj, vmin, zone, sig, snap, lt)]
    off = 24
    while off + 16 <= len(blob):
        sec, frac, caplen, wirelen = struct.unpack_from("<IIII", blob, off)
        out.append(struct.pack(">IIII", sec, frac, caplen, wirelen))
        out.append(blob[off + 16 : off + 16 + caplen])
        off += 16 + caplen
    return b"".join(out)


def _unmappable(*_args: object, **_kw: object) -> None:
    raise OSError("this file cannot be memory-mapped")


@pytest.mark.parametrize("variant", ["little", "big", "nanosecond", "unmapped"])
def test_records_across_chunk_boundaries_give_the_same_output(
        variant: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regular files are mapped and walked in windows of CHUNK bytes; a file that cannot be
    mapped (a pipe) is read into chunks: both give the single-process output."""
    if variant == "unmapped":
        monkeypatch.setattr(chunks.mmap, "mmap", _unmappable)
    w: PcapWriter = generate(21, 30)
    w.nanosecond = variant == "nanosecond"
    blob = w.to_bytes()
    if variant == "big":
        blob = _big_endian(blob)
    path = tmp_path / f"{variant}.pcap"
    path.write_bytes(blob)
    one = _outputs(path, 1)
    # chunks of 4 KB: hundreds of chunks, many records cut by a chunk's end
    monkeypatch.setattr(reader, "CHUNK", 4096)
    assert len(blob) > 50 * 4096
    assert _outputs(path, 2) == one
    assert _outputs(path, 3) == one


def test_a_corrupt_record_header_after_many_chunks_stops_every_share_alike(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blob = bytearray(generate(22, 30).to_bytes())
    _lt, offs, _caps = _records(bytes(blob))
    bad = offs[len(offs) * 2 // 3]
    struct.pack_into("<I", blob, bad + 8, reader.MAX_RECORD + 1)
    path = tmp_path / "corrupt.pcap"
    path.write_bytes(bytes(blob))
    one = _outputs(path, 1)
    assert "corrupt record header" in one
    monkeypatch.setattr(reader, "CHUNK", 4096)
    assert _outputs(path, 2) == one
    # and a file cut in the middle of a record
    path.write_bytes(bytes(blob[: bad - 7]))
    one = _outputs(path, 1)
    assert "capture is truncated" in one
    assert _outputs(path, 3) == one


def test_a_small_capture_never_loads_numpy(tmp_path: Path) -> None:
    """numpy (~50 ms to load) is for parallel runs and comparisons: the CLI on a capture below
    the parallel threshold runs without it."""
    import subprocess
    import sys

    path = tmp_path / "small.pcap"
    generate(3, 10).write(str(path))
    code = ("import sys\nfrom forensics.cli import main\n"
            f"assert main([{str(path)!r}, '--out', {str(tmp_path)!r}]) == 0\n"
            "print('numpy' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[2], timeout=60, check=True)
    assert done.stdout.strip().splitlines()[-1] == "False", done.stdout + done.stderr


@pytest.mark.parametrize("linktype", [12, 14, 229])
def test_raw_ip_link_types_are_dealt_and_give_the_same_output(
        linktype: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The raw-IP link types (IPv4 and IPv6 mixed) take the dealt path, not the fallback in
    which every share reads the file itself (``run_share``)."""
    from forensics import parallel
    from forensics.parallel import analyze_parallel

    w = encapsulate(generate(24, 20), "raw")
    w.packets += encapsulate(to_ipv6(generate(25, 20)), "raw").packets
    w.packets.sort(key=lambda p: p[0])
    path = tmp_path / f"raw{linktype}.pcap"
    _as_linktype(w, linktype).write(str(path))
    with monkeypatch.context() as m:
        m.setattr(parallel, "run_share", _unmappable)  # the fallback would raise here
        merged = analyze_parallel(str(path), 2)
    assert merged is not None and len(merged.flows) > 20
    assert _outputs(path, 2) == _outputs(path, 1)
