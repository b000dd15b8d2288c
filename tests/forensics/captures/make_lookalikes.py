"""Make the captures of what looks like loss and is not, and of loss counted at the sender
(issue 30). Run by hand as root, never in CI:

    python3 tests/forensics/captures/make_lookalikes.py [SCENARIO ...]

The topology of make_captures.py (client 10.9.1.2, router 10.9.1.1 / 10.9.2.1 with iptables,
server 10.9.2.2 with its bulk TCP servers and DNS responder), in namespaces of its own
(``lkc``, ``lkr``, ``lks``) so the two scripts never meet. Every scenario is captured at both
ends (``NAME_client.pcap``, ``NAME_server.pcap``) with snap length 128, and its ground truth
goes to ``truth.json`` beside the other scenarios': what was done, the router's rule counters
and queue statistics, and each end's own TCP counters from the kernel (``/proc/net/snmp`` and
``/proc/net/netstat`` of its namespace, before and after: segments re-sent, tail-loss probes,
D-SACKs, timeouts), which say what a sender really re-sent and why.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import make_captures as m

m.C, m.R, m.S = "lkc", "lkr", "lks"
HERE = m.HERE
CLIENT, SERVER, DEAD_DNS = m.CLIENT, m.SERVER, m.DEAD_DNS
SPOOFED = "10.9.1.66"  # the SYN flood's source: on the client, whose kernel never answers
SINK = 9999  # UDP port the server reads and discards (the burst that delays ACKs)
KERNEL_COUNTERS = ("TcpRetransSegs", "TcpOutSegs", "TcpExtTCPLossProbes",
                   "TcpExtTCPLossProbeRecovery", "TcpExtTCPDSACKRecv", "TcpExtTCPDSACKRecvSegs",
                   "TcpExtTCPDSACKOldSent", "TcpExtTCPDSACKOfoSent", "TcpExtTCPSpuriousRTOs",
                   "TcpExtTCPTimeouts", "TcpExtTCPFastRetrans", "TcpExtTCPSlowStartRetrans",
                   "TcpExtTCPLostRetransmit", "TcpExtTCPSackRecoveryFail", "TcpExtTCPSynRetrans",
                   "TcpExtTCPSYNChallenge", "TcpExtSyncookiesSent", "TcpExtListenOverflows",
                   "TcpExtListenDrops", "TcpExtTCPReqQFullDoCookies", "TcpAttemptFails",
                   "UdpNoPorts", "IcmpOutDestUnreachs", "IcmpInDestUnreachs")


def kernel_counters(name: str) -> dict[str, int]:
    """The namespace's own TCP/UDP/ICMP counters (each namespace keeps its own MIBs)."""
    out: dict[str, int] = {}
    for f in ("/proc/net/snmp", "/proc/net/netstat"):
        lines = m.ns(name, "cat", f).splitlines()
        for head, vals in zip(lines[0::2], lines[1::2], strict=True):
            keys, nums = head.split(), vals.split()
            for k, v in zip(keys[1:], nums[1:], strict=True):
                out[keys[0].rstrip(":") + k] = int(v)
    return out


def changed(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: after[k] - before[k] for k in KERNEL_COUNTERS if after[k] != before[k]}


# ----------------------------------------------------------------------------- server side
PACED = 9100  # TCP port whose answers are written 16 kB at a time, 40 ms apart


def serve() -> None:
    """make_captures' servers plus a UDP sink and a paced sender, inside the server
    namespace, until killed."""

    def sink() -> None:
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        u.bind((SERVER, SINK))
        while True:
            u.recv(65536)

    def paced(c: socket.socket) -> None:
        try:
            want = int(c.makefile("rb").readline().split()[1])
            while want > 0:
                c.sendall(b"p" * min(want, 16384))
                want -= 16384
                time.sleep(0.04)
        except (OSError, ValueError, IndexError):
            pass
        finally:
            c.close()

    def paced_server() -> None:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", PACED))
        s.listen(8)
        while True:
            threading.Thread(target=paced, args=(s.accept()[0],), daemon=True).start()

    threading.Thread(target=sink, daemon=True).start()
    threading.Thread(target=paced_server, daemon=True).start()
    m.serve()


# ----------------------------------------------------------------------------- clients
def requests(port: int, reqs: list[bytes], pause: float = 0.0, timeout: float = 10.0) -> str:
    """One connection, several GETs, optionally not reading each answer for ``pause`` s (so
    the last odd segment of each answer waits for the delayed-ACK timer)."""
    return m.fetch(port, *reqs, pause=pause, timeout=timeout)


def upload_in_steps(port: int, steps: list[tuple[bytes, float]], timeout: float) -> str:
    """Write each chunk, then wait; the server reads ``PUT n`` and answers OK at the end."""
    s = socket.socket()
    s.settimeout(timeout)
    try:
        s.connect((SERVER, port))
        for chunk, wait in steps:
            s.sendall(chunk)
            time.sleep(wait)
        return "ok" if s.recv(16) == b"OK\n" else "closed"
    except OSError as exc:
        return type(exc).__name__
    finally:
        s.close()


def busy_link() -> list[str]:
    """A download the server writes at its own pace while the client fills the router's slow
    queue towards the server with UDP bursts: the client's ACKs wait behind each burst for
    longer than the server's retransmission timeout."""
    done: list[str] = []
    t = threading.Thread(target=lambda: done.append(
        m.fetch(PACED, b"GET 1600000\n", timeout=20.0)))
    t.start()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    time.sleep(0.5)
    for _ in range(3):
        for _ in range(90):  # 90 x 1400 bytes = 126 kB, 0.5 s at 2 Mbit/s
            u.sendto(b"u" * 1400, (SERVER, SINK))
        time.sleep(1.0)  # drained after 0.5 s, then 0.5 s of ACKs on time
    t.join()
    return done


def dns_connected(server: str, name: str, tries: int, wait: float) -> str:
    """A stub resolver on a connected UDP socket, as glibc's: an ICMP port unreachable comes
    back as ECONNREFUSED at once, and the resolver tries again after ``wait``."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(1.0)
    s.connect((server, 53))
    qid = sum(name.encode()) & 0xFFFF or 1
    q = qid.to_bytes(2, "big") + bytes.fromhex("01000001000000000000")
    q += b"".join(bytes([len(x)]) + x.encode() for x in name.split(".")) + b"\x00\x00\x01\x00\x01"
    last = "no answer"
    for _ in range(tries):
        s.send(q)
        try:
            s.recv(512)
            return "answered"
        except ConnectionRefusedError:
            last = "refused"
        except TimeoutError:
            last = "timeout"
        time.sleep(wait)
    return last


def syn_flood() -> list[str]:
    """200 SYNs from 200 source ports of one spoofed address in one second (hping3); the
    flooder never retries and its kernel never answers the SYN-ACKs (RSTs dropped)."""
    out = subprocess.run(["hping3", "-S", "-p", "8080", "-a", SPOOFED, "-i", "u5000", "-c",
                          "200", SERVER], capture_output=True, text=True, timeout=30)
    time.sleep(3.5)  # the server's SYN-ACK retries (1 s, 3 s) fall inside the capture
    said = (out.stdout + out.stderr).strip().splitlines()
    return [" / ".join(x for x in said if "packets transmitted" in x or "round-trip" in x)
            or str(out.returncode)]


CLIENTS: dict[str, Callable[[], Any]] = {
    "tlp_dsack": lambda: [requests(8080, [b"GET 40000\n"] * 10, pause=0.08),
                          m.fetch(8443, b"PUT 100000\n" + b"y" * 100000)],
    "busy_ack_path": busy_link,
    "network_duplicates": lambda: [requests(8080, [b"GET 400000\n"])],
    "syn_flood": syn_flood,
    "mtu_stall": lambda: [upload_in_steps(8443, [(b"PUT 20000\n", 0.3), (b"h" * 120, 0.3),
                                                 (b"b" * 300, 0.3), (b"x" * 19580, 0.0)],
                                          timeout=7.0)],
    "small_stall": lambda: [upload_in_steps(8443, [(b"PUT 5000\n", 0.3)]
                                            + [(b"s" * 200, 0.3)] * 6, timeout=6.0)],
    "full_stall": lambda: [m.fetch(8443, b"PUT 600000\n" + b"y" * 600000, timeout=6.0)],
    "policer": lambda: [requests(8080, [b"GET 1000000\n"], timeout=20.0)],
    "dns_port_unreachable": lambda: [dns_connected(DEAD_DNS, "app.lab", 6, 0.2),
                                     dns_connected(DEAD_DNS, "db.lab", 6, 0.2),
                                     dns_connected(DEAD_DNS, "app.lab", 6, 0.2)],
}

# what the router (and the ends) are set to, per scenario: (namespace, command) pairs
SETUP: dict[str, list[tuple[str, list[str]]]] = {
    # a probe timeout (2 RTT + the minimum RTO) shorter than the client's delayed ACK
    "tlp_dsack": [(m.S, ["sysctl", "-qw", "net.ipv4.tcp_rto_min_us=5000"])],
    "busy_ack_path": [(m.R, ["tc", "qdisc", "add", "dev", "rs", "root", "tbf", "rate", "2mbit",
                             "burst", "10k", "limit", "4000000"])],
    "network_duplicates": [(m.R, ["iptables", "-t", "mangle", "-A", "POSTROUTING", "-o", "rc",
                                  "-p", "tcp", "--sport", "8080", "-m", "statistic", "--mode",
                                  "random", "--probability", "0.1", "-j", "TEE", "--gateway",
                                  CLIENT])],
    "syn_flood": [(m.C, ["ip", "addr", "add", f"{SPOOFED}/24", "dev", "c0"]),
                  (m.C, ["iptables", "-A", "OUTPUT", "-s", SPOOFED, "-p", "tcp", "--tcp-flags",
                         "RST", "RST", "-j", "DROP"])],
    "mtu_stall": [(m.R, ["ip", "link", "set", "rs", "mtu", "1280"]),
                  (m.R, ["iptables", "-A", "OUTPUT", "-p", "icmp", "--icmp-type",
                         "fragmentation-needed", "-j", "DROP"])],
    "small_stall": [(m.R, ["iptables", "-A", "FORWARD", "-i", "rc", "-p", "tcp", "--dport",
                           "8443", "-m", "connbytes", "--connbytes", "700:", "--connbytes-dir",
                           "original", "--connbytes-mode", "bytes", "-j", "DROP"])],
    "full_stall": [(m.R, ["iptables", "-A", "FORWARD", "-i", "rc", "-p", "tcp", "--dport",
                          "8443", "-m", "connbytes", "--connbytes", "200000:",
                          "--connbytes-dir", "original", "--connbytes-mode", "bytes", "-j",
                          "DROP"])],
    "policer": [(m.R, ["iptables", "-A", "FORWARD", "-i", "rs", "-p", "tcp", "--sport", "8080",
                       "-m", "hashlimit", "--hashlimit-above", "400/sec", "--hashlimit-burst",
                       "100", "--hashlimit-mode", "srcip", "--hashlimit-name", "policer", "-j",
                       "DROP"])],
}
WHAT = {
    "tlp_dsack": "10 answers of 40 kB, each read 80 ms late, then a 100 kB upload; the server's "
                 "minimum RTO is 5 ms, so its tail-loss probe (2 RTT + 5 ms) fires before the "
                 "client's delayed ACK (40 ms) and re-sends the last segment, which the client "
                 "already had and reports with a D-SACK. Nothing is dropped anywhere",
    "busy_ack_path": "a 1.6 MB download the server writes 16 kB every 40 ms (port 9100), "
                     "while the client sends three 126 kB UDP bursts, 1 s apart, to the "
                     "server's sink through the router's 2 Mbit/s queue towards the server, "
                     "longer than anything put in it (nothing dropped): the client's ACKs wait "
                     "up to 0.5 s behind each burst, the server's retransmission timer fires, "
                     "and the client reports each copy it already had with a D-SACK",
    "network_duplicates": "a 400 kB download; the router's mangle POSTROUTING TEE sends a copy of "
                          "10 % of the server's packets to the client as well (same IP ID, same "
                          "bytes); the server re-sends nothing",
    "syn_flood": f"hping3 sends 200 SYNs from {SPOOFED} (an address of the client's, whose RSTs "
                 "are dropped) to 10.9.2.2:8080 from 200 source ports in 1 s and never retries; "
                 "the server answers with SYN-ACKs (and retries them) that are never answered",
    "mtu_stall": "an upload to 8443 written in steps: a 10-byte header, 120 and 300 bytes (each "
                 "acknowledged), then 19,580 bytes; the router's link to the server has MTU "
                 "1280 and its ICMP fragmentation-needed is dropped, so the client's 1448-byte "
                 "segment is re-sent until the client gives up; the server sends no data",
    "small_stall": "an upload to 8443 in 200-byte writes; after 700 bytes the router drops "
                   "everything from the client on that connection (connbytes), so a small "
                   "segment is re-sent until the client gives up",
    "full_stall": "a 600 kB upload to 8443 in full-size segments; after 200 kB the router drops "
                  "everything from the client on that connection (connbytes): full-size "
                  "segments passed before the stall",
    "policer": "a 1 MB download; the router polices the server's packets at 400 packets/s "
               "(hashlimit, burst 100, DROP above)",
    "dns_port_unreachable": "three lookups (app.lab, db.lab, app.lab again) on connected UDP "
                            "sockets, six tries each 0.2 s apart, to 10.9.2.53, an address of "
                            "the server where nothing listens on 53: its kernel answers each "
                            "query with ICMP port unreachable",
}
EXPECT_FIRST: dict[str, dict[str, str]] = {
    "tlp_dsack": {"client": "no_problem_seen", "server": "no_problem_seen",
                  "compare": "two_ended_comparison"},
    "busy_ack_path": {"client": "no_problem_seen", "server": "no_problem_seen",
                  "compare": "two_ended_comparison"},
    "network_duplicates": {"client": "network_duplicates", "server": "no_problem_seen",
                  "compare": "two_ended_comparison"},
    "syn_flood": {"client": "tcp_syn_flood", "server": "tcp_syn_flood",
                  "compare": "two_ended_comparison"},
    # the server sees the small segments arrive, then nothing: no sign of a problem there
    "mtu_stall": {"client": "mtu_blackhole", "server": "no_problem_seen",
                  "compare": "two_ended_comparison"},
    "small_stall": {"client": "tcp_stalled", "server": "no_problem_seen",
                  "compare": "two_ended_comparison"},
    "full_stall": {"client": "tcp_stalled", "server": "no_problem_seen",
                  "compare": "two_ended_comparison"},
    "policer": {"client": "tcp_retransmissions", "server": "tcp_retransmissions",
                  "compare": "two_ended_comparison"},
    "dns_port_unreachable": {"client": "dns_port_unreachable",
                             "server": "dns_port_unreachable",
                             "compare": "two_ended_comparison"},
}


def capture(name: str) -> dict[str, Any]:
    for where, cmd in SETUP.get(name, []):
        m.ns(where, *cmd)
    for n in (m.C, m.S):
        m.ns(n, "ip", "neigh", "flush", "all", check=False)
    files = {"client": HERE / f"{name}_client.pcap", "server": HERE / f"{name}_server.pcap"}
    dumps = []
    for side, path in files.items():
        dev, where = ("c0", m.C) if side == "client" else ("s0", m.S)
        dumps.append(subprocess.Popen(
            ["ip", "netns", "exec", where, "tcpdump", "-i", dev, "-s", str(m.SNAPLEN), "-U",
             "-n", "-w", str(path), "not arp"], stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True))
    for d in dumps:
        assert d.stderr is not None
        while "listening on" not in d.stderr.readline():
            pass
    time.sleep(0.3)
    before = {n: kernel_counters(n) for n in (m.C, m.S)}
    code = ("import collections, make_lookalikes as k; "
            f"print(dict(collections.Counter(k.CLIENTS[{name!r}]())))")
    result = subprocess.run(["ip", "netns", "exec", m.C, sys.executable, "-c", code],
                            capture_output=True, text=True, cwd=HERE, timeout=120)
    time.sleep(0.7)
    after = {n: kernel_counters(n) for n in (m.C, m.S)}
    for d in dumps:
        d.send_signal(signal.SIGINT)
        assert d.stderr is not None
        tail = d.stderr.read()
        d.wait(timeout=10)
        if not re.search(r"^0 packets dropped by kernel", tail, re.M):
            raise RuntimeError(f"tcpdump: {tail.strip()}")
    rules = m.counters() + _mangle_counters()
    qdisc = {dev: m.ns(m.R, "tc", "-s", "qdisc", "show", "dev", dev).strip().replace("\n", " ")
             for dev in ("rc", "rs")}
    return {
        "what": WHAT[name], "files": {k: v.name for k, v in files.items()},
        "client_result": result.stdout.strip() or result.stderr.strip()[-300:],
        "router_counters": rules, "router_queues": qdisc,
        "kernel_counters": {"client": changed(before[m.C], after[m.C]),
                            "server": changed(before[m.S], after[m.S])},
        "expect_first": EXPECT_FIRST[name], "client": CLIENT, "server": SERVER,
    }


def _mangle_counters() -> list[dict[str, Any]]:
    rules = m.ns(m.R, "iptables", "-t", "mangle", "-S", "POSTROUTING").splitlines()[1:]
    stats = m.ns(m.R, "iptables", "-t", "mangle", "-L", "POSTROUTING", "-v", "-n",
                 "-x").splitlines()[2:]
    return [{"rule": "-t mangle " + r, "packets": int(s.split()[0])}
            for r, s in zip(rules, stats, strict=True)]


def main(names: list[str]) -> None:
    if os.geteuid():
        sys.exit("run as root: it creates network namespaces")
    truth_path = HERE / "truth.json"
    truth = json.loads(truth_path.read_text()) if truth_path.exists() else {}
    for name in names or list(CLIENTS):
        # a fresh topology each time: no SYN-ACK retried or orphan socket from the last one
        m.setup()
        server = subprocess.Popen(["ip", "netns", "exec", m.S, sys.executable, "-c",
                                   "import make_lookalikes as k; k.serve()"], cwd=HERE)
        try:
            time.sleep(0.5)
            truth[name] = capture(name)
            print(name, truth[name]["client_result"], truth[name]["kernel_counters"],
                  [r for r in truth[name]["router_counters"] if r["packets"]])
            truth_path.write_text(json.dumps(dict(sorted(truth.items())), indent=1) + "\n")
        finally:
            server.kill()
            server.wait()
            m.teardown()


if __name__ == "__main__":
    main(sys.argv[1:])
