"""Thousands of mutated captures: the engine never crashes, hangs or raises anything untyped."""

from __future__ import annotations

import random
import time
from pathlib import Path

from forensics.engine import analyze_capture
from forensics.errors import ForensicsError
from forensics.semantic import build_semantic
from lab.pcap import PcapWriter, pcapng_bytes

from .encap import encapsulate
from .scenario import ethernet_packets

MUTATIONS = 2500


def _seeds() -> list[bytes]:
    w = PcapWriter()
    for t, p in ethernet_packets():
        w.add(t, p)
    # the decapsulation paths too: length fields inside tunnels and link headers get mutated
    wrapped = [encapsulate(w, name).to_bytes()
               for name in ("vxlan", "geneve", "gre_eth", "mpls", "pppoe", "radiotap", "ppp")]
    return [w.to_bytes(), pcapng_bytes(ethernet_packets()), *wrapped]


def _mutate(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        op = rng.random()
        pos = rng.randrange(len(b)) if b else 0
        if op < 0.5 and b:
            b[pos] = rng.randrange(256)
        elif op < 0.65:
            del b[pos : pos + rng.randint(1, 40)]
        elif op < 0.8:
            b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 20)))
        elif op < 0.9 and len(b) > 28:
            # blow up a length field
            b[pos : pos + 4] = rng.choice([b"\xff\xff\xff\xff", b"\x00\x00\x00\x00",
                                           b"\xff\xff\x00\x00"])
        else:
            b = b[: rng.randrange(len(b) + 1)]
    return bytes(b)


def test_mutated_captures_never_crash(tmp_path: Path) -> None:
    rng = random.Random(20240501)
    seeds = _seeds()
    path = tmp_path / "fuzz.pcap"
    # CPU time, not wall time: a hang is a loop that burns CPU, and a busy CI machine (parallel
    # workers on two cores) stretches wall time without the analysis doing any more work.
    started = time.thread_time()
    analysed = rejected = 0
    for _ in range(MUTATIONS):
        path.write_bytes(_mutate(rng, rng.choice(seeds)))
        t0 = time.thread_time()
        try:
            a = analyze_capture(str(path))
            build_semantic(a, str(path), frame_flags=True)
            analysed += 1
        except ForensicsError:
            rejected += 1
        assert time.thread_time() - t0 < 2.0, "one capture took too long: a hang"
    assert analysed + rejected == MUTATIONS
    assert analysed > MUTATIONS // 2  # most mutations still parse partially
    assert time.thread_time() - started < 30
