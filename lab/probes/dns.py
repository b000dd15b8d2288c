"""`dig` (BIND 9.16 output) and `nslookup`, answered by the estate's resolver for the vantage.

The guest (and the engineer's machine) asks the systemd-resolved stub 127.0.0.53, which
forwards to the VNet's DNS servers or Azure DNS; dig reports ``status: NOERROR|NXDOMAIN`` and
``;; connection timed out; no servers could be reached`` (exit 9) when nothing answers. Asking
a chosen server (``@server``) is answered where it is the vantage's own resolver path, and for
168.63.129.16 from a VM (Azure-provided DNS answers every VM, custom DNS servers or not).
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from lab.network import DnsAnswer, NotModelled
from lab.network.dns import azure_answer, normalise
from lab.probes.common import STUB_RESOLVER, ProbeOutput, Vantage, as_ip

DIG_VERSION = "9.16.48-Ubuntu"
TIMEOUT_LINE = ";; connection timed out; no servers could be reached\n"
AZURE_DNS = "168.63.129.16"
QTYPES = ("A", "AAAA", "CNAME", "MX", "NS", "PTR", "SOA", "SRV", "TXT", "ANY")


def _fqdn(name: str) -> str:
    return name if name.endswith(".") else name + "."


def _server_answer(v: Vantage, server: str | None, name: str, qtype: str) -> DnsAnswer:
    """Resolve through the vantage's path; a different explicit server is not modelled."""
    if server is None or server == STUB_RESOLVER:
        return v.resolve(name, qtype)
    addr = as_ip(server)
    if addr is None:
        raise NotModelled(f"a DNS server given by name ({server})")
    if v.vm is None:
        if v.cat.scenario.vm_by_ip(addr) or str(addr) == "168.63.129.16":
            return DnsAnswer("TIMEOUT", (), server)
        return v.resolve(name, qtype)
    vnet = v.cat.scenario.vnet(v.vm.vnet)
    own = [str(d) for d in vnet.dns_servers] if vnet and vnet.dns_servers else ["168.63.129.16"]
    if str(addr) in own:
        return v.resolve(name, qtype)
    if str(addr) == AZURE_DNS:
        # every VM reaches Azure-provided DNS, whatever servers its VNet hands out (NSGs do
        # not apply to it): it answers as Azure DNS does in the VM's own VNet
        answer = azure_answer(v.cat.scenario, v.vm.vnet, normalise(name), AZURE_DNS)
        if qtype.upper() != "A" and answer.rcode == "NOERROR":
            return DnsAnswer("NOERROR", (), answer.server, answer.cname, answer.zone)
        return answer
    raise NotModelled(f"querying DNS server {server} directly from {v.vm.name} (the lab answers "
                      f"through the VM's own resolver path: {', '.join(own)})")


def _answer_lines(name: str, answer: DnsAnswer) -> list[tuple[str, int, str, str]]:
    rows: list[tuple[str, int, str, str]] = []
    owner = _fqdn(name)
    if answer.cname:
        rows.append((owner, 60, "CNAME", _fqdn(answer.cname)))
        owner = _fqdn(answer.cname)
    ttl = 10 if answer.zone else 300
    rows += [(owner, ttl, "A", str(a)) for a in answer.addresses]
    return rows


def dig(v: Vantage, argv: Sequence[str]) -> ProbeOutput:
    server: str | None = None
    name: str | None = None
    qtype = "A"
    short = False
    answer_only = False
    args = list(argv[1:])
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg.startswith("@"):
            server = arg[1:]
        elif arg == "+short":
            short = True
        elif arg in ("+noall", "+answer", "+nocmd", "+nocomments", "+nostats", "+noquestion"):
            answer_only = answer_only or arg in ("+noall", "+answer")
        elif arg in ("+trace", "+nssearch") or arg == "-x":
            raise NotModelled(f"dig {arg}")
        elif arg.startswith("+"):
            continue
        elif arg == "-t" and i < len(args):
            qtype = args[i].upper()
            i += 1
        elif arg.upper() in QTYPES and name is not None:
            qtype = arg.upper()
        elif arg.startswith("-"):
            raise NotModelled(f"dig option {arg}")
        elif name is None:
            name = arg
        else:
            raise NotModelled(f"dig with several names ({name}, {arg})")
    if name is None:
        raise NotModelled("dig without a name (a query for the root servers)")
    answer = _server_answer(v, server, name, qtype)
    if answer.rcode == "TIMEOUT":
        return ProbeOutput(9, TIMEOUT_LINE if short else
                           f"\n; <<>> DiG {DIG_VERSION} <<>> {' '.join(argv[1:])}\n"
                           ";; global options: +cmd\n" + TIMEOUT_LINE, "", 15.0)
    rows = _answer_lines(name, answer) if qtype in ("A", "ANY") else []
    if short:
        return ProbeOutput(0, "".join(f"{r[3]}\n" for r in rows))
    body = "".join(f"{o}\t\t{t}\tIN\t{k}\t{d}\n" for o, t, k, d in rows)
    if answer_only:
        return ProbeOutput(0, body)
    shown = server or STUB_RESOLVER
    qid = zlib.crc32(f"{name}{v.vm_name}".encode()) % 65536
    out = [
        "", f"; <<>> DiG {DIG_VERSION} <<>> {' '.join(argv[1:])}", ";; global options: +cmd",
        ";; Got answer:",
        f";; ->>HEADER<<- opcode: QUERY, status: {answer.rcode}, id: {qid}",
        f";; flags: qr rd ra; QUERY: 1, ANSWER: {len(rows)}, AUTHORITY: 0, ADDITIONAL: 1", "",
        ";; OPT PSEUDOSECTION:", "; EDNS: version: 0, flags:; udp: 65494",
        ";; QUESTION SECTION:", f";{_fqdn(name)}\t\t\tIN\t{qtype}", "",
    ]
    if rows:
        out += [";; ANSWER SECTION:", body.rstrip("\n"), ""]
    stamp = v.cat.scenario.now.strftime("%a %b %d %H:%M:%S UTC %Y")
    out += [";; Query time: 4 msec", f";; SERVER: {shown}#53({shown})", f";; WHEN: {stamp}",
            f";; MSG SIZE  rcvd: {40 + 16 * len(rows) + len(name)}", "", ""]
    return ProbeOutput(0, "\n".join(out))


def nslookup(v: Vantage, argv: Sequence[str]) -> ProbeOutput:
    args = [a for a in argv[1:] if not a.startswith("-")]
    options = [a for a in argv[1:] if a.startswith("-")]
    qtype = "A"
    for o in options:
        key, _, value = o.lstrip("-").partition("=")
        if key.lower() in ("type", "querytype", "q") and value:
            qtype = value.upper()
        elif key.lower() not in ("timeout", "retry"):
            raise NotModelled(f"nslookup option {o}")
    if not args:
        raise NotModelled("interactive nslookup (give a name)")
    name, server = args[0], (args[1] if len(args) > 1 else None)
    answer = _server_answer(v, server, name, qtype)
    shown = server or STUB_RESOLVER
    if answer.rcode == "TIMEOUT":
        return ProbeOutput(1, TIMEOUT_LINE + "\n", "", 15.0)
    head = f"Server:\t\t{shown}\nAddress:\t{shown}#53\n\n"
    if answer.rcode == "NXDOMAIN":
        return ProbeOutput(1, head + f"** server can't find {name}: NXDOMAIN\n\n")
    lines = ["Non-authoritative answer:"]
    owner = name
    if answer.cname:
        lines.append(f"{name}\tcanonical name = {_fqdn(answer.cname)}")
        owner = answer.cname.rstrip(".")
    if qtype == "A":
        for addr in answer.addresses:
            lines += [f"Name:\t{owner}", f"Address: {addr}"]
    if len(lines) == 1:
        lines = [f"*** Can't find {name}: No answer"]
    return ProbeOutput(0, head + "\n".join(lines) + "\n\n")
