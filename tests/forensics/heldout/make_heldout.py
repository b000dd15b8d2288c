"""Rebuild the blind held-out captures for ghost-forensics (run by hand as root, never in CI).

    python3 tests/forensics/heldout/make_heldout.py [SCENARIO ...]  # root; NAME/*.pcap here

Every scenario gets fresh network namespaces, made here and removed after it:
  hoc  client 10.77.1.2
  hor  router 10.77.1.1 (rc, toward the client) / 10.77.2.1 (rs, toward the server), iptables
  hos  server 10.77.2.2: small python TCP services, an HTTP server, a TLS server and a real
       resolver (unbound) on 10.77.2.2:53
Offloads (TSO/GSO/GRO) are off on every veth so the captures show wire-sized segments.
tcpdump runs at the client (c0) and/or the server (s0). After each run the router's iptables
counters (and tc statistics where a qdisc is used) are read, each capture is summarised with
tshark (packets, data segments per direction, byte ranges sent twice, RSTs with their TTL, DNS
rcodes, ICMP), and everything goes into truth.json beside this file, with the finding ids a
correct FIRST finding may have.  No traffic leaves the namespaces.

The scenarios are chosen by what happens on the wire; none of them is one of the cases of
issue 30 (healthy 5 MB with tail-loss probes, duplicating router, 200-SYN flood in one second,
path MTU 1280 with ICMP dropped seen at the sender, a policer at the sender, DNS answered by ICMP
port unreachable).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
from bisect import bisect_left
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
C, R, S = "hoc", "hor", "hos"
CLIENT, SERVER = "10.77.1.2", "10.77.2.2"
ROUTER_C, ROUTER_S = "10.77.1.1", "10.77.2.1"
WORK = Path(tempfile.gettempdir()) / "ho_heldout_work"
NETNS_ETC = Path("/etc/netns") / C


# ============================================================================ helpers
def sh(*cmd: str, check: bool = True) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True)
    if check and out.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: {out.stderr.strip()}")
    return out.stdout


def ns(name: str, *cmd: str, check: bool = True) -> str:
    return sh("ip", "netns", "exec", name, *cmd, check=check)


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
    for n, dev, addr in ((C, "c0", f"{CLIENT}/24"), (R, "rc", f"{ROUTER_C}/24"),
                         (R, "rs", f"{ROUTER_S}/24"), (S, "s0", f"{SERVER}/24")):
        ns(n, "ip", "addr", "add", addr, "dev", dev)
        ns(n, "ethtool", "-K", dev, "tso", "off", "gso", "off", "gro", "off")
        ns(n, "ip", "link", "set", dev, "up")
    ns(C, "ip", "route", "add", "default", "via", ROUTER_C)
    ns(S, "ip", "route", "add", "default", "via", ROUTER_S)
    ns(R, "sysctl", "-qw", "net.ipv4.ip_forward=1")
    for n in (C, S):  # the kernel's defaults, stated
        ns(n, "sysctl", "-qw", "net.ipv4.tcp_mtu_probing=0")
    # the client's glibc resolver asks the server namespace's unbound
    NETNS_ETC.mkdir(parents=True, exist_ok=True)
    (NETNS_ETC / "resolv.conf").write_text(f"nameserver {SERVER}\noptions timeout:2 attempts:2\n")


def router_counters() -> list[dict[str, Any]]:
    out = []
    for table, chains in (("filter", ("FORWARD", "OUTPUT")), ("mangle", ("FORWARD",))):
        for chain in chains:
            rules = ns(R, "iptables", "-t", table, "-S", chain).splitlines()[1:]
            stats = ns(R, "iptables", "-t", table, "-L", chain, "-v", "-n", "-x").splitlines()[2:]
            for rule, line in zip(rules, stats, strict=True):
                out.append({"table": table, "rule": rule, "packets": int(line.split()[0])})
    return out


# ============================================================================ server side
UNBOUND_CONF = f"""server:
  interface: {SERVER}
  port: 53
  access-control: 10.77.0.0/16 allow
  do-ip6: no
  do-daemonize: no
  username: ""
  chroot: ""
  directory: "{WORK}"
  pidfile: ""
  use-syslog: no
  logfile: "{WORK}/unbound.log"
  verbosity: 1
  module-config: "iterator"
  local-zone: "corp.lab." static
  local-data: "api.corp.lab. 60 IN A {SERVER}"
  local-data: "web.corp.lab. 60 IN A {SERVER}"
  domain-insecure: "partner.lab."
forward-zone:
  name: "partner.lab."
  forward-addr: {SERVER}@5399
"""


def make_cert() -> None:
    if (WORK / "cert.pem").exists():
        return
    sh("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "30",
       "-subj", "/CN=api.corp.lab", "-keyout", str(WORK / "key.pem"),
       "-out", str(WORK / "cert.pem"))


def serve() -> None:
    """Inside the server namespace: the TCP, HTTP and TLS services, until killed."""

    def read_exact(f: Any, n: int) -> bool:
        while n > 0:
            b = f.read(min(n, 65536))
            if not b:
                return False
            n -= len(b)
        return True

    def bulk(c: socket.socket) -> None:
        # "GET n" -> n bytes; "PUT n" + n bytes -> "OK"; "SLOWPUT n k s": read k, sleep s, rest
        f = c.makefile("rb")
        try:
            for line in f:
                w = line.split()
                if not w:
                    continue
                if w[0] == b"GET":
                    c.sendall(b"x" * int(w[1]))
                elif w[0] == b"PUT":
                    if not read_exact(f, int(w[1])):
                        return
                    c.sendall(b"OK\n")
                elif w[0] == b"SLOWPUT":
                    n, k, s = int(w[1]), int(w[2]), float(w[3])
                    if not read_exact(f, k):
                        return
                    time.sleep(s)
                    if not read_exact(f, n - k):
                        return
                    c.sendall(b"OK\n")
        except OSError:
            pass
        finally:
            c.close()

    def banner(c: socket.socket) -> None:  # SMTP-like: greets first, then takes an upload
        try:
            c.sendall(b"220 hos.corp.lab ESMTP ready\r\n")
            f = c.makefile("rb")
            line = f.readline()
            w = line.split()
            if w and w[0] == b"PUT" and read_exact(f, int(w[1])):
                c.sendall(b"250 OK\r\n")
        except OSError:
            pass
        finally:
            c.close()

    def tcp(port: int, handler: Any, rcvbuf: int = 0) -> None:
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.bind(("0.0.0.0", port))
        s.listen(128)
        while True:
            c, _ = s.accept()
            threading.Thread(target=handler, args=(c,), daemon=True).start()

    def tls(port: int) -> None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(str(WORK / "cert.pem"), str(WORK / "key.pem"))
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("0.0.0.0", port))
        s.listen(16)

        def one(c: socket.socket) -> None:
            try:
                t = ctx.wrap_socket(c, server_side=True)
                t.sendall(b"HTTP/1.0 200 OK\r\n\r\nhello\n")
                t.close()
            except (OSError, ssl.SSLError):
                c.close()

        while True:
            c, _ = s.accept()
            threading.Thread(target=one, args=(c,), daemon=True).start()

    def http(port: int) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class H(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802
                body = b"upstream unavailable\n"
                self.close_connection = True
                self.wfile.write(b"HTTP/1.0 503 Service Unavailable\r\nServer: ho-api\r\n"
                                 b"Content-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s"
                                 % (len(body), body))

            def log_message(self, *a: Any) -> None:
                pass

        ThreadingHTTPServer(("0.0.0.0", port), H).serve_forever()

    def broken_upstream() -> None:  # the forwarder unbound uses for partner.lab: REFUSED
        u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        u.bind((SERVER, 5399))
        while True:
            q, peer = u.recvfrom(4096)
            if len(q) >= 12:
                u.sendto(q[:2] + struct.pack("!H", 0x8105) + q[4:6] + b"\0" * 6 + q[12:], peer)

    threading.Thread(target=broken_upstream, daemon=True).start()
    for port in (8080, 8082, 5432):
        threading.Thread(target=tcp, args=(port, bulk), daemon=True).start()
    threading.Thread(target=tcp, args=(9100, bulk, 65536), daemon=True).start()
    threading.Thread(target=tcp, args=(2525, banner), daemon=True).start()
    threading.Thread(target=tls, args=(8443,), daemon=True).start()
    threading.Thread(target=http, args=(8000,), daemon=True).start()
    while True:
        time.sleep(3600)


# ============================================================================ client side
def fetch(port: int, *requests: bytes, rcvbuf: int = 0, timeout: float = 10.0,
          keepalive: bool = False, idle: float = 0.0) -> str:
    s = socket.socket()
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    if keepalive:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE, 1)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPINTVL, 1)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT, 9)
    s.settimeout(timeout)
    try:
        s.connect((SERVER, port))
        for req in requests:
            s.sendall(req)
            w = req.split()
            want = int(w[1]) if w[0] == b"GET" else 3
            got = 0
            while got < want:
                chunk = s.recv(65536)
                if not chunk:
                    return "closed"
                got += len(chunk)
            if idle:
                time.sleep(idle)
        return "ok"
    except OSError as exc:
        return type(exc).__name__
    finally:
        s.close()


def connect(port: int, timeout: float, host: str = SERVER) -> str:
    s = socket.socket()
    s.settimeout(timeout)
    try:
        s.connect((host, port))
        return "connected"
    except OSError as exc:
        return type(exc).__name__
    finally:
        s.close()


def parallel(fn: Any, args: list[tuple[Any, ...]], stagger: float = 0.0) -> list[Any]:
    out: list[Any] = [None] * len(args)

    def run(i: int) -> None:
        out[i] = fn(*args[i])

    ts = []
    for i in range(len(args)):
        t = threading.Thread(target=run, args=(i,))
        t.start()
        ts.append(t)
        time.sleep(stagger)
    for t in ts:
        t.join()
    return out


def resolve(name: str) -> str:
    r = subprocess.run(["getent", "ahostsv4", name], capture_output=True, text=True)
    return r.stdout.split()[0] if r.returncode == 0 and r.stdout else f"fail({r.returncode})"


def c_healthy_many_short() -> list[Any]:
    out = []
    for i in range(40):
        out.append(fetch(8080, b"GET %d\n" % (1500 + 137 * i)))
        time.sleep(0.05)
    for _ in range(10):
        out.append(fetch(8080, b"PUT 2000\n" + b"y" * 2000))
        time.sleep(0.05)
    return out


def c_healthy_tbf_bulk() -> list[Any]:
    return [fetch(8080, b"GET 8000000\n", rcvbuf=262144, timeout=30)]


def c_healthy_dns_then_tcp() -> list[Any]:
    out: list[Any] = [resolve("api.corp.lab"), resolve("web.corp.lab")]
    for n in (4000, 12000, 30000):
        out.append(fetch(8080, b"GET %d\n" % n))
        time.sleep(0.2)
    out.append(resolve("api.corp.lab"))
    out.append(fetch(8080, b"PUT 5000\n" + b"y" * 5000))
    return out


def c_healthy_idle_keepalive() -> list[Any]:
    return [fetch(8080, b"GET 3000\n", b"GET 3000\n", keepalive=True, idle=6.5)]


def c_loss_upload_receiver_view() -> list[Any]:
    return [fetch(8080, b"PUT 1500000\n" + b"y" * 1500000, timeout=30)]


def c_loss_download_sender_view() -> list[Any]:
    return [fetch(8080, b"GET 1500000\n", timeout=30)]


def c_synack_lost_return_path() -> list[Any]:
    return parallel(connect, [(8082, 4.5)] * 3, stagger=0.3)


def c_syn_scan_slow() -> list[Any]:
    r = subprocess.run(["hping3", "-S", "-p", "++8070", "-c", "30", "-i", "u500000", SERVER],
                       capture_output=True, text=True)
    return [r.returncode, r.stdout.count("flags=SA"), r.stdout.count("flags=RA")]


def c_connect_scan_filtered() -> list[Any]:
    out = []
    for port in list(range(21, 46)) + [2525, 8000]:
        out.append((port, connect(port, 0.3)))
        time.sleep(0.3)
    return out


def c_syn_dropped_firewall() -> list[Any]:
    out: list[Any] = [fetch(8080, b"GET 5000\n")]
    out += parallel(connect, [(5432, 5.0)] * 3, stagger=0.2)
    out.append(fetch(8080, b"GET 5000\n"))
    return out


def c_refused_server_view() -> list[Any]:
    out: list[Any] = [fetch(8080, b"GET 8000\n")]
    for _ in range(6):
        out.append(connect(5433, 2.0))
        time.sleep(0.5)
    return out


def c_zero_window_server_stops_reading() -> list[Any]:
    return [fetch(9100, b"SLOWPUT 3000000 100000 3.5\n" + b"y" * 3000000, timeout=30)]


def c_firewall_cut_midstream() -> list[Any]:
    return [fetch(8080, b"GET 3000000\n", timeout=8)]


def c_mtu_blackhole_upload() -> list[Any]:
    def one() -> str:
        s = socket.socket()
        s.settimeout(5.0)
        try:
            s.connect((SERVER, 2525))
            s.recv(100)  # the server's greeting
            s.sendall(b"PUT 7540\r\n")
            time.sleep(0.1)
            s.sendall(b"z" * 7540)  # 5 x 1448 + 300: all in the first window
            return s.recv(100).decode().strip() or "closed"
        except OSError as exc:
            return type(exc).__name__
        finally:
            s.close()

    out: list[Any] = []
    t = threading.Thread(target=lambda: out.extend(parallel(one, [()] * 3, stagger=0.3)))
    t.start()
    probes = []
    for _ in range(3):  # a health check with small answers every 2 s while the uploads hang
        time.sleep(1.5)
        probes.append(fetch(8080, b"GET 200\n"))
        time.sleep(0.5)
    t.join()
    return out + probes


def c_dns_nxdomain_resolver() -> list[Any]:
    out = []
    for _ in range(3):
        out.append(resolve("db.corp.lab"))
        time.sleep(0.5)
    out.append(resolve("api.corp.lab"))
    out.append(fetch(8080, b"GET 6000\n"))
    return out


def c_dns_servfail_resolver() -> list[Any]:
    out = [resolve("api.corp.lab"), fetch(8080, b"GET 6000\n")]
    for _ in range(2):
        out.append(resolve("orders.partner.lab"))
        time.sleep(0.5)
    return out


def c_icmp_admin_prohibited() -> list[Any]:
    out: list[Any] = [fetch(8080, b"GET 6000\n")]
    for _ in range(3):
        out.append(connect(3306, 3.0))
        time.sleep(0.5)
    return out


def c_http_503() -> list[Any]:
    import urllib.error
    import urllib.request

    out = []
    for path in ("/api/orders", "/api/orders", "/api/cart", "/api/orders"):
        try:
            with urllib.request.urlopen(f"http://{SERVER}:8000{path}", timeout=5) as r:
                out.append(r.status)
        except urllib.error.HTTPError as e:
            e.read()  # read the body as a real client does, then close
            e.close()
            out.append(e.code)
        except OSError as e:
            out.append(type(e).__name__)
        time.sleep(0.3)
    return out


def c_tls_unknown_ca() -> list[Any]:
    out = []
    for _ in range(3):
        ctx = ssl.create_default_context()  # system CAs: the server's self-signed cert fails
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        s = socket.create_connection((SERVER, 8443), timeout=5)
        t = ctx.wrap_socket(s, server_hostname="api.corp.lab", do_handshake_on_connect=False)
        try:
            t.do_handshake()
            out.append("handshake ok")
        except ssl.SSLCertVerificationError as e:
            out.append(f"verify failed: {e.verify_message}")
        except OSError as e:
            out.append(type(e).__name__)
        # the alert is sent; close the TCP connection cleanly: FIN, drain, close
        raw = socket.socket(fileno=t.detach())
        try:
            raw.shutdown(socket.SHUT_WR)
            while raw.recv(4096):
                pass
        except OSError:
            pass
        raw.close()
        time.sleep(0.3)
    return out


# ============================================================================ scenarios
NOT_HEALTHY = ["tcp_retransmissions", "tcp_stalled", "mtu_blackhole", "tcp_syn_unanswered",
               "tcp_handshake_incomplete", "tcp_return_path_only", "tcp_connection_refused",
               "tcp_injected_reset", "tcp_resets", "tcp_zero_window", "port_scan",
               "icmp_unreachable", "dns_unanswered", "dns_nxdomain", "dns_servfail",
               "capture_gaps"]

FWD = "FORWARD"
SCENARIOS: dict[str, dict[str, Any]] = {
    "healthy_many_short": {
        "what": "50 short connections to 10.77.2.2:8080 one after another (40 downloads of "
                "1.5-6.8 kB, 10 uploads of 2 kB), each closed with FIN both ways; no rule",
        "sides": ("client",), "judge": "client",
        "expect_first": ["no_problem_seen"], "forbidden": NOT_HEALTHY,
        "notes": "Many connections to one port that all succeed are not a scan or flood.",
    },
    "healthy_tbf_bulk": {
        "what": "an 8 MB download through a tbf qdisc on the router's client-side link "
                "(20 mbit/s, burst 32 kB, queue limit 4 MB) by a client with a 256 kB receive "
                "buffer, so the queue never overflows; captured at both ends (snaplen 96)",
        "tc": ["qdisc", "add", "dev", "rc", "root", "tbf", "rate", "20mbit", "burst", "32kb",
               "limit", "4mb"],
        "sides": ("client", "server"), "judge": "client", "snaplen": 96,
        "expect_first": ["no_problem_seen"], "forbidden": NOT_HEALTHY,
        "notes": "A rate limit that queues but never drops is not loss; window-full flags "
                 "and queueing delay are normal. Judged at the receiver (client).",
    },
    "healthy_dns_then_tcp": {
        "what": "glibc (getent) resolves api.corp.lab and web.corp.lab through unbound on "
                "10.77.2.2 (both NOERROR with an A record), then 3 downloads and an upload on "
                "8080, and a cached re-resolve; no rule",
        "sides": ("client",), "judge": "client",
        "expect_first": ["no_problem_seen"], "forbidden": NOT_HEALTHY + ["dns_refused",
                                                                           "dns_slow"],
        "notes": "",
    },
    "healthy_idle_keepalive": {
        "what": "one connection with TCP keep-alive (idle 1 s, interval 1 s): GET 3 kB, idle "
                "6.5 s, GET 3 kB, idle 6.5 s, close; captured at the server",
        "sides": ("server",), "judge": "server",
        "expect_first": ["no_problem_seen"], "forbidden": NOT_HEALTHY,
        "notes": "Keep-alive probes (seq one below the next byte, answered by ACKs) are "
                 "normal; a tcp_keepalives info finding is fine.",
    },
    "loss_upload_receiver_view": {
        "what": "a 1.5 MB upload to 8080 through a 100 mbit/s tbf (4 MB queue, never full) on "
                "the router's server-side link; the router drops 3 % of the client's segments "
                "of 1000 bytes or more at random (iptables statistic); captured at both ends, "
                "judged at the receiver (server)",
        "tc": ["qdisc", "add", "dev", "rs", "root", "tbf", "rate", "100mbit", "burst", "32kb",
               "limit", "4mb"],
        "rules": [[FWD, "-i", "rc", "-p", "tcp", "--dport", "8080", "-m", "length", "--length",
                   "1000:", "-m", "statistic", "--mode", "random", "--probability", "0.03",
                   "-j", "DROP"]],
        "sides": ("client", "server"), "judge": "server", "snaplen": 96,
        "expect_first": ["tcp_retransmissions"],
        "forbidden": ["tcp_stalled", "mtu_blackhole", "tcp_zero_window", "tcp_injected_reset",
                      "tcp_resets", "tcp_syn_unanswered", "tcp_handshake_incomplete",
                      "no_problem_seen"],
        "notes": "At the receiver the lost originals never appear: the retransmissions fill "
                 "gaps. Exact percentages are not judged.",
    },
    "loss_download_sender_view": {
        "what": "a 1.5 MB download from 8080 through a 100 mbit/s tbf (4 MB queue, never full) "
                "on the router's client-side link; the router drops 3 % of the server's "
                "segments of 1000 bytes or more at random; captured at both ends, judged at the "
                "sender (server)",
        "tc": ["qdisc", "add", "dev", "rc", "root", "tbf", "rate", "100mbit", "burst", "32kb",
               "limit", "4mb"],
        "rules": [[FWD, "-i", "rs", "-p", "tcp", "--sport", "8080", "-m", "length", "--length",
                   "1000:", "-m", "statistic", "--mode", "random", "--probability", "0.03",
                   "-j", "DROP"]],
        "sides": ("client", "server"), "judge": "server", "snaplen": 96,
        "expect_first": ["tcp_retransmissions"],
        "forbidden": ["tcp_stalled", "mtu_blackhole", "tcp_zero_window", "tcp_injected_reset",
                      "tcp_resets", "tcp_syn_unanswered", "tcp_handshake_incomplete",
                      "no_problem_seen"],
        "notes": "Counts: the sender re-sent at least as many segments as the router dropped "
                 "(ground_truth). Exact percentages are not judged.",
    },
    "synack_lost_return_path": {
        "what": "three connects to 8082 (4.5 s timeout each, 0.3 s apart); the router drops "
                "every SYN-ACK from 8082 on its way back; the client retries each SYN 4 times, "
                "1 s apart (kernel 6.x linear SYN timeouts), the server answers every SYN and "
                "also resends its SYN-ACK on its own timer; captured at both ends, judged at the "
                "server",
        "rules": [[FWD, "-i", "rs", "-p", "tcp", "--sport", "8082", "--tcp-flags", "SYN,ACK",
                   "SYN,ACK", "-j", "DROP"]],
        "sides": ("client", "server"), "judge": "server",
        "expect_first": ["tcp_handshake_incomplete"],
        "forbidden": ["port_scan", "tcp_syn_unanswered", "tcp_retransmissions",
                      "tcp_connection_refused"],
        "notes": "Here the return path really loses the SYN-ACK (the SYNs are retried): the "
                 "return-path story is right. The client capture is kept for reference only "
                 "(from there it looks like SYNs never answered).",
    },
    "syn_scan_slow": {
        "what": "hping3 SYN scan from 10.77.1.2 of ports 8070-8099 on 10.77.2.2, one SYN every "
                "0.5 s (15 s), source port incremented per probe, no SYN ever retried; 8080 and "
                "8082 answer SYN-ACK (the scanner's kernel resets them), the rest RST; judged "
                "at the target (server)",
        "sides": ("server",), "judge": "server",
        "expect_first": ["port_scan"],
        "forbidden": ["tcp_retransmissions", "tcp_stalled", "mtu_blackhole",
                      "tcp_injected_reset"],
        "forbidden_phrases": ["asymmetric routing"],
        "notes": "A slow scan (2 probes/s), not a flood; the half-open connections on the two "
                 "open ports are the scanner's, not a lost SYN-ACK.",
    },
    "connect_scan_filtered": {
        "what": "a connect() scan from 10.77.1.2 of ports 21-45, 2525 and 8000 on 10.77.2.2, "
                "0.3 s timeout and 0.3 s pause each (new source port each); the router silently "
                "drops ports 21-30, 31-45 are closed (RST), 2525 and 8000 accept; judged at the "
                "scanner (client)",
        "rules": [[FWD, "-p", "tcp", "-d", SERVER, "--dport", "21:30", "-j", "DROP"]],
        "sides": ("client",), "judge": "client",
        "expect_first": ["port_scan"],
        "forbidden": ["tcp_retransmissions", "tcp_stalled", "mtu_blackhole",
                      "tcp_injected_reset"],
        "forbidden_phrases": ["asymmetric routing"],
        "notes": "The scanner's own capture: 27 ports in ~16 s.",
    },
    "syn_dropped_firewall": {
        "what": "a working download on 8080, then three parallel connects to 5432 (5 s "
                "timeout: 5 SYNs each, 1 s apart) that the router silently drops (NSG-like "
                "DROP on dport 5432; the server listens there), then another working download",
        "rules": [[FWD, "-p", "tcp", "-d", SERVER, "--dport", "5432", "-j", "DROP"]],
        "sides": ("client",), "judge": "client",
        "expect_first": ["tcp_syn_unanswered"],
        "forbidden": ["tcp_retransmissions", "port_scan", "tcp_handshake_incomplete",
                      "icmp_unreachable", "tcp_connection_refused", "tcp_stalled"],
        "notes": "SYN retries are not data loss.",
    },
    "refused_server_view": {
        "what": "a working download on 8080, then six connects to 5433 (nothing listens) 0.5 s "
                "apart: the server's kernel answers each SYN with RST,ACK; judged at the server",
        "sides": ("server",), "judge": "server",
        "expect_first": ["tcp_connection_refused"],
        "forbidden": ["tcp_syn_unanswered", "tcp_retransmissions", "tcp_injected_reset",
                      "port_scan", "tcp_handshake_incomplete"],
        "notes": "One port retried by one client is not a scan.",
    },
    "zero_window_server_stops_reading": {
        "what": "a 3 MB upload to 9100 whose server application (65 kB receive buffer) reads "
                "100 kB, stops reading for 3.5 s, then reads the rest; judged at the sender "
                "(client); no router rule",
        "sides": ("client", "server"), "judge": "client", "snaplen": 96,
        "expect_first": ["tcp_zero_window"],
        "forbidden": ["tcp_retransmissions>low", "tcp_stalled", "mtu_blackhole", "tcp_resets",
                      "tcp_injected_reset", "no_problem_seen"],
        "notes": "The zero window is the server's (10.77.2.2 port 9100); the client's window "
                 "probes (keep-alive shaped) are not loss. Nothing was dropped (no rule, both "
                 "captures identical); the client re-sent a few segments while the window was "
                 "closing and the server answered them with D-SACK, i.e. unneeded copies "
                 "(ground_truth: data_segments_resending_bytes_seen_before, acks_carrying_dsack"
                 "), so a "
                 "low-severity retransmission note is tolerated, a loss claim above low is not.",
    },
    "reset_injected_midstream": {
        "what": "a 3 MB download from 8080; once the client has sent 120 packets on the "
                "connection the router CONNMARKs it, answers the client's next packet with "
                "REJECT --reject-with tcp-reset (a RST in the server's name, TTL 64 against the "
                "server's 63) and drops everything after, both ways; judged at the client",
        "rules": [[FWD, "-i", "rc", "-p", "tcp", "--dport", "8080", "-m", "connbytes",
                   "--connbytes", "120:", "--connbytes-dir", "original", "--connbytes-mode",
                   "packets", "-j", "CONNMARK", "--set-mark", "7"],
                  [FWD, "-i", "rc", "-p", "tcp", "-m", "connmark", "--mark", "7", "-j", "REJECT",
                   "--reject-with", "tcp-reset"],
                  [FWD, "-i", "rs", "-m", "connmark", "--mark", "7", "-j", "DROP"]],
        "sides": ("client", "server"), "judge": "client", "snaplen": 96, "tail": 5.0,
        "run_as": "firewall_cut_midstream",
        "expect_first": ["tcp_injected_reset"],
        "forbidden": ["mtu_blackhole", "tcp_zero_window", "tcp_syn_unanswered",
                      "tcp_connection_refused", "no_problem_seen"],
        "notes": "Same run as flow_cut_midstream_server_view. The client received several "
                 "RSTs in the server's name (one per client ACK already in flight when the "
                 "rule fired: ground_truth rst_packets), all TTL 64 from the router; the server never "  # noqa: E501
                 "sent one.",
    },
    "flow_cut_midstream_server_view": {
        "what": "the same run as reset_injected_midstream, judged at the server: after the "
                "router cuts the flow the server hears nothing more and retransmits its oldest "
                "unacknowledged 1448-byte segment on its timer (about 5 s of it captured); "
                "hundreds of full-size segments of the same connection were acknowledged "
                "before",
        "sides": ("client", "server"), "judge": "server", "snaplen": 96, "same_run_as":
            "reset_injected_midstream",
        "expect_first": ["tcp_stalled"],
        "forbidden": ["mtu_blackhole", "path_mtu", "tcp_zero_window", "tcp_connection_refused",
                      "no_problem_seen"],
        "notes": "Not an MTU black hole: full-size segments were acknowledged for the first "
                 "~400 kB; the path went dead for every size. The RST the router sent went "
                 "to the client only.",
    },
    "mtu_blackhole_upload_receiver_view": {
        "what": "three parallel uploads to an SMTP-like service on 2525: the server greets "
                "(acked), the client sends a 10-byte command and then 7540 bytes (5 x 1448 + "
                "300) in one window; the router's server-side link has MTU 1200 and its ICMP "
                "fragmentation-needed is dropped (OUTPUT), so only the 300-byte tails and small "
                "segments arrive; meanwhile a health check fetches 200 bytes from 8080 at about "
                "1.5, 3.5 and 5.5 s (all fine); the uploads time out after 5 s; judged at the "
                "receiver (server)",
        "rules": [["OUTPUT", "-p", "icmp", "--icmp-type", "fragmentation-needed", "-j",
                   "DROP"]],
        "mtu": ("rs", 1200),
        "run_as": "mtu_blackhole_upload",
        "sides": ("client", "server"), "judge": "server", "tail": 0.5,
        "expect_first": ["mtu_blackhole"],
        "forbidden": ["tcp_zero_window", "tcp_syn_unanswered", "tcp_injected_reset",
                      "port_scan", "no_problem_seen"],
        "notes": "No ICMP reaches either end. Seen from the receiver: the size of the hole is "
                 "not visible beyond 'full-size segments never arrive'.",
    },
    "dns_nxdomain_resolver": {
        "what": "glibc (getent) asks unbound on 10.77.2.2 for db.corp.lab three times (local "
                "zone corp.lab static: NXDOMAIN each time), then api.corp.lab (NOERROR) and "
                "downloads 6 kB from it",
        "sides": ("client",), "judge": "client",
        "expect_first": ["dns_nxdomain"],
        "forbidden": ["dns_unanswered", "dns_servfail", "dns_refused", "tcp_retransmissions",
                      "icmp_unreachable", "no_problem_seen"],
        "notes": "",
    },
    "dns_servfail_resolver": {
        "what": "glibc (getent) resolves api.corp.lab (NOERROR) and downloads from it, then "
                "asks twice for orders.partner.lab, a zone unbound forwards to an upstream "
                "that is broken (10.77.2.2:5399 answers every query REFUSED): unbound answers SERVFAIL",  # noqa: E501
        "sides": ("client",), "judge": "client",
        "expect_first": ["dns_servfail"],
        "forbidden": ["dns_unanswered", "dns_nxdomain", "dns_refused", "icmp_unreachable",
                      "tcp_retransmissions", "no_problem_seen"],
        "notes": "The upstream's REFUSED stays inside the server namespace (not captured).",
    },
    "icmp_admin_prohibited": {
        "what": "a working download on 8080, then three connects to 3306 0.5 s apart; the "
                "router answers each SYN with REJECT --reject-with icmp-admin-prohibited "
                "(type 3 code 13) from 10.77.1.1",
        "rules": [[FWD, "-p", "tcp", "-d", SERVER, "--dport", "3306", "-j", "REJECT",
                   "--reject-with", "icmp-admin-prohibited"]],
        "sides": ("client",), "judge": "client",
        "expect_first": ["icmp_unreachable"],
        "forbidden": ["tcp_syn_unanswered", "tcp_retransmissions", "port_scan",
                      "tcp_connection_refused", "no_problem_seen"],
        "notes": "",
    },
    "http_503": {
        "what": "four HTTP/1.0 GETs (urllib) to a python http.server on 8000 that answers "
                "every request 503 Service Unavailable; TCP is clean",
        "sides": ("client",), "judge": "client",
        "expect_first": ["http_errors"],
        "forbidden": ["tcp_retransmissions", "tcp_resets", "tcp_injected_reset",
                      "tcp_connection_refused", "no_problem_seen"],
        "notes": "",
    },
    "tls_unknown_ca": {
        "what": "three TLS 1.2 handshakes (python ssl, system CAs) to a server on 8443 with a "
                "self-signed certificate: the client rejects it and sends a fatal alert "
                "(unknown CA) each time",
        "sides": ("client",), "judge": "client",
        "expect_first": ["tls_alerts"],
        "forbidden": ["tcp_retransmissions", "tcp_injected_reset", "tcp_connection_refused",
                      "no_problem_seen"],
        "notes": "After its alert the client half-closes, drains and closes (FIN), so TCP "
                 "ends cleanly.",
    },
}


# ============================================================================ ground truth
FIELDS = ["frame.time_relative", "ip.src", "ip.dst", "ip.ttl", "ip.proto", "tcp.srcport",
          "tcp.dstport", "tcp.flags", "tcp.seq", "tcp.len", "tcp.window_size_value",
          "udp.srcport", "udp.dstport", "dns.flags.response", "dns.flags.rcode", "dns.qry.name",
          "icmp.type", "icmp.code", "tls.alert_message.desc", "http.response.code",
          "tcp.options.sack.dsack_le"]


class Ranges:
    """Byte ranges seen in one direction (merged, sorted)."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def covered(self, a: int, b: int) -> int:
        n, i = 0, max(0, bisect_left(self.ends, a + 1) - 0)
        while i < len(self.starts) and self.starts[i] < b:
            n += max(0, min(b, self.ends[i]) - max(a, self.starts[i]))
            i += 1
        return n

    def add(self, a: int, b: int) -> None:
        i = bisect_left(self.ends, a)
        j = i
        while j < len(self.starts) and self.starts[j] <= b:
            a, b = min(a, self.starts[j]), max(b, self.ends[j])
            j += 1
        self.starts[i:j] = [a]
        self.ends[i:j] = [b]


def summarise(pcap: Path) -> dict[str, Any]:
    out = subprocess.run(["tshark", "-n", "-r", str(pcap), "-T", "fields", "-E", "separator=|",
                          "-E", "occurrence=f", *sum((["-e", f] for f in FIELDS), [])],
                         capture_output=True, text=True, check=True).stdout
    packets = 0
    syn: dict[tuple[str, str, str, str], int] = {}
    synack = 0
    rsts: dict[str, int] = {}
    data: dict[str, int] = {}
    resent: dict[str, int] = {}
    gapfill: dict[str, int] = {}
    ranges: dict[tuple[str, str, str, str], Ranges] = {}
    maxend: dict[tuple[str, str, str, str], int] = {}
    zero_win: dict[str, int] = {}
    dsack: dict[str, int] = {}
    dns_q = 0
    dns_r: dict[str, int] = {}
    names: set[str] = set()
    icmp: dict[str, int] = {}
    alerts: dict[str, int] = {}
    http: dict[str, int] = {}
    ttl: dict[str, set[str]] = {}
    first_t = last_t = 0.0
    for line in out.splitlines():
        f = dict(zip(FIELDS, line.split("|"), strict=False))
        packets += 1
        t = float(f["frame.time_relative"] or 0)
        first_t = first_t or t
        last_t = t
        src, dst = f["ip.src"], f["ip.dst"]
        if f["icmp.type"]:
            k = f"{src}->{dst} type {f['icmp.type']} code {f['icmp.code']}"
            icmp[k] = icmp.get(k, 0) + 1
        if f["tls.alert_message.desc"]:
            k = f"{src}->{dst} alert {f['tls.alert_message.desc']}"
            alerts[k] = alerts.get(k, 0) + 1
        if f["http.response.code"]:
            http[f["http.response.code"]] = http.get(f["http.response.code"], 0) + 1
        if f["udp.srcport"] and (f["udp.srcport"] == "53" or f["udp.dstport"] == "53"):
            names.add(f["dns.qry.name"])
            if f["dns.flags.response"] == "1":
                rc = {"0": "NOERROR", "2": "SERVFAIL", "3": "NXDOMAIN", "5": "REFUSED"}.get(
                    f["dns.flags.rcode"], f["dns.flags.rcode"])
                k = f"{f['dns.qry.name']} {rc}"
                dns_r[k] = dns_r.get(k, 0) + 1
            else:
                dns_q += 1
            continue
        if not f["tcp.srcport"] or f["icmp.type"]:
            continue
        flags = int(f["tcp.flags"], 16)
        key = (src, f["tcp.srcport"], dst, f["tcp.dstport"])
        way = f"{src}->{dst}"
        ttl.setdefault(src, set()).add(f["ip.ttl"])
        if flags & 0x02 and not flags & 0x10:
            syn[key] = syn.get(key, 0) + 1
        if flags & 0x12 == 0x12:
            synack += 1
        if flags & 0x04:
            k = f"{way} ttl {f['ip.ttl']}"
            rsts[k] = rsts.get(k, 0) + 1
        if f["tcp.window_size_value"] == "0" and not flags & 0x07:
            k = f"{src}:{f['tcp.srcport']}"
            zero_win[k] = zero_win.get(k, 0) + 1
        if f["tcp.options.sack.dsack_le"]:
            dsack[way] = dsack.get(way, 0) + 1
        n = int(f["tcp.len"] or 0)
        if n and not flags & 0x02:
            seq = int(f["tcp.seq"])
            rg = ranges.setdefault(key, Ranges())
            data[way] = data.get(way, 0) + 1
            if rg.covered(seq, seq + n):
                resent[way] = resent.get(way, 0) + 1
            elif seq + n <= maxend.get(key, 0):
                gapfill[way] = gapfill.get(way, 0) + 1
            rg.add(seq, seq + n)
            maxend[key] = max(maxend.get(key, 0), seq + n)
    return {
        "packets": packets, "duration_s": round(last_t - first_t, 3),
        "tcp_connections_attempted": len(syn),
        "syn_sent_per_connection": dict(sorted(_hist(syn.values()).items())),
        "synack_packets": synack,
        "rst_packets": rsts, "tcp_ttls_by_sender": {k: sorted(v) for k, v in sorted(ttl.items())},
        "data_segments": data,
        "data_segments_resending_bytes_seen_before": resent,
        "data_segments_filling_a_gap": gapfill,
        "zero_window_advertisements": zero_win,
        "acks_carrying_dsack": dsack,
        "dns_queries": dns_q, "dns_responses": dns_r, "dns_names": sorted(n for n in names if n),
        "icmp": icmp, "tls_alerts": alerts, "http_status": http,
    }


def _hist(vals: Any) -> dict[int, int]:
    h: dict[int, int] = {}
    for v in vals:
        h[v] = h.get(v, 0) + 1
    return h


# ============================================================================ running
def run_client(name: str) -> str:
    fn = "c_" + SCENARIOS[name].get("run_as", name)
    code = (f"import json, sys; sys.path.insert(0, {str(HERE)!r}); import make_heldout as m; "
            f"print(json.dumps(m.{fn}()))")
    r = subprocess.run(["ip", "netns", "exec", C, sys.executable, "-B", "-c", code],
                       capture_output=True, text=True, timeout=180)
    return r.stdout.strip() or r.stderr.strip()[-400:]


def capture(name: str) -> dict[str, Any]:
    sc = SCENARIOS[name]
    setup()
    WORK.mkdir(exist_ok=True)
    make_cert()
    (WORK / "unbound.conf").write_text(UNBOUND_CONF)
    procs = [subprocess.Popen(["ip", "netns", "exec", S, "unbound", "-d", "-c",
                               str(WORK / "unbound.conf")], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL),
             subprocess.Popen(["ip", "netns", "exec", S, sys.executable, "-B", "-c",
                               f"import sys; sys.path.insert(0, {str(HERE)!r}); "
                               "import make_heldout as m; m.serve()"])]
    dumps: list[subprocess.Popen[str]] = []
    try:
        if "mtu" in sc:
            ns(R, "ip", "link", "set", sc["mtu"][0], "mtu", str(sc["mtu"][1]))
        if "tc" in sc:
            ns(R, "tc", *sc["tc"])
        for rule in sc.get("rules", []):
            ns(R, "iptables", "-A", *rule)
        time.sleep(1.0)  # servers and unbound listening
        d = HERE / name
        d.mkdir(exist_ok=True)
        for old in d.glob("*.pcap"):
            old.unlink()
        files = {side: d / f"{side}.pcap" for side in sc["sides"]}
        for side, path in files.items():
            dev, where = ("c0", C) if side == "client" else ("s0", S)
            p = subprocess.Popen(["ip", "netns", "exec", where, "tcpdump", "--immediate-mode", "-i", dev, "-s",  # noqa: E501
                                  str(sc.get("snaplen", 262144)), "-U", "-n", "-w", str(path),
                                  "not arp"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 text=True)
            assert p.stderr is not None
            while "listening on" not in p.stderr.readline():
                pass
            dumps.append(p)
        time.sleep(0.3)
        result = run_client(name)
        time.sleep(sc.get("tail", 1.5))
        tcpdump_said = {}
        for side, p in zip(files, dumps, strict=True):
            p.send_signal(signal.SIGINT)
            _, err = p.communicate(timeout=10)
            tcpdump_said[side] = [ln for ln in err.splitlines() if "packets" in ln]
        counters = router_counters()
        tc = ns(R, "tc", "-s", "qdisc", "show", "dev", sc["tc"][3]).strip() if "tc" in sc else None
    finally:
        for p in dumps:
            if p.poll() is None:
                p.kill()
        for p in procs:
            p.kill()
            p.wait()
        teardown()
    gt: dict[str, Any] = {"client_result": result, "router_counters": counters,
                          "tcpdump": tcpdump_said}
    if tc:
        gt["router_qdisc_stats"] = tc
    gt["captures"] = {side: summarise(path) for side, path in files.items()}
    return {"files": {k: f"{name}/{v.name}" for k, v in files.items()}, "ground_truth": gt}


def entry(name: str, made: dict[str, Any]) -> dict[str, Any]:
    sc = SCENARIOS[name]
    return {
        "what": sc["what"], "files": made["files"], "judge": sc["judge"],
        "compare": sc.get("compare"),
        "addresses": {"client": CLIENT, "router": [ROUTER_C, ROUTER_S], "server": SERVER},
        "ground_truth": made["ground_truth"], "expect_first": sc["expect_first"],
        "forbidden": sc["forbidden"], "forbidden_phrases": sc.get("forbidden_phrases", []),
        "notes": sc["notes"],
    }


def main(names: list[str]) -> None:
    if os.geteuid():
        sys.exit("run as root: it creates network namespaces")
    for n in names:
        if n not in SCENARIOS:
            sys.exit(f"unknown scenario {n}; known: {', '.join(SCENARIOS)}")
    truth_path = HERE / "truth.json"
    truth = json.loads(truth_path.read_text()) if truth_path.exists() else {}
    try:
        for name in names or list(SCENARIOS):
            src = SCENARIOS[name].get("same_run_as")
            if src:
                if src not in truth:
                    sys.exit(f"{name} reuses {src}'s run: make {src} first")
                d = HERE / name
                d.mkdir(exist_ok=True)
                for side, rel in truth[src]["files"].items():
                    shutil.copyfile(HERE / rel, d / f"{side}.pcap")
                made = {"files": {s: f"{name}/{s}.pcap" for s in truth[src]["files"]},
                        "ground_truth": truth[src]["ground_truth"]}
            else:
                made = capture(name)
            truth[name] = entry(name, made)
            gt = made["ground_truth"]
            print(name, gt["client_result"][:200],
                  [(c["rule"][-40:], c["packets"]) for c in gt["router_counters"]], flush=True)
            truth_path.write_text(json.dumps(dict(sorted(truth.items())), indent=1) + "\n")
    finally:
        teardown()
        shutil.rmtree(WORK, ignore_errors=True)
        shutil.rmtree(NETNS_ETC, ignore_errors=True)
        if NETNS_ETC.parent.exists() and not any(NETNS_ETC.parent.iterdir()):
            NETNS_ETC.parent.rmdir()


if __name__ == "__main__":
    main(sys.argv[1:])
