"""`curl` (7.81, Ubuntu 22.04) and OpenBSD `nc -z`, answered by the estate's TCP model.

A SYN that an NSG, a route or a stopped VM drops is never answered: curl exits 28 ("Connection
timed out after N milliseconds" with a timeout option, "Failed to connect … Connection timed
out" after the kernel's ~130 s of SYN retries without one), nc reports a timeout. A running VM
without a listener answers RST: curl exits 7 "Connection refused". What a service *says* over
HTTP is not part of the model: a connection that succeeds is reported as such, and the
application answer is "not modelled by the lab" (exit 2) rather than invented.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from urllib.parse import urlsplit

from lab.network import Connection, NotModelled
from lab.probes.common import (
    ProbeOutput,
    Target,
    Vantage,
    float_arg,
    int_arg,
    mtu_fault,
    resolve_target,
    short_options,
)

SYN_RETRY_MS = 129_564  # Linux gives up after 6 SYN retransmissions (1+2+4+…+64 s)
SERVICES = {22: "ssh", 53: "domain", 80: "http", 443: "https", 3306: "mysql",
            5432: "postgresql", 1433: "ms-sql-s", 3389: "ms-wbt-server"}
CURL_VALUE_SHORT = set("mowHXAudxebKTFryYzEcU")
CURL_VALUE_LONG = {"--max-time", "--connect-timeout", "--output", "--write-out", "--header",
                   "--request", "--user-agent", "--user", "--data", "--proxy", "--referer",
                   "--cookie", "--cacert", "--resolve", "--retry", "--interface", "--cert"}
CURL_FLAG_LONG = {"--verbose", "--silent", "--show-error", "--head", "--insecure", "--location",
                  "--fail", "--include", "--ipv4", "--http1.1", "--http2", "--no-progress-meter",
                  "--compressed", "--no-buffer"}


def _connect(v: Vantage, target: Target, port: int, argv: Sequence[str] = ()) -> Connection:
    """The connection as the model makes it; format 2: the name asked for goes to the
    firewall's application rules, and a ``snat_exhaustion`` fault fails this connection with
    its probability (seeded by the command)."""
    assert target.ip is not None
    if v.cat.scenario.format < 2:
        return v.cat.estate.connect(v.vm_name, target.ip, port, "tcp")
    conn = v.cat.estate.connect(v.vm_name, target.ip, port, "tcp",
                                fqdn=target.host if target.is_name else None)
    for fault in conn.faults:
        if (fault.kind == "snat_exhaustion" and conn.forward.snat == fault.at
                and v.rng([*argv, str(port)]).random() * 100 < float(fault.percent or 0)):
            return replace(conn, outcome="timeout", rtt_ms=0.0)
    return conn


def _guest_mtu(v: Vantage, conn: Connection) -> int:
    mtus = [v.vm.mtu] if v.vm else [1500]
    if conn.forward.hops:
        dst = v.cat.scenario.vm(conn.forward.hops[-1])
        if dst is not None:
            mtus.append(dst.mtu)
    return min(mtus)


def _black_holed(v: Vantage, conn: Connection) -> bool:
    """Full-size segments vanish: an MTU fault below the endpoints' MTU with ICMP blocked."""
    fault = mtu_fault(conn.faults)
    return bool(fault and fault.icmp_blocked and (fault.mtu or 0) < _guest_mtu(v, conn))


def _reset_early(conn: Connection) -> bool:
    return any(f.kind == "reset" and (f.after_bytes or 0) <= 4096 for f in conn.faults)


# -- curl ----------------------------------------------------------------------------------


@dataclass
class _CurlArgs:
    url: str | None = None
    flags: set[str] = field(default_factory=set)
    values: dict[str, str] = field(default_factory=dict)


_SHORT_NAMES = {"v": "--verbose", "s": "--silent", "S": "--show-error", "I": "--head",
                "k": "--insecure", "L": "--location", "f": "--fail", "i": "--include",
                "4": "--ipv4", "m": "--max-time", "o": "--output", "w": "--write-out",
                "H": "--header", "X": "--request"}


def _value_after(args: list[str], i: int, option: str) -> str:
    if i >= len(args):
        raise NotModelled(f"curl {option} without its value")
    return args[i]


def _curl_args(argv: Sequence[str]) -> _CurlArgs:
    out = _CurlArgs()
    args = list(argv[1:])
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg.startswith("--"):
            name, eq, value = arg.partition("=")
            if name in CURL_VALUE_LONG:
                if not eq:
                    value = _value_after(args, i, name)
                    i += 1
                out.values[name] = value
            elif name in CURL_FLAG_LONG:
                out.flags.add(name)
            else:
                raise NotModelled(f"curl option {name}")
        elif arg.startswith("-") and len(arg) > 1:
            for j, ch in enumerate(arg[1:], start=1):
                long = _SHORT_NAMES.get(ch, f"-{ch}")
                if ch in CURL_VALUE_SHORT:
                    value = arg[j + 1:]
                    if not value:
                        value = _value_after(args, i, f"-{ch}")
                        i += 1
                    out.values[long] = value
                    break
                if long.startswith("--"):
                    out.flags.add(long)
                else:
                    raise NotModelled(f"curl option -{ch}")
        elif out.url is None:
            out.url = arg
        else:
            raise NotModelled("curl with several URLs")
    return out


def _write_out(template: str | None, seconds: float) -> str:
    if template is None:
        return ""
    text = template.replace("\\n", "\n")
    for key in ("http_code", "response_code"):
        text = text.replace("%{" + key + "}", "000")
    for key in ("time_total", "time_connect"):
        text = text.replace("%{" + key + "}", f"{seconds:.6f}")
    return text


def curl(v: Vantage, argv: Sequence[str]) -> ProbeOutput:
    a = _curl_args(argv)
    if a.url is None:
        return ProbeOutput(2, "", "curl: try 'curl --help' or 'curl --manual' for more "
                           "information\n")
    url = a.url if "://" in a.url else f"http://{a.url}"
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https", "telnet"):
        raise NotModelled(f"curl over {scheme}://")
    try:
        host = parts.hostname or ""
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError:
        return ProbeOutput(3, "", "curl: (3) URL using bad/illegal format or missing URL\n")
    verbose = "--verbose" in a.flags
    show_errors = "--silent" not in a.flags or "--show-error" in a.flags
    limits = [float_arg(a.values[k], "curl", k) for k in ("--connect-timeout", "--max-time")
              if k in a.values]
    trace: list[str] = []

    def fail(code: int, message: str, seconds: float) -> ProbeOutput:
        err = "".join(f"{t}\n" for t in trace) if verbose else ""
        if verbose:
            err += "* Closing connection 0\n"
        if show_errors:
            err += f"curl: ({code}) {message}\n"
        return ProbeOutput(code, _write_out(a.values.get("--write-out"), seconds), err, seconds)

    target = resolve_target(v, host)
    if target.ip is None:
        trace.append(f"* Could not resolve host: {host}")
        return fail(6, f"Could not resolve host: {host}", 0.02)
    trace.append(f"*   Trying {target.ip}:{port}...")
    conn = _connect(v, target, port, argv)
    if conn.outcome == "timeout":
        if limits:
            ms = int(min(limits) * 1000) + 1
            trace.append(f"* Connection timed out after {ms} milliseconds")
            return fail(28, f"Connection timed out after {ms} milliseconds", ms / 1000)
        msg = (f"Failed to connect to {host} port {port} after {SYN_RETRY_MS} ms: "
               "Connection timed out")
        trace.append(f"* {msg}")
        return fail(28, msg, SYN_RETRY_MS / 1000)
    rtt = int(conn.rtt_ms)
    if conn.outcome == "refused":
        trace.append(f"* connect to {target.ip} port {port} failed: Connection refused")
        msg = f"Failed to connect to {host} port {port} after {rtt} ms: Connection refused"
        trace.append(f"* {msg}")
        return fail(7, msg, conn.rtt_ms / 1000)
    trace.append(f"* Connected to {host} ({target.ip}) port {port} (#0)")
    if conn.refused_by_proxy:
        return _proxy_refusal(a, host, port, scheme, conn, trace, fail)
    if _reset_early(conn):
        return fail(56, "Recv failure: Connection reset by peer", conn.rtt_ms / 1000)
    if _black_holed(v, conn):
        limit = min(limits) if limits else 300.0
        ms = int(limit * 1000)
        return fail(28, f"Operation timed out after {ms} milliseconds with 0 bytes received",
                    limit)
    owner = v.cat.scenario.vm_by_ip(target.ip)
    where = f"{owner.name} port {port}" if owner else f"{target.ip} port {port}"
    raise NotModelled(f"what the service on {where} answers over {scheme} (the TCP connection "
                      f"to {target.ip}:{port} was established in {rtt} ms)")


def _proxy_refusal(a: _CurlArgs, host: str, port: int, scheme: str, conn: Connection,
                   trace: list[str], fail: Callable[[int, str, float], ProbeOutput]
                   ) -> ProbeOutput:
    """Azure Firewall's proxy took the handshake and refused: a TLS session gets a RST after
    the ClientHello, an HTTP request ``HTTP/1.1 470`` with the deny reason *(lab: 470 is
    widely reported, not documented)*."""
    seconds = conn.rtt_ms / 1000
    if scheme == "https":
        trace.append("* TLSv1.3 (OUT), TLS handshake, Client hello (1):")
        return fail(35, "OpenSSL SSL_connect: Connection reset by peer in connection to "
                    f"{host}:{port} ", seconds)
    body = "Action: Deny. Reason: No rule matched. Proceeding with default action."
    if "--fail" in a.flags:
        return fail(22, "The requested URL returned error: 470", seconds)
    head = ("HTTP/1.1 470 status code 470\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")
    shown = head if "--head" in a.flags else (head + body if "--include" in a.flags else body)
    if "--output" in a.values:
        shown = ""
    template = a.values.get("--write-out")
    extra = (template or "").replace("\\n", "\n").replace("%{http_code}", "470").replace(
        "%{response_code}", "470")
    for key in ("time_total", "time_connect"):
        extra = extra.replace("%{" + key + "}", f"{seconds:.6f}")
    err = "".join(f"{t}\n" for t in trace) if "--verbose" in a.flags else ""
    return ProbeOutput(0, shown + extra, err, seconds)


# -- nc ------------------------------------------------------------------------------------


def _ports(spec: str) -> list[int]:
    lo, _, hi = spec.partition("-")
    first = int_arg(lo, "nc", "port")
    last = int_arg(hi, "nc", "port") if hi else first
    if last - first > 64:
        raise NotModelled(f"nc port scans wider than 64 ports ({spec})")
    return list(range(first, last + 1))


def nc(v: Vantage, argv: Sequence[str]) -> ProbeOutput:
    values, flags, positional = short_options("nc", argv, "w", "zvnu4")
    wait = float_arg(values["w"], "nc", "-w") if "w" in values else None
    if "u" in flags:
        raise NotModelled("nc -u (UDP has no connection to test)")
    if "z" not in flags:
        raise NotModelled("nc without -z (an interactive connection)")
    if len(positional) < 2:
        return ProbeOutput(1, "", "usage: nc [-46CDdFhklNnrStUuvZz] [-I length] [-i interval] "
                           "[-M ttl]\n\t  [-m minttl] [-O length] [-P proxy_username] "
                           "[-p source_port]\n\t  [-q seconds] [-s sourceaddr] [-T keyword] "
                           "[-V rtable] [-W recvlimit] [-w timeout]\n\t  [-X proxy_protocol] "
                           "[-x proxy_address[:port]] [destination] [port]\n")
    host = positional[0]
    ports = [p for spec in positional[1:] for p in _ports(spec)]
    verbose = "v" in flags
    target = resolve_target(v, host)
    if target.ip is None:
        from lab.probes.common import gai_error
        return ProbeOutput(1, "", f'nc: getaddrinfo for host "{host}" port {ports[0]}: '
                           f"{gai_error(target.failure)}\n")
    err: list[str] = []
    ok = False
    seconds = 0.0
    for port in ports:
        conn = _connect(v, target, port, argv)
        if conn.outcome == "connected":
            ok = True
            seconds += conn.rtt_ms / 1000
            shown = host if not target.is_name or "n" in flags else f"{host} ({target.ip})"
            err.append(f"Connection to {shown} {port} port [tcp/{SERVICES.get(port, '*')}] "
                       "succeeded!")
        elif conn.outcome == "refused":
            seconds += conn.rtt_ms / 1000
            err.append(f"nc: connect to {host} port {port} (tcp) failed: Connection refused")
        elif wait is not None:
            seconds += wait
            err.append(f"nc: connect to {host} port {port} (tcp) timed out: "
                       "Operation now in progress")
        else:
            seconds += SYN_RETRY_MS / 1000
            err.append(f"nc: connect to {host} port {port} (tcp) failed: Connection timed out")
    stderr = "".join(f"{line}\n" for line in err) if verbose else ""
    return ProbeOutput(0 if ok else 1, "", stderr, seconds)
