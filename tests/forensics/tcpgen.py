"""Random synthetic TCP conversations, and a frame-by-frame diff of our flags against tshark.

The generator produces the awkward traffic real captures rarely hold in quantity (ACKs of
unseen data, duplicate-ACK bursts, zero windows, window-full sends with scaling, port reuse,
mid-stream starts), so that differential runs against tshark 4.0 find the corner cases of
``tcp.analysis.*``. A seed fully determines a capture, so a mismatch is reproducible.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field

from forensics.engine import analyze_capture
from forensics.tcp_analysis import ALL_FLAG_NAMES, flag_names
from lab.packets import ethernet, ip4, ipv4_packet, tcp_segment
from lab.pcap import PcapWriter

CONVERSATIONS = 40
DELAYS_NS = (50_000, 1_000_000, 2_500_000, 4_000_000, 15_000_000, 25_000_000, 300_000_000)


class _Conversation:
    """One TCP conversation being written: both sides' next sequence, window and scaling."""

    def __init__(self, rng: random.Random, w: PcapWriter, t: int, ports: tuple[int, int],
                 addrs: tuple[bytes, bytes]) -> None:
        self.rng, self.w, self.t, self.ports, self.addrs = rng, w, t, ports, addrs
        self.isn = [rng.choice([rng.randrange(2**32), 2**32 - rng.randrange(1, 5000)]),
                    rng.randrange(2**32)]
        self.nxt = list(self.isn)
        self.win = [rng.choice([0, 1000, 5000, 65535]), rng.choice([1000, 8192, 65535])]
        self.scale: list[int | None] = [rng.choice([None, 0, 2, 7]), rng.choice([None, 0, 3, 7])]
        self.hist: list[list[tuple[int, int]]] = [[], []]

    def emit(self, d: int, seq: int, ack: int, flags: int, window: int, plen: int,
             opts: bytes = b"") -> None:
        src, dst = self.addrs if d == 0 else self.addrs[::-1]
        sp, dp = self.ports if d == 0 else self.ports[::-1]
        seg = tcp_segment(sp, dp, seq, ack, flags, window, bytes(plen), opts)
        self.w.add(self.t, ethernet(ipv4_packet(src, dst, 6, seg)))
        self.hist[d].append((seq, plen))

    def pause(self) -> None:
        self.t += self.rng.choice(DELAYS_NS)

    def handshake(self) -> None:
        rng, isn = self.rng, self.isn
        ws = [b"" if s is None else bytes([1, 3, 3, s]) for s in self.scale]
        self.emit(0, isn[0], 0, 0x02, 65535, 0, ws[0])
        self.nxt[0] = (isn[0] + 1) & 0xFFFFFFFF
        self.pause()
        if rng.random() < 0.2:
            self.emit(0, isn[0], 0, 0x02, 65535, 0, ws[0])
            self.pause()
        if rng.random() < 0.9:
            self.emit(1, isn[1], self.nxt[0], 0x12, 65535, 0, ws[1])
            self.nxt[1] = (isn[1] + 1) & 0xFFFFFFFF
            self.pause()
        self.emit(0, self.nxt[0], self.nxt[1], 0x10, self.win[0], 0)
        self.pause()

    def body(self, reuse: bool) -> None:  # noqa: C901 - one branch per kind of event
        rng, nxt, win, scale = self.rng, self.nxt, self.win, self.scale
        ack_of = [nxt[1], nxt[0]]  # what each side currently acknowledges
        for _ in range(rng.randrange(5, 60)):
            d = rng.randrange(2)
            o = 1 - d
            r = rng.random()
            flags, seq, ack, w_ = 0x10, nxt[d], nxt[o], win[d]
            plen = rng.choice([0, 0, 1, 10, 100, 1000, 1460])
            if r < 0.08:  # window change
                w_ = rng.choice([0, 0, 100, 1000, 4000, 65535])
                plen = 0
            elif r < 0.16:  # retransmit something recent
                if self.hist[d]:
                    seq, plen = rng.choice(self.hist[d][-5:])
            elif r < 0.22:  # keep-alive
                seq = (nxt[d] - 1) & 0xFFFFFFFF
                plen = rng.choice([0, 1])
            elif r < 0.28:  # a segment lost before the capture point
                nxt[d] = (nxt[d] + rng.choice([1, 100, 1460])) & 0xFFFFFFFF
                seq = nxt[d]
            elif r < 0.34:  # ACK of something not (yet) sent
                ack = (nxt[o] + rng.choice([-1, 1, 100, 1460])) & 0xFFFFFFFF
                plen = 0
            elif r < 0.42:  # duplicate-ACK burst
                plen = 0
                for _ in range(rng.randrange(1, 4)):
                    self.emit(d, seq, ack, flags, w_, 0)
                    self.t += rng.choice([100_000, 2_000_000])
            elif r < 0.46:  # fill the peer's advertised window exactly
                so = scale[o]
                shift = so if so is not None and scale[d] is not None else 0
                plen = ((ack_of[o] + (win[o] << shift)) - seq) & 0xFFFFFFFF
                if plen > 3000 or plen == 0:
                    plen = 10
            elif r < 0.49:
                flags = 0x11
            elif r < 0.51:
                flags = 0x14 if rng.random() < 0.5 else 0x04
            elif r < 0.53 and reuse:  # a SYN with a new ISN on the same ports
                self.emit(0, rng.randrange(2**32), 0, 0x02, 65535, 0)
                self.pause()
                continue
            elif r < 0.56:
                ack = ack_of[d]  # an old ACK
            elif r < 0.58:
                flags = 0x18
            self.emit(d, seq, ack, flags, w_, plen)
            win[d] = w_
            ack_of[d] = ack
            end = (seq + plen + (1 if flags & 0x03 else 0)) & 0xFFFFFFFF
            if (end - nxt[d]) & 0xFFFFFFFF < 2**31:
                nxt[d] = end
            self.pause()


def generate(seed: int, conversations: int = CONVERSATIONS, port_reuse: bool = True) -> PcapWriter:
    """The capture of one seed: conversations one after another, a third of them mid-stream.

    With ``port_reuse`` a conversation that began with a handshake sometimes sends a SYN with
    a new ISN and then carries on with its old sequence numbers (where tshark 4.0 still
    differs from us, see docs/forensics.md).
    """
    rng = random.Random(seed)
    w = PcapWriter()
    t = 1_000_000_000_000
    for i in range(conversations):
        ports = (10000 + i, rng.choice([80, 443]))
        addrs = (ip4("10.0.0.1"), ip4(f"10.0.{i % 3}.2"))
        style = rng.choice(["normal", "normal", "midstream"])
        conv = _Conversation(rng, w, t, ports, addrs)
        if style != "midstream":
            conv.handshake()
        conv.body(port_reuse and style != "midstream")
        t = conv.t + 1000
    return w


def tshark_available() -> bool:
    return shutil.which("tshark") is not None


def tshark_flags(path: str) -> dict[int, frozenset[str]]:
    """tshark's ``tcp.analysis.*`` flags per frame (frames without any are left out)."""
    cmd = ["tshark", "-n", "-r", path, "-Y", "tcp.analysis.flags", "-T", "fields",
           "-e", "frame.number"]
    for name in ALL_FLAG_NAMES:
        cmd += ["-e", "tcp.analysis." + name]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    res: dict[int, frozenset[str]] = {}
    for line in out.splitlines():
        parts = line.split("\t")
        names = frozenset(ALL_FLAG_NAMES[i] for i, v in enumerate(parts[1:]) if v)
        if names:
            res[int(parts[0])] = names
    return res


def our_flags(path: str) -> dict[int, frozenset[str]]:
    return {k: frozenset(flag_names(v)) for k, v in analyze_capture(path).frame_flags.items()}


@dataclass
class Diff:
    """The result of one seed: packets, and per differing frame (ours, tshark's)."""

    seed: int
    packets: int
    frames: dict[int, tuple[frozenset[str], frozenset[str]]] = field(default_factory=dict)

    def per_flag(self) -> dict[str, tuple[int, int]]:
        """Flag → (frames where only we set it, frames where only tshark sets it)."""
        out: dict[str, tuple[int, int]] = {}
        for ours, theirs in self.frames.values():
            for name in ours ^ theirs:
                extra, missing = out.get(name, (0, 0))
                out[name] = (extra + 1, missing) if name in ours else (extra, missing + 1)
        return out


def diff_seed(seed: int, keep_dir: str | None = None, port_reuse: bool = True) -> Diff:
    """Generate the seed's capture, run both analysers and list the frames that differ."""
    w = generate(seed, port_reuse=port_reuse)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(keep_dir or tmp, f"tcpdiff_{seed}.pcap")
        w.write(path)
        ours, theirs = our_flags(path), tshark_flags(path)
    empty: frozenset[str] = frozenset()
    res = Diff(seed, len(w.packets))
    for k in sorted(set(ours) | set(theirs)):
        a, b = ours.get(k, empty), theirs.get(k, empty)
        if a != b:
            res.frames[k] = (a, b)
    return res
