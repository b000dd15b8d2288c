"""Benchmark of the forensic engine on a generated capture.

    .venv/bin/python benchmarks/forensics.py [--packets 1000000] [--compare] [--keep PATH]

Prints packets/s and peak RSS of the single-capture analysis, tshark's time on the same
file (``tshark -q -z expert``) when tshark is installed, and with --compare the time of a
two-ended comparison of two such captures.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from forensics.engine import analyze_capture  # noqa: E402
from forensics.semantic import build_semantic  # noqa: E402

ETH = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00"


def generate(path: str, packets: int, seed: int = 1, drop_every: int = 0,
             ts_shift_ns: int = 0) -> int:
    """Write a pcap of ``packets`` packets: 200 concurrent TCP flows (data + ACKs) plus DNS.

    ``drop_every`` > 0 omits every n-th data segment (to emulate loss at the other end);
    returns the bytes written.
    """
    rng = random.Random(seed)
    hdr = struct.Struct("<IIII")
    ip = struct.Struct("!BBHHHBBH4s4s")
    tcp = struct.Struct("!HHIIBBHHH")
    flows = []
    for i in range(200):
        flows.append([bytes([10, 0, i // 250, i % 250 + 1]), bytes([10, 1, 0, 5]),
                      30000 + i, 443, rng.randrange(1 << 32), rng.randrange(1 << 32)])
    payload = bytes(1400)
    t = 1_700_000_000 * 1_000_000_000 + ts_shift_ns
    written = 0
    ipid = 0
    with open(path, "wb", buffering=8 << 20) as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1))
        n = 0
        out = []
        while n < packets:
            f = flows[(n // 2) % 200]
            t += 7_000
            ipid = (ipid + 1) & 0xFFFF
            if n % 2 == 0:  # data server -> client
                seg = tcp.pack(443, f[2], f[5], f[4], 0x50, 0x18, 2000, 0, 0) + payload
                f[5] = (f[5] + 1400) & 0xFFFFFFFF
                iph = ip.pack(0x45, 0, 20 + len(seg), ipid, 0x4000, 60, 6, 0, f[1], f[0])
                pkt = ETH + iph + seg
                if drop_every and (n // 2) % drop_every == 0:
                    n += 1
                    continue
            else:  # ACK client -> server
                seg = tcp.pack(f[2], 443, f[4], f[5], 0x50, 0x10, 2000, 0, 0)
                pkt = ETH + ip.pack(0x45, 0, 40, ipid, 0x4000, 64, 6, 0, f[0], f[1]) + seg
            sec, rem = divmod(t, 1_000_000_000)
            out.append(hdr.pack(sec, rem // 1000, len(pkt), len(pkt)))
            out.append(pkt)
            n += 1
            if len(out) > 20000:
                data = b"".join(out)
                fh.write(data)
                written += len(data)
                out = []
        data = b"".join(out)
        fh.write(data)
        written += len(data)
    return written + 24


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--packets", type=int, default=1_000_000)
    ap.add_argument("--compare", action="store_true")
    ap.add_argument("--keep", help="write the capture here instead of a temp dir")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ghost-bench-")
    path = args.keep or os.path.join(tmp, "bench.pcap")
    t0 = time.perf_counter()
    size = generate(path, args.packets)
    print(f"generated {args.packets} packets, {size / 1e6:.0f} MB in "
          f"{time.perf_counter() - t0:.1f} s: {path}")
    t0 = time.perf_counter()
    a = analyze_capture(path)
    doc = build_semantic(a, path)
    dt = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"ghost-forensics: {a.packets} packets in {dt:.2f} s = {a.packets / dt:,.0f} packets/s;"
          f" peak RSS {rss:.0f} MB; findings {len(doc['findings'])}")
    if shutil.which("tshark"):
        t0 = time.perf_counter()
        subprocess.run(["tshark", "-n", "-q", "-r", path, "-z", "expert"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        tt = time.perf_counter() - t0
        print(f"tshark -q -z expert: {tt:.2f} s = {a.packets / tt:,.0f} packets/s")
    else:
        print("tshark not installed: no comparison")
    if args.compare:
        from forensics.compare import compare_captures

        path_b = os.path.join(tmp, "bench_b.pcap")
        generate(path_b, args.packets, drop_every=1000, ts_shift_ns=3_000_000)
        t0 = time.perf_counter()
        cmp = compare_captures(path, path_b)
        dt = time.perf_counter() - t0
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        # B is A's own file with every 1000th data segment left out and a 3 ms clock shift
        # (many hosts, one capture point: a timing run, not a two-ended loss scenario).
        if cmp["status"] != "ok":
            print(f"compare: {dt:.2f} s; refused: {cmp['reason']}")
            return
        unmatched = (cmp["lost_a_to_b"] + cmp["lost_b_to_a"]
                     + cmp["unsent_but_received_at_a"] + cmp["unsent_but_received_at_b"]
                     + cmp["not_addressed_to_the_other_side"])
        print(f"compare: {dt:.2f} s; {unmatched} packets of A without a match in B "
              f"({args.packets // 2000} left out), offset {cmp['clock_offset_ms']} ms; "
              f"peak RSS {rss:.0f} MB")
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
