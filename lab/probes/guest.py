"""What a guest shows of itself: `ss -ltn`, `ip route|addr|link`, `top -bn1`, `uptime`, `free`,
`cat /etc/resolv.conf`, `hostname` — Ubuntu 22.04 output, from the scenario and ``vm_facts``.

The guest's routing table is the guest's, not Azure's: the subnet on eth0 and a default route
via the subnet's first usable address (.1), plus Azure's DHCP routes to 168.63.129.16 and the
metadata endpoint. ``listens`` minus ``no_listener`` ports are the listening sockets, beside
the systemd-resolved stub on 127.0.0.53.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from lab.az.resources import dns_suffix, mac_address
from lab.model import Vm
from lab.network import NotModelled
from lab.probes.common import STUB_RESOLVER, ProbeOutput, Vantage

PROCESS_BY_PORT = {22: "sshd", 53: "named", 80: "nginx", 443: "nginx", 3306: "mysqld",
                   5432: "postgres", 6379: "redis-server", 8080: "java", 9200: "java",
                   27017: "mongod", 1433: "sqlservr"}


def _vm(v: Vantage) -> Vm:
    if v.vm is None:
        raise NotModelled("this command on the engineer's machine (run it in a VM through "
                          "az vm run-command invoke)")
    return v.vm


def listening(v: Vantage) -> list[int]:
    vm = _vm(v)
    closed = {f.port for f in v.cat.scenario.faults_at(vm) if f.kind == "no_listener"}
    return sorted(p for p in vm.listens if p not in closed)


def ss(v: Vantage, argv: Sequence[str]) -> ProbeOutput:
    flags = set("".join(a.lstrip("-") for a in argv[1:] if a.startswith("-")))
    extra = [a for a in argv[1:] if not a.startswith("-")]
    if extra or "l" not in flags or not flags <= set("ltunp4"):
        raise NotModelled(f"{' '.join(argv)} (the lab shows listening sockets: ss -ltn[pu])")
    vm = _vm(v)
    rows: list[tuple[str, str, str, str]] = []  # protocol, send-q, local address, process
    procs = "p" in flags
    ports = listening(v)
    if "u" in flags:  # ss lists UDP sockets before TCP ones
        rows.append(("udp", "0", f"{STUB_RESOLVER}%lo:53", "systemd-resolve"))
        rows.append(("udp", "0", f"{vm.ip}%eth0:68", "systemd-network"))
        rows += [("udp", "0", f"0.0.0.0:{p}", PROCESS_BY_PORT.get(p, "app"))
                 for p in ports if p == 53]
    if "t" in flags or "u" not in flags:
        rows.append(("tcp", "4096", f"{STUB_RESOLVER}%lo:53", "systemd-resolve"))
        rows += [("tcp", "511", f"0.0.0.0:{p}", PROCESS_BY_PORT.get(p, "app")) for p in ports]
    netid = "t" in flags and "u" in flags
    head = ("Netid " if netid else "") + "State  Recv-Q Send-Q Local Address:Port  " \
        "Peer Address:PortProcess"
    lines = [head]
    for pid, (proto, backlog, local, proc) in enumerate(rows, start=700):
        state = "LISTEN" if proto == "tcp" else "UNCONN"
        addr, _, port = local.rpartition(":")
        line = (f"{proto:<5} " if netid else "") + (
            f"{state:<6} 0      {backlog:<6} {addr:>13}:{port:<6}{'0.0.0.0':>12}:*")
        if procs:
            line += f' users:(("{proc}",pid={pid},fd=6))'
        lines.append(line)
    return ProbeOutput(0, "\n".join(lines) + "\n")


def _gateway(vm: Vm, v: Vantage) -> str:
    subnet = v.cat.scenario.subnet_of(vm)
    return str(subnet.prefix.network_address + 1) if subnet else "?"


def ip(v: Vantage, argv: Sequence[str]) -> ProbeOutput:
    vm = _vm(v)
    words = [a for a in argv[1:] if not a.startswith("-")]
    obj = words[0] if words else ""
    subnet = v.cat.scenario.subnet_of(vm)
    prefix = subnet.prefix if subnet else None
    gw = _gateway(vm, v)
    if obj in ("r", "ro", "route") and (len(words) == 1 or words[1] in ("show", "list")):
        text = (f"default via {gw} dev eth0 proto dhcp src {vm.ip} metric 100 \n"
                f"{prefix} dev eth0 proto kernel scope link src {vm.ip} metric 100 \n"
                f"168.63.129.16 via {gw} dev eth0 proto dhcp src {vm.ip} metric 100 \n"
                f"169.254.169.254 via {gw} dev eth0 proto dhcp src {vm.ip} metric 100 \n")
        return ProbeOutput(0, text)
    if obj in ("r", "ro", "route") and len(words) == 3 and words[1] == "get":
        from lab.probes.common import as_ip
        dest = as_ip(words[2])
        if dest is None:
            return ProbeOutput(1, "", f'Error: any valid prefix is expected rather than '
                               f'"{words[2]}".\n')
        via = "" if prefix and dest in prefix else f" via {gw}"
        return ProbeOutput(0, f"{dest}{via} dev eth0 src {vm.ip} uid 0 \n    cache \n")
    mac = mac_address(v.cat, vm).replace("-", ":").lower()
    if obj in ("a", "addr", "address", "l", "link"):
        with_inet = obj.startswith("a")
        state = "group default" if with_inet else "mode DEFAULT group default"
        lines = [f"1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN {state} "
                 "qlen 1000", "    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00"]
        if with_inet:
            lines += ["    inet 127.0.0.1/8 scope host lo",
                      "       valid_lft forever preferred_lft forever"]
        lines += [f"2: eth0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu {vm.mtu} qdisc mq state UP "
                  f"{state} qlen 1000", f"    link/ether {mac} brd ff:ff:ff:ff:ff:ff"]
        if with_inet and prefix is not None:
            lines += [f"    inet {vm.ip}/{prefix.prefixlen} metric 100 brd "
                      f"{prefix.broadcast_address} scope global eth0",
                      "       valid_lft forever preferred_lft forever"]
        return ProbeOutput(0, "\n".join(lines) + "\n")
    raise NotModelled(f"{' '.join(argv)} (the lab shows ip route, ip route get, ip addr, ip link)")


def _facts(v: Vantage) -> dict[str, Any]:
    vm = _vm(v)
    return dict(v.cat.scenario.vm_facts.get(vm.name, {}))


def _num(facts: dict[str, Any], key: str, default: float) -> float:
    value = facts.get(key, default)
    return float(value) if isinstance(value, (int, float)) else default


def _uptime_text(v: Vantage) -> str:
    """procps' uptime line: ``up 12 days,  3:04,``, ``up  3:04,``, ``up 1 day,  3:04,``,
    ``up 5 min,``. ``uptime_days`` is whole days (plus 3 h 04 min, as before) or a fraction
    of a day (0.004: 5 min)."""
    facts = _facts(v)
    cpu = _num(facts, "cpu_percent", 3.0)
    raw = facts.get("uptime_days", 12)
    if isinstance(raw, int) or (isinstance(raw, float) and raw.is_integer()):
        up = timedelta(days=int(raw), hours=3, minutes=4)
    else:
        up = timedelta(minutes=max(1, round(_num(facts, "uptime_days", 12) * 1440)))
    load = _num(facts, "load_average", round(2 * cpu / 100, 2))
    now = v.cat.scenario.now
    hours, rest = divmod(up.seconds, 3600)
    text = f" {now:%H:%M:%S} up "
    if up.days:
        text += f"{up.days} day{'s' if up.days != 1 else ''}, "
    text += f"{hours:2d}:{rest // 60:02d}, " if hours else f"{rest // 60} min, "
    return text + (f" 0 users,  load average: {load:.2f}, {load * 0.95:.2f}, "
                   f"{load * 0.9:.2f}")


def uptime(v: Vantage, argv: Sequence[str]) -> ProbeOutput:
    if len(argv) > 1:
        raise NotModelled(f"uptime option {argv[1]}")
    return ProbeOutput(0, _uptime_text(v) + "\n")


MEM_TOTAL_MIB = 7951.3  # what an 8 GiB VM (Standard_D2s_v3) reports


@dataclass(frozen=True)
class Memory:
    """MiB, as procps reports them: used + free + buff/cache = total."""

    total: float
    used: float
    free: float
    cache: float

    @property
    def available(self) -> float:
        return min(self.total, self.free + self.cache * 0.9)


def memory(v: Vantage) -> Memory:
    """From ``memory_percent`` (default 22): the page cache takes half of what is left (at
    most 900 MiB), so free memory never goes below zero, even at 100 %."""
    mem = min(100.0, max(0.0, _num(_facts(v), "memory_percent", 22.0)))
    used = MEM_TOTAL_MIB * mem / 100
    cache = min(900.0, (MEM_TOTAL_MIB - used) / 2)
    return Memory(MEM_TOTAL_MIB, used, MEM_TOTAL_MIB - used - cache, cache)


def top(v: Vantage, argv: Sequence[str]) -> ProbeOutput:
    flags = "".join(a.lstrip("-") for a in argv[1:])
    if "b" not in flags:
        raise NotModelled("interactive top (use top -bn1)")
    facts = _facts(v)
    cpu = min(100.0, _num(facts, "cpu_percent", 3.0))
    mem = memory(v)
    idle = 100.0 - cpu
    head = _uptime_text(v).strip()
    lines = [
        f"top - {head}",
        "Tasks: 118 total,   1 running, 117 sleeping,   0 stopped,   0 zombie",
        f"%Cpu(s): {cpu * 0.9:4.1f} us, {cpu * 0.1:4.1f} sy,  0.0 ni, {idle:4.1f} id,  0.0 wa,"
        "  0.0 hi,  0.0 si,  0.0 st",
        f"MiB Mem :{mem.total:9.1f} total,{mem.free:9.1f} free,{mem.used:9.1f} used,"
        f"{mem.cache:9.1f} buff/cache",
        f"MiB Swap:{0.0:9.1f} total,{0.0:9.1f} free,{0.0:9.1f} used.{mem.available:9.1f} "
        "avail Mem",
        "",
        "    PID USER      PR  NI    VIRT    RES    SHR S  %CPU  %MEM     TIME+ COMMAND",
    ]
    names = [PROCESS_BY_PORT.get(p, "app") for p in listening(v)]
    busy = str(facts.get("top_process") or (names[0] if names else "python3"))
    share = 100 * mem.used / mem.total
    lines.append(f"   1342 azureuser 20   0 1854320 412340  12884 S {cpu * 1.8:5.1f} "
                 f"{share / 2:5.1f}  85:12.44 {busy}")
    for pid, name in enumerate(sorted(set(names) - {busy}), start=1400):
        lines.append(f"   {pid} root      20   0  212340  18340   9884 S   0.0   0.2   "
                     f"0:41.02 {name}")
    lines.append("    614 root      20   0   47792  14648  10288 S   0.0   0.2   0:03.11 "
                 "systemd-resolve")
    return ProbeOutput(0, "\n".join(lines) + "\n")


def free(v: Vantage, argv: Sequence[str]) -> ProbeOutput:
    """procps' ``free`` (``-m`` MiB, ``-h`` human, ``-k`` KiB, the default)."""
    flags = "".join(a.lstrip("-") for a in argv[1:] if a.startswith("-"))
    if any(not a.startswith("-") for a in argv[1:]) or set(flags) - set("mhkw"):
        raise NotModelled(f"{' '.join(argv)} (the lab shows free, free -m, free -h)")
    mem = memory(v)
    shared = 1.0

    def cell(mib: float) -> str:
        if "h" in flags:
            return f"{mib / 1024:.1f}Gi" if mib >= 1024 else f"{mib:.0f}Mi"
        return str(round(mib)) if "m" in flags else str(round(mib * 1024))

    rows = [("Mem:", [mem.total, mem.used, mem.free, shared, mem.cache, mem.available]),
            ("Swap:", [0.0, 0.0, 0.0])]
    lines = ["               total        used        free      shared  buff/cache   "
             "available"]
    lines += [f"{label:<8}" + "".join(f"{cell(x):>12}" for x in values)
              for label, values in rows]
    return ProbeOutput(0, "\n".join(lines) + "\n")


def cat(v: Vantage, argv: Sequence[str]) -> ProbeOutput:
    vm = _vm(v)
    if argv[1:] == ["/etc/resolv.conf"]:
        # Azure hands out its internal search suffix only with Azure-provided DNS; with
        # custom DNS servers DHCP gives none, and systemd-resolved writes "search ."
        vnet = v.cat.scenario.vnet(vm.vnet)
        custom = bool(vnet and vnet.dns_servers)
        suffix = "." if custom else dns_suffix(v.cat, vm.vnet)
        text = (f"nameserver {STUB_RESOLVER}\noptions edns0 trust-ad\nsearch {suffix}\n")
        return ProbeOutput(0, text)
    raise NotModelled(f"{' '.join(argv)} (in a VM the lab reads only /etc/resolv.conf)")


def hostname(v: Vantage, argv: Sequence[str]) -> ProbeOutput:
    vm = _vm(v)
    if len(argv) > 1 and argv[1] not in ("-s", "--short"):
        raise NotModelled(f"hostname {argv[1]}")
    return ProbeOutput(0, f"{vm.name}\n")
