"""`ping` (iputils), `traceroute` and `mtr --report`, answered by the estate's packet model.

ping prints iputils' summary (``N packets transmitted, M received, X% packet loss``) and exits 1
when nothing came back; a loss fault on the path drops packets with its probability (seeded by
the command, so the answer is stable); a latency fault adds to every round trip; an MTU fault
drops large DF packets (``-M do -s SIZE``), with "Frag needed" errors unless ICMP is blocked.
traceroute lists the forwarding VMs (NVAs) and the destination; Azure's fabric itself never
answers with TTL-exceeded, so a VNet hop is invisible and a drop shows as ``* * *``.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from ipaddress import IPv4Address

from lab.network import NotModelled
from lab.probes.common import (
    LOCAL_HOSTNAME,
    ProbeOutput,
    Vantage,
    float_arg,
    gai_error,
    int_arg,
    loss_rate,
    mtu_fault,
    resolve_target,
    short_options,
)


def _fmt_pct(value: float) -> str:
    return f"{value:g}%"


def _ping_args(argv: Sequence[str]) -> tuple[str, dict[str, str], set[str]]:
    values, flags, hosts = short_options("ping", argv, "cWwisMtI", "nq4vD")
    if len(hosts) > 1:
        raise NotModelled("ping with several hosts")
    if not hosts:
        raise NotModelled("ping without a destination")
    return hosts[0], values, flags


def ping(v: Vantage, argv: Sequence[str]) -> ProbeOutput:
    host, values, flags = _ping_args(argv)
    if "c" not in values and "w" not in values:
        raise NotModelled("ping without -c or -w runs until interrupted; give -c COUNT")
    target = resolve_target(v, host)
    if target.ip is None:
        return ProbeOutput(2, "", f"ping: {host}: {gai_error(target.failure)}\n")
    interval = float_arg(values.get("i", "1"), "ping", "-i")
    deadline = float_arg(values["w"], "ping", "-w") if "w" in values else None
    count = int_arg(values["c"], "ping", "-c") if "c" in values else int(deadline or 1)
    if deadline is not None:
        count = min(count, max(1, int(deadline / max(interval, 0.2))))
    count = max(1, min(count, 1000))
    size = int_arg(values.get("s", "56"), "ping", "-s")
    df = values.get("M") == "do"
    conn = v.cat.estate.ping(v.vm_name, target.ip)
    rng = v.rng(argv)
    head = f"PING {host} ({target.ip}) {size}({size + 28}) bytes of data.\n"
    if v.vm is not None and df and size + 28 > v.vm.mtu:
        errs = [f"ping: local error: message too long, mtu={v.vm.mtu}"] * count
        return _ping_summary(head, errs, host, count, [], count, interval, quiet="q" in flags)
    replies: list[float] = []
    lines: list[str] = []
    errors = 0
    fault = mtu_fault(conn.faults)
    loss = loss_rate(conn.faults)
    ttl = 64 - max(0, len(conn.forward.hops) - 2)
    for seq in range(1, count + 1):
        if conn.outcome != "connected":
            continue
        if df and fault and size + 28 > (fault.mtu or 0):
            if not fault.icmp_blocked:
                errors += 1
                at = v.cat.scenario.vm(fault.at)
                lines.append(f"From {at.ip if at else target.ip} icmp_seq={seq} Frag needed and "
                             f"DF set (mtu = {fault.mtu})")
            continue
        if rng.random() < 1 - (1 - loss) ** 2:
            continue
        rtt = max(0.2, conn.rtt_ms * (0.85 + 0.3 * rng.random()))
        replies.append(rtt)
        lines.append(f"{size + 8} bytes from {target.ip}: icmp_seq={seq} ttl={ttl} "
                     f"time={rtt:.3g} ms")
    return _ping_summary(head, lines, host, count, replies, errors, interval,
                         quiet="q" in flags)


def _ping_summary(head: str, lines: list[str], host: str, count: int, replies: list[float],
                  errors: int, interval: float, quiet: bool) -> ProbeOutput:
    received = len(replies)
    lost = 100.0 * (count - received) / count
    elapsed = int((count - 1) * interval * 1000) + (3 if replies else 40)
    err_text = f"+{errors} errors, " if errors else ""
    out = head + ("" if quiet else "".join(f"{line}\n" for line in lines))
    out += (f"\n--- {host} ping statistics ---\n{count} packets transmitted, {received} received, "
            f"{err_text}{_fmt_pct(round(lost, 4))} packet loss, time {elapsed}ms\n")
    if replies:
        mdev = statistics.pstdev(replies)
        out += (f"rtt min/avg/max/mdev = {min(replies):.3f}/{statistics.mean(replies):.3f}/"
                f"{max(replies):.3f}/{mdev:.3f} ms\n")
    else:
        out += "\n"
    seconds = (count - 1) * interval + (0.01 if replies else 1.0)
    return ProbeOutput(0 if received else 1, out, "", seconds)


# -- traceroute and mtr --------------------------------------------------------------------


def _path(v: Vantage, ip: IPv4Address, protocol: str, port: int) -> tuple[list[str], bool]:
    """The addresses that answer a probe with rising TTL, and whether the destination did."""
    delivery = v.cat.estate.deliver(v.vm_name, ip, protocol, port)
    hops: list[str] = []
    scenario = v.cat.scenario
    for name in delivery.hops[1:]:
        vm = scenario.vm(name)
        if vm is not None:
            hops.append(str(vm.ip))
    reached = delivery.delivered and bool(hops) and hops[-1] == str(ip)
    return hops, reached


def traceroute(v: Vantage, argv: Sequence[str]) -> ProbeOutput:
    args = list(argv[1:])
    protocol, port, max_hops, numeric = "udp", 33434, 30, False
    host: str | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg in ("-T", "--tcp"):
            protocol, port = "tcp", 80 if port == 33434 else port
        elif arg in ("-I", "--icmp"):
            protocol = "icmp"
        elif arg == "-n":
            numeric = True
        elif arg in ("-m", "-p", "-q", "-w") and i < len(args):
            value = int_arg(args[i], "traceroute", arg)
            i += 1
            if arg == "-m":
                max_hops = max(1, min(value, 64))
            elif arg == "-p":
                port = value
        elif arg.startswith("-"):
            raise NotModelled(f"traceroute option {arg}")
        elif host is None:
            host = arg
        else:
            continue  # packet length
    if host is None:
        raise NotModelled("traceroute without a host")
    target = resolve_target(v, host)
    if target.ip is None:
        return ProbeOutput(2, "", f"{host}: {gai_error(target.failure)}\nCannot handle "
                           f'"host" cmdline arg `{host}\' on position 1 (argc 1)\n')
    hops, reached = _path(v, target.ip, protocol, port)
    out = [f"traceroute to {host} ({target.ip}), {max_hops} hops max, 60 byte packets"]
    rng = v.rng(argv)
    for n in range(1, max_hops + 1):
        if n <= len(hops):
            addr = hops[n - 1]
            shown = addr if numeric else f"{addr} ({addr})"
            times = "  ".join(f"{0.6 + n * 0.4 + rng.random() * 0.5:.3f} ms" for _ in range(3))
            out.append(f"{n:2d}  {shown}  {times}")
            if reached and n == len(hops):
                break
        else:
            out.append(f"{n:2d}  * * *")
    seconds = 0.5 if reached else 5.0 * (max_hops - len(hops))
    return ProbeOutput(0, "\n".join(out) + "\n", "", seconds)


def mtr(v: Vantage, argv: Sequence[str]) -> ProbeOutput:
    args = list(argv[1:])
    report, count, host = False, 10, None
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg in ("-r", "--report", "-w", "--report-wide", "-rw", "-wr", "-n", "--no-dns",
                   "-rn", "-nr", "-b", "--show-ips"):
            report = report or arg not in ("-n", "--no-dns", "-b", "--show-ips")
        elif arg in ("-c", "--report-cycles") and i < len(args):
            count = max(1, min(int_arg(args[i], "mtr", arg), 100))
            i += 1
        elif arg.startswith("-"):
            raise NotModelled(f"mtr option {arg}")
        elif host is None:
            host = arg
    if not report:
        raise NotModelled("interactive mtr (use --report)")
    if host is None:
        raise NotModelled("mtr without a host")
    target = resolve_target(v, host)
    if target.ip is None:
        return ProbeOutput(1, "", f"mtr: Failed to resolve host: {host}: "
                           f"{gai_error(target.failure)}\n")
    hops, reached = _path(v, target.ip, "icmp", 0)
    stamp = v.cat.scenario.now.strftime("%Y-%m-%dT%H:%M:%S+0000")
    local = v.vm.name if v.vm else LOCAL_HOSTNAME
    lines = [f"Start: {stamp}",
             f"HOST: {local:<28}Loss%   Snt   Last   Avg  Best  Wrst StDev"]
    rows = hops if reached else [*hops, "???"]
    for n, addr in enumerate(rows, start=1):
        lost = addr == "???"
        loss, rtt = ("100.0", 0.0) if lost else ("  0.0%", 0.5 + n * 0.4)
        lines.append(f"{n:3d}.|-- {addr:<26}{loss:>6}{count:6d}{rtt:7.1f}{rtt:6.1f}"
                     f"{rtt:6.1f}{rtt:6.1f}{0.0:6.1f}")
    return ProbeOutput(0, "\n".join(lines) + "\n", "", float(count))
