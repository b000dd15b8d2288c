"""Make the real-kernel captures under this directory (run by hand as root, never in CI).

    python3 tests/forensics/captures/make_captures.py [SCENARIO ...]

Three network namespaces made here and removed at the end: a client (10.9.1.2), a router
(10.9.1.1 / 10.9.2.1, iptables in FORWARD) and a server (10.9.2.2, plus 10.9.2.53 for a DNS
server that never answers). Offloads are off on every veth so the captures show wire-sized
segments. The server runs small python servers (bulk TCP on 8080, 8443 and 9000, DNS on
UDP 53); each scenario sets the router's rules, runs a client, captures with tcpdump at the
client (``NAME.pcap``) and, for two-ended scenarios, at the server too (``NAME_server.pcap``),
and records what it did and the router's counters in ``truth.json``.
No traffic leaves the namespaces.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
C, R, S = "fxc", "fxr", "fxs"
CLIENT, SERVER, DEAD_DNS = "10.9.1.2", "10.9.2.2", "10.9.2.53"
SNAPLEN = 128


def sh(*cmd: str, check: bool = True) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True)
    if check and out.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stderr.strip()}")
    return out.stdout


def ns(name: str, *cmd: str, check: bool = True) -> str:
    return sh("ip", "netns", "exec", name, *cmd, check=check)


# ----------------------------------------------------------------------------- topology
def teardown() -> None:
    for n in (C, R, S):
        sh("ip", "netns", "del", n, check=False)


def setup() -> None:
    teardown()
    for n in (C, R, S):
        sh("ip", "netns", "add", n)
        ns(n, "ip", "link", "set", "lo", "up")
        ns(n, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")
        ns(n, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1")
    sh("ip", "link", "add", "c0", "netns", C, "type", "veth", "peer", "name", "rc", "netns", R)
    sh("ip", "link", "add", "s0", "netns", S, "type", "veth", "peer", "name", "rs", "netns", R)
    for n, dev, addr in ((C, "c0", "10.9.1.2/24"), (R, "rc", "10.9.1.1/24"),
                         (R, "rs", "10.9.2.1/24"), (S, "s0", "10.9.2.2/24")):
        ns(n, "ip", "addr", "add", addr, "dev", dev)
        ns(n, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off", check=False)
        ns(n, "ip", "link", "set", dev, "up")
    ns(S, "ip", "addr", "add", "10.9.2.53/24", "dev", "s0")
    ns(C, "ip", "route", "add", "default", "via", "10.9.1.1")
    ns(S, "ip", "route", "add", "default", "via", "10.9.2.1")
    ns(R, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    for n in (C, S):  # the kernel's defaults, stated: no MTU probing, SACK and timestamps on
        ns(n, "sysctl", "-qw", "net.ipv4.tcp_mtu_probing=0")


def flush_router() -> None:
    ns(R, "iptables", "-F")
    ns(R, "iptables", "-Z")
    ns(R, "ip", "link", "set", "rc", "mtu", "1500")


def counters() -> list[dict[str, Any]]:
    """Every rule of the router's FORWARD and OUTPUT chains with its packet counter."""
    out = []
    for chain in ("FORWARD", "OUTPUT"):
        rules = ns(R, "iptables", "-S", chain).splitlines()[1:]
        stats = ns(R, "iptables", "-L", chain, "-v", "-n", "-x").splitlines()[2:]
        for rule, line in zip(rules, stats, strict=True):
            out.append({"rule": rule, "packets": int(line.split()[0])})
    return out


# ----------------------------------------------------------------------------- servers
def serve() -> None:
    """Inside the server namespace: bulk TCP servers and the DNS responder, until killed."""

    def conn(c: socket.socket) -> None:
        f = c.makefile("rb")
        try:
            for line in f:
                words = line.split()
                if not words:
                    continue
                if words[0] == b"GET":
                    c.sendall(b"x" * int(words[1]))
                elif words[0] == b"PUT":
                    f.read(int(words[1]))
                    c.sendall(b"OK\n")
        except OSError:
            pass
        finally:
            c.close()

    def tcp(port: int) -> None:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        s.listen(64)
        while True:
            c, _ = s.accept()
            threading.Thread(target=conn, args=(c,), daemon=True).start()

    for port in (8080, 8443, 9000):
        threading.Thread(target=tcp, args=(port,), daemon=True).start()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.bind((SERVER, 53))
    while True:
        q, peer = u.recvfrom(512)
        name, end = _qname(q)
        rcode = 3 if name.endswith("missing.lab") else 2 if name.endswith("broken.lab") else 0
        flags = 0x8180 | rcode
        ans = b""
        if rcode == 0:
            ans = b"\xc0\x0c" + struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(SERVER)
        u.sendto(q[:2] + struct.pack("!HHHHH", flags, 1, 1 if ans else 0, 0, 0)
                 + q[12:end] + ans, peer)


def _qname(q: bytes) -> tuple[str, int]:
    p, labels = 12, []
    while q[p]:
        labels.append(q[p + 1 : p + 1 + q[p]].decode())
        p += 1 + q[p]
    return ".".join(labels), p + 5


# ----------------------------------------------------------------------------- clients
def dns_query(server: str, name: str, tries: int = 3, wait: float = 1.0) -> int | None:
    """A stub resolver: ask, wait, ask again with the same id (as glibc does)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(wait)
    qid = (hash(name) & 0xFFFF) or 1
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    q += b"".join(bytes([len(x)]) + x.encode() for x in name.split(".")) + b"\x00\x00\x01\x00\x01"
    for _ in range(tries):
        s.sendto(q, (server, 53))
        try:
            r = s.recv(512)
            return r[3] & 0x0F
        except TimeoutError:
            continue
    return None


def fetch(port: int, *requests: bytes, rcvbuf: int = 0, pause: float = 0.0,
          timeout: float = 10.0) -> str:
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.settimeout(timeout)
    try:
        s.connect((SERVER, port))
        for req in requests:
            s.sendall(req)
            words = req.split()
            want = int(words[1]) if words[0] == b"GET" else 3
            if pause:
                time.sleep(pause)
            got = 0
            while got < want:
                chunk = s.recv(65536)
                if not chunk:
                    return "closed"
                got += len(chunk)
        return "ok"
    except OSError as exc:
        return type(exc).__name__
    finally:
        s.close()


def connect(port: int, timeout: float) -> str:
    s = socket.socket()
    s.settimeout(timeout)
    try:
        s.connect((SERVER, port))
        return "connected"
    except OSError as exc:
        return type(exc).__name__
    finally:
        s.close()


CLIENTS: dict[str, Callable[[], Any]] = {
    "healthy": lambda: [dns_query(SERVER, "app.lab"), fetch(8080, b"GET 20000\n", b"GET 5000\n"),
                        fetch(8443, b"PUT 3000\n" + b"y" * 3000)],
    "silent_drop": lambda: [connect(8081, 4.0)],
    "refused": lambda: [connect(8082, 2.0) for _ in range(3)],
    "icmp_unreachable": lambda: [connect(8083, 2.0) for _ in range(3)],
    "random_loss": lambda: [fetch(8080, b"GET 300000\n")],
    "two_ended_loss": lambda: [fetch(8080, b"PUT 250000\n" + b"y" * 250000, b"GET 250000\n")],
    "injected_reset": lambda: [fetch(8080, b"GET 4000\n", b"GET 4000 FORBIDDEN\n")],
    "mtu_blackhole": lambda: [fetch(8080, b"GET 20000 " + b"p" * 190 + b"\n", timeout=6.0)],
    "dns_nxdomain": lambda: [dns_query(SERVER, "app.lab"), dns_query(SERVER, "db.missing.lab")],
    "dns_servfail": lambda: [dns_query(SERVER, "app.lab"), dns_query(SERVER, "api.broken.lab")],
    "dns_unanswered": lambda: [dns_query(DEAD_DNS, "app.lab"), dns_query(DEAD_DNS, "db.lab")],
    "zero_window": lambda: [fetch(8080, b"GET 400000\n", rcvbuf=4096, pause=2.5)],
    "scan": lambda: [connect(p, 0.5) for p in range(7950, 8250)]
    + [connect(p, 0.5) for p in (8443, 9000)],
}

# router rules per scenario (appended to FORWARD unless the chain is named)
RULES: dict[str, list[list[str]]] = {
    "silent_drop": [["-A", "FORWARD", "-p", "tcp", "--dport", "8081", "-j", "DROP"]],
    "icmp_unreachable": [["-A", "FORWARD", "-p", "tcp", "--dport", "8083", "-j", "REJECT",
                          "--reject-with", "icmp-host-unreachable"]],
    "random_loss": [["-A", "FORWARD", "-i", "rs", "-p", "tcp", "--sport", "8080", "-m", "length",
                     "--length", "200:", "-m", "statistic", "--mode", "random", "--probability",
                     "0.04", "-j", "DROP"]],
    "two_ended_loss": [
        ["-A", "FORWARD", "-i", "rc", "-m", "statistic", "--mode", "random", "--probability",
         "0.05", "-j", "DROP"],
        ["-A", "FORWARD", "-i", "rs", "-m", "statistic", "--mode", "random", "--probability",
         "0.05", "-j", "DROP"]],
    "injected_reset": [["-A", "FORWARD", "-p", "tcp", "--dport", "8080", "-m", "string",
                        "--string", "FORBIDDEN", "--algo", "bm", "-j", "REJECT",
                        "--reject-with", "tcp-reset"]],
    "mtu_blackhole": [["-A", "OUTPUT", "-p", "icmp", "--icmp-type", "fragmentation-needed",
                       "-j", "DROP"]],
    "dns_unanswered": [["-A", "FORWARD", "-p", "udp", "-d", DEAD_DNS, "--dport", "53",
                        "-j", "DROP"]],
}

EXPECT_FIRST: dict[str, str | dict[str, str]] = {
    "healthy": "no_problem_seen", "silent_drop": "tcp_syn_unanswered",
    "refused": "tcp_connection_refused", "icmp_unreachable": "icmp_unreachable",
    "random_loss": "tcp_retransmissions",
    # two-ended: the first finding of each capture alone, then of the client --compare server
    "two_ended_loss": {"client": "tcp_retransmissions", "server": "tcp_retransmissions",
                       "compare": "two_ended_comparison"},
    "injected_reset": {"client": "tcp_injected_reset", "server": "no_problem_seen",
                       "compare": "two_ended_comparison"},
    "mtu_blackhole": {"client": "mtu_blackhole", "server": "mtu_blackhole",
                      "compare": "two_ended_comparison"},
    "dns_nxdomain": "dns_nxdomain", "dns_servfail": "dns_servfail",
    "dns_unanswered": "dns_unanswered", "zero_window": "tcp_zero_window", "scan": "port_scan",
}
TWO_ENDED = {"two_ended_loss", "injected_reset", "mtu_blackhole"}
WHAT = {
    "healthy": "one DNS query answered, two HTTP-like downloads and an upload, no rule",
    "silent_drop": "connect to 8081 for 4 s; the router DROPs tcp dport 8081",
    "refused": "three connects to 8082 where nothing listens: the server's kernel resets",
    "icmp_unreachable": "three connects to 8083; the router REJECTs with icmp-host-unreachable",
    "random_loss": "a 300 kB download; the router drops 4 % of the server's data segments",
    "two_ended_loss": "a 250 kB upload then download; the router drops 5 % of all packets each "
                      "way (one counter per direction); captured at both ends",
    "injected_reset": "two requests on one connection; the router answers the second "
                      "(containing FORBIDDEN) with a tcp-reset REJECT; captured at both ends",
    "mtu_blackhole": "a 200-byte request for 20 kB; the router's link to the client has MTU "
                     "1280 and its ICMP fragmentation-needed is dropped; captured at both ends",
    "dns_nxdomain": "app.lab answered, db.missing.lab NXDOMAIN",
    "dns_servfail": "app.lab answered, api.broken.lab SERVFAIL",
    "dns_unanswered": "two names asked of 10.9.2.53 three times each; the router drops them",
    "zero_window": "a 400 kB download by a client with a 4 kB receive buffer that reads "
                   "nothing for 2.5 s",
    "scan": "a connect scan of ports 7950-8249 plus 8443 and 9000 (three listen)",
}


def capture(name: str) -> dict[str, Any]:
    flush_router()
    if name == "mtu_blackhole":
        ns(R, "ip", "link", "set", "rc", "mtu", "1280")
    for rule in RULES.get(name, []):
        ns(R, "iptables", *rule)
    for n in (C, S):
        ns(n, "ip", "neigh", "flush", "all", check=False)
    files = {"client": HERE / f"{name}.pcap"}
    if name in TWO_ENDED:
        files = {"client": HERE / f"{name}_client.pcap", "server": HERE / f"{name}_server.pcap"}
    dumps = []
    for side, path in files.items():
        dev, where = ("c0", C) if side == "client" else ("s0", S)
        dumps.append(subprocess.Popen(
            ["ip", "netns", "exec", where, "tcpdump", "-i", dev, "-s", str(SNAPLEN), "-U", "-n",
             "-w", str(path), "not arp"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True))
    for d in dumps:  # tcpdump says "listening on" once its socket is open
        assert d.stderr is not None
        while "listening on" not in d.stderr.readline():
            pass
    time.sleep(0.3)
    code = ("import collections, make_captures as m; "
            f"print(dict(collections.Counter(m.CLIENTS[{name!r}]())))")
    result = subprocess.run(["ip", "netns", "exec", C, sys.executable, "-c", code],
                            capture_output=True, text=True, cwd=HERE, timeout=120)
    time.sleep(0.7)
    for d in dumps:
        d.send_signal(signal.SIGINT)
        d.wait(timeout=10)
    return {
        "what": WHAT[name], "files": {k: v.name for k, v in files.items()},
        "client_result": result.stdout.strip() or result.stderr.strip()[-300:],
        "router_counters": counters(), "expect_first": EXPECT_FIRST[name],
        "client": CLIENT, "server": SERVER,
    }


def main(names: list[str]) -> None:
    if os.geteuid():
        sys.exit("run as root: it creates network namespaces")
    truth_path = HERE / "truth.json"
    truth = json.loads(truth_path.read_text()) if truth_path.exists() else {}
    setup()
    server = subprocess.Popen(["ip", "netns", "exec", S, sys.executable, "-c",
                               "import make_captures as m; m.serve()"], cwd=HERE)
    try:
        time.sleep(0.5)
        for name in names or list(CLIENTS):
            truth[name] = capture(name)
            print(name, truth[name]["client_result"], truth[name]["router_counters"])
    finally:
        server.kill()
        server.wait()
        teardown()
    truth_path.write_text(json.dumps(dict(sorted(truth.items())), indent=1) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
