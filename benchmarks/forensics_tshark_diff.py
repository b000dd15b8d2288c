"""Differential run of our TCP analysis against tshark on random synthetic conversations.

    .venv/bin/python benchmarks/forensics_tshark_diff.py [--seeds 10] [--start 0] [--show 5]
                                                         [--keep DIR] [--no-reuse]

For each seed, generates a capture (tests/forensics/tcpgen.py), runs both analysers and
compares ``tcp.analysis.*`` frame by frame. Prints per seed the differing frames (the first
``--show`` of them), then per flag how many frames only we set and only tshark sets. With
``--keep`` the captures are written to DIR for inspection. Exit status 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.forensics.tcpgen import diff_seed, tshark_available  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--show", type=int, default=5, help="differing frames printed per seed")
    ap.add_argument("--keep", metavar="DIR", help="write the captures to DIR")
    ap.add_argument("--no-reuse", action="store_true",
                    help="no SYNs with a new ISN inside a running conversation")
    args = ap.parse_args()
    if not tshark_available():
        print("tshark is not on PATH", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    packets = frames = 0
    totals: dict[str, tuple[int, int]] = {}
    for seed in range(args.start, args.start + args.seeds):
        d = diff_seed(seed, args.keep, port_reuse=not args.no_reuse)
        packets += d.packets
        frames += len(d.frames)
        for name, (extra, missing) in d.per_flag().items():
            e0, m0 = totals.get(name, (0, 0))
            totals[name] = (e0 + extra, m0 + missing)
        if d.frames:
            shown = [f"{k}: ours={sorted(a)} tshark={sorted(b)}"
                     for k, (a, b) in list(d.frames.items())[: args.show]]
            print(f"seed {seed}: {len(d.frames)} frames differ; " + "; ".join(shown))
    print(f"\n{args.seeds} seeds, {packets} packets, {frames} differing frames "
          f"({time.perf_counter() - t0:.1f} s)")
    if totals:
        print(f"{'flag':<26}{'only ours':>10}{'only tshark':>12}")
        for name, (extra, missing) in sorted(totals.items(), key=lambda kv: -sum(kv[1])):
            print(f"{name:<26}{extra:>10}{missing:>12}")
    return 1 if frames else 0


if __name__ == "__main__":
    sys.exit(main())
