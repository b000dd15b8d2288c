"""Start-up time of `ghost --help` (heavy SDKs must be imported lazily).

    .venv/bin/python benchmarks/startup.py [--runs 15]

Target: well under half a second.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    exe = shutil.which("ghost", path=str(Path(sys.executable).parent)) or "ghost"
    times = []
    for _ in range(args.runs):
        start = time.perf_counter()
        subprocess.run([exe, "--help"], check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    print(f"ghost --help: median {statistics.median(times) * 1000:.0f} ms, "
          f"min {min(times) * 1000:.0f} ms, max {max(times) * 1000:.0f} ms over {args.runs} runs "
          f"(target < 500 ms)")


if __name__ == "__main__":
    main()
