"""Throughput of the safety gate: classify 10,000 mixed commands, redact 10 MB of output.

Run: .venv/bin/python benchmarks/safety.py
Targets: classify 10,000 commands in under 2 s; redact at 2 MB/s or more. Each line prints the
wall time and the process's CPU time: on a machine shared with other work the wall time varies
with the load, the CPU time much less.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.safety import classify, redact, truncate  # noqa: E402

COMMANDS = [
    "ping -c 4 10.0.0.4", "dig +short redis.privatelink.redis.cache.windows.net",
    "ss -tlnp", "curl -s -o /dev/null -w '%{http_code}' https://example.com/health",
    "az network nsg rule list -g prod-rg --nsg-name web-nsg -o json",
    "az network watcher packet-capture list -g rg --query \"[?starts_with(name, 'ghost_')]\"",
    "az storage account keys list -g rg -n sa", "az account get-access-token",
    "curl http://169.254.169.254/metadata/instance", "curl -sO https://e.com/x",
    "ip r a 10.0.0.0/8 via 10.0.0.1", "rm -rf /", "ping -c 1 x; id", "p'in'g -c 1 x",
    "curl http://0xa9fea9fe/", "traceroute -n 10.0.0.4", "mtr -r -c 5 example.com",
    "az vm run-command invoke -g rg -n vm --command-id X", "tcpdump -i eth0 -c 10 port 443",
    "ping\u200b -c 1 x", "ghost-forensics {d}/c.pcap --semantic-dir {d} --report-dir {d}",
    "cat {d}/report.md", "cat /etc/passwd", "nslookup example.com 168.63.129.16",
]


def mixed_output(size: int, rng: random.Random) -> str:
    key = base64.b64encode(hashlib.sha512(b"bench").digest()).decode()
    blocks = [
        "64 bytes from 10.0.0.4: icmp_seq=1 ttl=64 time=0.045 ms\n",
        json.dumps({"id": "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/"
                    "rg/providers/Microsoft.Network/virtualNetworks/vnet", "etag":
                    "W/\"8f2d1c3e\"", "addressPrefixes": ["10.0.0.0/16"]}) + "\n",
        f'{{"keyName": "key1", "value": "{key}"}}\n',
        "tcp LISTEN 0 4096 0.0.0.0:22 0.0.0.0:* users:((\"sshd\",pid=812,fd=3))\n",
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlc2ln\n",
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  capture.pcap\n",
        "password=hunter2 user=admin\n",
        "link/ether 00:0d:3a:12:34:56 brd ff:ff:ff:ff:ff:ff\n",
    ]
    out: list[str] = []
    total = 0
    while total < size:
        block = rng.choice(blocks)
        out.append(block)
        total += len(block)
    return "".join(out)


def main() -> None:
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp)
        (data / "report.md").write_text("# r\n")
        cmds = [rng.choice(COMMANDS).replace("{d}", tmp) for _ in range(10_000)]
        start, cpu = time.perf_counter(), time.process_time()
        verdicts = [classify(c, data_dir=data) for c in cmds]
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    safe = sum(v.is_safe for v in verdicts)
    print(f"classify: {len(cmds)} commands in {elapsed:.3f} s = {len(cmds) / elapsed:,.0f} "
          f"commands/s ({safe} SAFE; cpu {cpu:.3f} s)")

    text = mixed_output(10 * 1024 * 1024, rng)
    megabytes = len(text.encode()) / (1024 * 1024)
    start, cpu = time.perf_counter(), time.process_time()
    redacted = redact(text)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"redact:   {megabytes:.1f} MB in {elapsed:.3f} s = {megabytes / elapsed:.1f} MB/s "
          f"({redacted.count('[REDACTED:')} redactions; cpu {cpu:.3f} s = "
          f"{megabytes / cpu:.1f} MB/s)")

    start = time.perf_counter()
    result = truncate(redacted)
    elapsed = time.perf_counter() - start
    print(f"truncate: {megabytes:.1f} MB -> {len(result.text)} chars in {elapsed:.3f} s")


if __name__ == "__main__":
    main()
