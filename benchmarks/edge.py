"""The HTTP edge under attack: signed slash commands while unauthenticated clients send
oversized, slow, malformed and unsigned requests at the same port.

The server is a real `ghost serve --no-worker` in Slack's HTTP mode (SQLite, the mock Slack Web
API), on 127.0.0.1 only. At the same time, from this process:
- signed: `/ghost help` slash commands, signed like Slack's, from 8 clients for the whole
  attack (their latency);
- oversized: POSTs claiming 150 MB (Content-Length) and chunked POSTs without one, each
  sending up to 8 MB until the server closes it;
- slow: connections that send their headers and then a body byte every 0.5 s, and
  connections that never finish their headers (a header line every 0.5 s);
- malformed: a negative Content-Length, bytes that are not HTTP, signed bodies that are not
  JSON;
- unsigned: 512 KiB form posts without a signature.
Every loop is bounded in count and in time (at most ~60 s), and nothing leaves loopback.
It samples the server's RSS and open sockets every 0.2 s and prints the figures.
Targets: RSS under 300 MB, signed p99 under 300 ms, every attack answered 4xx or closed.

Run: .venv/bin/python benchmarks/edge.py [--duration 17] [--slow 150]
"""

from __future__ import annotations

import argparse
import hashlib
import hmac
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fakes.slack_api import FakeSlack  # noqa: E402

SECRET = "bench-signing-secret"
DEADLINE_S = 60.0
CHUNK = b"x" * 65536


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(p / 100 * (len(ordered) - 1))))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def signed_headers(body: bytes, ts: int | None = None) -> dict[str, str]:
    stamp = str(int(time.time()) if ts is None else ts)
    mac = hmac.new(SECRET.encode(), f"v0:{stamp}:".encode() + body, hashlib.sha256)
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={mac.hexdigest()}"}


def request_head(path: str, headers: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", *[f"{k}: {v}" for k, v in
                                                             headers.items()]]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def status_of(sock: socket.socket) -> str:
    """The answer's status code, or 'closed' when the server closed without one."""
    try:
        data = sock.recv(4096)
    except OSError:
        return "closed"
    parts = data.split(b" ", 2)
    return parts[1].decode() if len(parts) > 1 and data.startswith(b"HTTP/") else "closed"


class Server:
    def __init__(self, port: int, data_dir: Path, slack: FakeSlack) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GHOST_", "SLACK_"))}
        env |= {"SLACK_BOT_TOKEN": "xoxb-bench", "SLACK_SIGNING_SECRET": SECRET,
                "SLACK_API_URL": slack.base_url, "GHOST_DATA_DIR": str(data_dir),
                "PORT": str(port), "GHOST_LOG_FORMAT": "json", "NO_PROXY": "127.0.0.1",
                "no_proxy": "127.0.0.1",
                # --no-worker calls no model; the settings still want a key (never used)
                "GEMINI_API_KEY": "unused", "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:9"}
        env.pop("SLACK_APP_TOKEN", None)
        self.log = data_dir / "serve.log"
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "bot.cli", "serve", "--no-worker", "--host",
                 "127.0.0.1"], env=env, cwd=data_dir, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
                    s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                    if status_of(s) == "200":
                        return
            except OSError:
                time.sleep(0.1)
        raise SystemExit(f"ghost serve did not start: {self.log.read_text()[-2000:]}")

    def rss_mb(self) -> tuple[float, float]:
        fields = dict(line.split(":", 1) for line in
                      Path(f"/proc/{self.proc.pid}/status").read_text().splitlines()
                      if ":" in line)
        return (int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024)

    def sockets(self) -> int:
        count = 0
        for fd in Path(f"/proc/{self.proc.pid}/fd").iterdir():
            try:
                count += os.readlink(fd).startswith("socket:")
            except OSError:
                pass
        return count

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


class Load:
    def __init__(self, port: int, stop_at: float) -> None:
        self.port = port
        self.stop_at = stop_at
        self.outcomes: dict[str, Counter[str]] = {}
        self.times: dict[str, list[float]] = {}
        self.lock = threading.Lock()

    def record(self, kind: str, outcome: str, took: float) -> None:
        with self.lock:
            self.outcomes.setdefault(kind, Counter())[outcome] += 1
            self.times.setdefault(kind, []).append(took)

    def connect(self) -> socket.socket:
        return socket.create_connection(("127.0.0.1", self.port), timeout=30)

    # ------------------------------------------------------------------ the kinds
    def signed(self, until: float) -> None:
        """Slash commands one after the other until ``until``: the attack runs meanwhile."""
        i = 0
        while time.monotonic() < min(until, self.stop_at):
            i += 1
            time.sleep(0.02)
            body = urlencode({"command": "/ghost", "text": "help", "user_id": "UBENCH",
                              "channel_id": "CBENCH", "team_id": "T1",
                              "trigger_id": f"t{i}"}).encode()
            head = request_head("/slack/commands", {
                "Content-Type": "application/x-www-form-urlencoded",
                "Content-Length": str(len(body)), "Connection": "close",
                **signed_headers(body)})
            start = time.monotonic()
            try:
                with self.connect() as sock:
                    sock.sendall(head + body)
                    outcome = status_of(sock)
            except OSError as exc:
                outcome = type(exc).__name__
            self.record("signed", outcome, time.monotonic() - start)

    def oversized(self, chunked: bool) -> None:
        headers = {"Content-Type": "application/json", **signed_headers(b"{}")}
        headers |= {"Transfer-Encoding": "chunked"} if chunked else \
            {"Content-Length": str(150 << 20)}
        start = time.monotonic()
        outcome = "closed"
        try:
            with self.connect() as sock:
                sock.sendall(request_head("/slack/events", headers))
                sent = 0
                try:
                    while sent < (8 << 20) and time.monotonic() < self.stop_at:
                        sock.sendall(b"10000\r\n" + CHUNK + b"\r\n" if chunked else CHUNK)
                        sent += len(CHUNK)
                except OSError:
                    pass
                outcome = status_of(sock)
        except OSError as exc:
            outcome = type(exc).__name__
        self.record("oversized (chunked)" if chunked else "oversized (150 MB claimed)",
                    outcome, time.monotonic() - start)

    def slow_body(self) -> None:
        body = b"text=" + b"y" * 400
        start = time.monotonic()
        outcome = "still open"
        try:
            with self.connect() as sock:
                sock.sendall(request_head("/slack/commands", {
                    "Content-Type": "application/x-www-form-urlencoded",
                    "Content-Length": str(len(body)), **signed_headers(body)}))
                sock.settimeout(0.5)
                for byte in body:
                    if time.monotonic() > self.stop_at:
                        break
                    try:
                        sock.sendall(bytes([byte]))
                        data = sock.recv(4096)
                    except TimeoutError:
                        continue
                    except OSError:
                        outcome = "closed"
                        break
                    parts = data.split(b" ", 2)
                    outcome = parts[1].decode() if len(parts) > 1 else "closed"
                    break
        except OSError as exc:
            outcome = type(exc).__name__
        self.record("slow body", outcome, time.monotonic() - start)

    def slow_headers(self) -> None:
        start = time.monotonic()
        outcome = "still open"
        try:
            with self.connect() as sock:
                sock.sendall(b"POST /slack/commands HTTP/1.1\r\nHost: x\r\n")
                sock.settimeout(0.5)
                while time.monotonic() < self.stop_at:
                    try:
                        sock.sendall(b"X-Slow: 1\r\n")
                        if sock.recv(4096) == b"":
                            outcome = "closed"
                            break
                    except TimeoutError:
                        continue
                    except OSError:
                        outcome = "closed"
                        break
        except OSError as exc:
            outcome = type(exc).__name__
        self.record("slow headers", outcome, time.monotonic() - start)

    def malformed(self, i: int) -> None:
        bad_json = b"{not json"
        shapes = [
            request_head("/slack/events", {"Content-Length": "-5"}),
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(64),
            request_head("/slack/events", {"Content-Type": "application/json",
                                           "Content-Length": str(len(bad_json)),
                                           **signed_headers(bad_json)}) + bad_json,
            b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n",
        ]
        start = time.monotonic()
        try:
            with self.connect() as sock:
                sock.sendall(shapes[i % len(shapes)])
                outcome = status_of(sock)
        except OSError as exc:
            outcome = type(exc).__name__
        self.record("malformed", outcome, time.monotonic() - start)

    def unsigned(self) -> None:
        body = b"text=" + b"z" * (512 << 10)
        start = time.monotonic()
        try:
            with self.connect() as sock:
                sock.sendall(request_head("/slack/commands", {
                    "Content-Type": "application/x-www-form-urlencoded",
                    "Content-Length": str(len(body))}))
                try:
                    sock.sendall(body)
                except OSError:
                    pass
                outcome = status_of(sock)
        except OSError as exc:
            outcome = type(exc).__name__
        self.record("unsigned 512 KiB", outcome, time.monotonic() - start)


def run(args: argparse.Namespace) -> int:
    port = free_port()
    slack = FakeSlack().start()
    with tempfile.TemporaryDirectory(prefix="ghost-edge-bench-") as tmp:
        server = Server(port, Path(tmp), slack)
        idle_rss, _ = server.rss_mb()
        idle_sockets = server.sockets()
        stop_at = time.monotonic() + DEADLINE_S
        load = Load(port, stop_at)
        samples: list[tuple[float, int]] = []
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.is_set():
                try:
                    samples.append((server.rss_mb()[0], server.sockets()))
                except OSError:
                    return
                time.sleep(0.2)

        threading.Thread(target=sample, daemon=True).start()
        attackers = [threading.Thread(target=load.slow_body) for _ in range(args.slow)]
        attackers += [threading.Thread(target=load.slow_headers) for _ in range(args.slow)]
        attackers += [threading.Thread(target=load.oversized, args=(i % 2 == 0,))
                      for i in range(args.oversized)]
        attackers += [threading.Thread(target=lambda: [load.unsigned() for _ in range(25)])
                      for _ in range(args.unsigned // 25)]
        attackers += [threading.Thread(target=lambda k=k: [load.malformed(k * 50 + i)
                                                           for i in range(50)])
                      for k in range(args.malformed // 50)]
        began = time.monotonic()
        clients = [threading.Thread(target=load.signed, args=(began + args.duration,))
                   for _ in range(8)]
        for thread in attackers + clients:
            thread.start()
        for thread in clients:
            thread.join(max(0.0, stop_at - time.monotonic()))
        signed_done = time.monotonic() - began
        for thread in attackers:
            thread.join(max(0.0, stop_at - time.monotonic()) + 5)
        sampling.set()
        end_rss, peak_rss = server.rss_mb()
        end_sockets = server.sockets()
        server.stop()
        log_lines = server.log.read_text(errors="replace").splitlines()
    slack.stop()

    signed = load.times.get("signed", [])
    ok = load.outcomes.get("signed", Counter())
    print(f"ghost serve (HTTP mode) on 127.0.0.1:{port}, {len(attackers)} attacking "
          f"connections/threads alongside {len(clients)} signed clients")
    print(f"signed /ghost help: {len(signed)} sent in {signed_done:.1f} s, "
          f"{ok.get('200', 0)} answered 200; p50 {statistics.median(signed) * 1000:.0f} ms, "
          f"p99 {pct(signed, 99) * 1000:.0f} ms, max {max(signed) * 1000:.0f} ms")
    for kind in sorted(k for k in load.outcomes if k != "signed"):
        times = load.times[kind]
        print(f"{kind:<27} {sum(load.outcomes[kind].values()):>4} × "
              f"{dict(load.outcomes[kind].most_common())}  answered in p50 "
              f"{statistics.median(times):.2f} s, max {max(times):.2f} s")
    peak_sockets = max(s for _r, s in samples) if samples else end_sockets
    print(f"server RSS: idle {idle_rss:.0f} MB, peak {peak_rss:.0f} MB (VmHWM), at the end "
          f"{end_rss:.0f} MB")
    print(f"server sockets: idle {idle_sockets}, peak {peak_sockets}, at the end "
          f"{end_sockets}")
    bodies = sum("zzzzzzzzzz" in line or "yyyyyyyyyy" in line for line in log_lines)
    print(f"server log: {len(log_lines)} lines, {bodies} containing a request body")
    good = (peak_rss < 300 and pct(signed, 99) < 0.3 and ok.get("200", 0) == len(signed)
            and bodies == 0)
    print(f"targets (RSS < 300 MB, signed p99 < 300 ms, every signed 200, no body logged): "
          f"{'met' if good else 'MISSED'}")
    return 0 if good else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=17.0, help="seconds of signed "
                        "traffic (the slow connections are cut off at 10 and 15 s)")
    parser.add_argument("--slow", type=int, default=150, help="slow-body and slow-header "
                        "connections, each")
    parser.add_argument("--oversized", type=int, default=20)
    parser.add_argument("--unsigned", type=int, default=300)
    parser.add_argument("--malformed", type=int, default=300)
    return run(parser.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
