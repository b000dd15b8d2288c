"""Parsing of each scenario section into dataclasses, recording problems in a Ctx.

Each helper checks one section's own fields (types, syntax, ranges, names unique within their
kind); lab/validate_refs.py checks what crosses sections.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from ipaddress import IPv4Address, IPv4Network, ip_address
from typing import Any

from lab.network.tags import parse_ports, parse_prefix, prefix_problem
from lab.scenario import (
    Fault,
    Nsg,
    NsgRule,
    Peering,
    PrivateDnsZone,
    Route,
    RouteTable,
    Subnet,
    Traffic,
    Vm,
    VNet,
)

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
DOMAIN_RE = re.compile(r"^(?=.{1,253}$)([A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?\.)*"
                       r"[A-Za-z0-9_]([A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")
FAULT_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {  # kind -> (required, optional)
    "loss": (("at", "percent"), ()),
    "reset": (("at", "after_bytes"), ()),
    "mtu": (("at", "mtu"), ("icmp_blocked",)),
    "latency": (("at", "ms"), ()),
    "no_listener": (("vm", "port"), ()),
}
MISSING = object()


class Ctx:
    """Collects error lines for one source."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.errors: list[str] = []
        # names written in the file, even for entries dropped as broken: a reference to them
        # is not reported again as dangling (one mistake, one line)
        self.declared: dict[str, set[str]] = {
            k: set() for k in ("vnet", "subnet", "nsg", "route_table", "zone", "vm")
        }

    def declare(self, kind: str, name: str | None) -> None:
        if name:
            self.declared[kind].add(name)

    def err(self, path: str, problem: str) -> None:
        self.errors.append(f"{self.source}: {path}: {problem}")

    def mapping(self, value: Any, path: str, required: tuple[str, ...],
                optional: tuple[str, ...] = ()) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.err(path or "(top level)", f"expected a mapping, got {kind_of(value)}")
            return None
        allowed = required + optional
        for key in value:
            if key not in allowed:
                self.err(join_path(path, str(key)),
                         f"unknown key (expected one of: {', '.join(allowed)})")
        for key in required:
            if key not in value:
                self.err(join_path(path, key), "required key is missing")
        return value

    def resources(self, top: dict[str, Any], key: str, kind: str, required: tuple[str, ...],
                  optional: tuple[str, ...] = (), *, name_re: re.Pattern[str] = NAME_RE,
                  name_what: str = "a valid resource name",
                  ) -> Iterator[tuple[str, dict[str, Any], str | None, str | None]]:
        """(path, fields, name, resource group) of each mapping in a top-level resource list;
        the name is declared even when the entry is broken, so references to it stay quiet."""
        for path, raw in self.items(top, key, ""):
            d = self.mapping(raw, path, ("name", "resource_group", *required), optional)
            if d is None:
                continue
            name = self.string(d, "name", path, name_re, name_what)
            self.declare(kind, name)
            rg = self.string(d, "resource_group", path, NAME_RE, "a valid resource group name")
            yield path, d, name, rg

    def items(self, data: dict[str, Any], key: str, path: str) -> list[tuple[str, Any]]:
        """(path, item) for each entry of a list field; [] when absent or not a list."""
        value = data.get(key, [])
        p = join_path(path, key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.err(p, f"expected a list, got {kind_of(value)}")
            return []
        return [(f"{p}[{i}]", item) for i, item in enumerate(value)]

    def string(self, data: dict[str, Any], key: str, path: str, pattern: re.Pattern[str] | None
               = None, what: str = "", default: Any = MISSING) -> str | None:
        value = data.get(key, default)
        if value is MISSING or (value is None and default is None):
            return None
        p = join_path(path, key)
        if not isinstance(value, str) or not value.strip():
            self.err(p, f"expected a non-empty string, got {kind_of(value)}")
            return None
        if pattern is not None and not pattern.match(value):
            self.err(p, f"{value!r} is not {what}")
            return None
        return value

    def number(self, data: dict[str, Any], key: str, path: str, lo: float, hi: float,
               integer: bool = True) -> Any:
        value = data.get(key, MISSING)
        if value is MISSING:
            return None
        p = join_path(path, key)
        ok_types = (int,) if integer else (int, float)
        if isinstance(value, bool) or not isinstance(value, ok_types):
            self.err(p, f"expected {'an integer' if integer else 'a number'}, got {kind_of(value)}")
            return None
        if not lo <= value <= hi:
            self.err(p, f"{value} is out of range ({lo:g}-{hi:g})")
            return None
        return value

    def boolean(self, data: dict[str, Any], key: str, path: str, default: bool | None) -> Any:
        value = data.get(key, default)
        if value is None:
            return None
        if not isinstance(value, bool):
            self.err(join_path(path, key), f"expected true or false, got {kind_of(value)}")
            return default
        return value

    def choice(self, data: dict[str, Any], key: str, path: str, choices: tuple[str, ...],
               default: Any = MISSING) -> str | None:
        value = data.get(key, default)
        if value is MISSING:
            return None
        if value not in choices:
            self.err(join_path(path, key),
                     f"{value!r} is not one of: {', '.join(choices)}")
            return None
        return str(value)

    def network(self, value: Any, path: str) -> IPv4Network | None:
        text = str(value) if isinstance(value, str) else None
        net = parse_prefix(text) if text and "/" in text else None
        if net is None:
            problem = prefix_problem(text) if text and "/" in text else None
            self.err(path, problem if problem and "host bits" in problem
                     else f"not an IPv4 CIDR: {value}")
        return net

    def address(self, value: Any, path: str) -> IPv4Address | None:
        try:
            addr = ip_address(value) if isinstance(value, str) else None
        except ValueError:
            addr = None
        if not isinstance(addr, IPv4Address):
            self.err(path, f"not an IPv4 address: {value}")
            return None
        return addr

    def names_unique(self, items: list[tuple[str, Any]], kind: str) -> None:
        seen: dict[str, str] = {}
        for path, obj in items:
            name = getattr(obj, "name", None)
            if name is None:
                continue
            key = name.lower() if kind == "private DNS zone" else name
            if key in seen:
                self.err(f"{path}.name", f"duplicate {kind} name {name!r} (also {seen[key]})")
            else:
                seen[key] = path


def join_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def kind_of(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return repr(value)


def parse_vnets(ctx: Ctx, top: dict[str, Any]) -> list[tuple[str, VNet]]:
    out: list[tuple[str, VNet]] = []
    for path, d, name, rg in ctx.resources(top, "vnets", "vnet", ("address_space", "subnets"),
                                           ("dns_servers", "peerings")):
        space = [n for p, v in ctx.items(d, "address_space", path) if (n := ctx.network(v, p))]
        if "address_space" in d and isinstance(d["address_space"], list) and not d["address_space"]:
            ctx.err(f"{path}.address_space", "a VNet needs at least one address prefix")
        dns = [a for p, v in ctx.items(d, "dns_servers", path) if (a := ctx.address(v, p))]
        subnets: list[tuple[str, Subnet]] = []
        for spath, sraw in ctx.items(d, "subnets", path):
            s = ctx.mapping(sraw, spath, ("name", "prefix"), ("nsg", "route_table"))
            if s is None:
                continue
            sname = ctx.string(s, "name", spath, NAME_RE, "a valid resource name")
            ctx.declare("subnet", f"{name}/{sname}" if name and sname else None)
            prefix = ctx.network(s.get("prefix"), f"{spath}.prefix") if "prefix" in s else None
            if prefix is not None and prefix.prefixlen > 29:
                ctx.err(f"{spath}.prefix", f"{prefix} is smaller than /29, Azure's smallest subnet")
                prefix = None
            nsg = ctx.string(s, "nsg", spath, default=None)
            rt = ctx.string(s, "route_table", spath, default=None)
            if sname and prefix and name:
                subnets.append((spath, Subnet(sname, name, prefix, nsg, rt)))
        peerings: list[tuple[str, Peering]] = []
        for ppath, praw in ctx.items(d, "peerings", path):
            p = ctx.mapping(praw, ppath, ("name", "remote_vnet", "state"),
                            ("allow_forwarded_traffic", "use_remote_gateways"))
            if p is None:
                continue
            pname = ctx.string(p, "name", ppath, NAME_RE, "a valid resource name")
            remote = ctx.string(p, "remote_vnet", ppath)
            state = ctx.choice(p, "state", ppath, ("Initiated", "Connected", "Disconnected"))
            fwd = ctx.boolean(p, "allow_forwarded_traffic", ppath, False)
            gw = ctx.boolean(p, "use_remote_gateways", ppath, False)
            if gw:
                ctx.err(f"{ppath}.use_remote_gateways", "must be false: the lab has no VPN or "
                        "ExpressRoute gateways (Azure refuses remote gateways without one)")
            if pname and remote and state and name:
                peerings.append((ppath, Peering(pname, name, remote, state, bool(fwd), False)))
        ctx.names_unique(subnets, "subnet")
        ctx.names_unique(peerings, "peering")
        if name and rg:
            vnet = VNet(name, rg, tuple(space), tuple(dns), tuple(s for _, s in subnets),
                        tuple(p for _, p in peerings))
            out.append((path, vnet))
    return out


def parse_nsgs(ctx: Ctx, top: dict[str, Any]) -> list[tuple[str, Nsg]]:
    out: list[tuple[str, Nsg]] = []
    for path, d, name, rg in ctx.resources(top, "nsgs", "nsg", ("rules",)):
        rules: list[tuple[str, NsgRule]] = []
        priorities: dict[tuple[str, int], tuple[str, str]] = {}
        for rpath, rraw in ctx.items(d, "rules", path):
            r = ctx.mapping(rraw, rpath, ("name", "priority", "direction", "access", "protocol",
                                          "source", "source_ports", "destination",
                                          "destination_ports"))
            if r is None:
                continue
            rname = ctx.string(r, "name", rpath, NAME_RE, "a valid rule name")
            prio = ctx.number(r, "priority", rpath, 100, 4096)
            direction = ctx.choice(r, "direction", rpath, ("Inbound", "Outbound"))
            access = ctx.choice(r, "access", rpath, ("Allow", "Deny"))
            proto = ctx.choice(r, "protocol", rpath, ("Tcp", "Udp", "Icmp", "*"))
            addrs = [_rule_prefix(ctx, r, k, rpath) for k in ("source", "destination")]
            ports = [_rule_ports(ctx, r, k, rpath) for k in ("source_ports", "destination_ports")]
            if prio is not None and direction is not None and rname:
                other = priorities.get((direction, prio))
                if other:
                    ctx.err(f"{rpath}.priority", f"{prio} is already used by {other[0]} "
                            f"({other[1]}) for {direction}")
                else:
                    priorities[(direction, prio)] = (rpath, rname)
            values = (rname, prio, direction, access, proto, *addrs, *ports)
            if all(v is not None for v in values):
                rules.append((rpath, NsgRule(rname or "", int(prio), direction or "",
                                             access or "", proto or "", addrs[0] or "",
                                             ports[0] or "", addrs[1] or "", ports[1] or "")))
        ctx.names_unique(rules, "rule")
        if name and rg:
            out.append((path, Nsg(name, rg, tuple(r for _, r in rules))))
    return out


def _rule_prefix(ctx: Ctx, r: dict[str, Any], key: str, path: str) -> str | None:
    value = r.get(key)
    if key not in r:
        return None
    problem = prefix_problem(value) if isinstance(value, str) else f"not a prefix: {value}"
    if problem:
        ctx.err(f"{path}.{key}", problem)
        return None
    return str(value)


def _rule_ports(ctx: Ctx, r: dict[str, Any], key: str, path: str) -> str | None:
    if key not in r:
        return None
    value = r[key]
    text = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    if parse_ports(text) is None:
        ctx.err(f"{path}.{key}", f"{value!r} is not '*', 'N', 'N-M' or a comma-separated list "
                "of those (ports 0-65535)")
        return None
    return text


def parse_route_tables(ctx: Ctx, top: dict[str, Any]) -> list[tuple[str, RouteTable]]:
    out: list[tuple[str, RouteTable]] = []
    for path, d, name, rg in ctx.resources(top, "route_tables", "route_table", ("routes",)):
        routes: list[tuple[str, Route]] = []
        prefixes: dict[IPv4Network, str] = {}
        for rpath, rraw in ctx.items(d, "routes", path):
            r = ctx.mapping(rraw, rpath, ("name", "prefix", "next_hop"), ("next_hop_ip",))
            if r is None:
                continue
            rname = ctx.string(r, "name", rpath, NAME_RE, "a valid route name")
            prefix = ctx.network(r["prefix"], f"{rpath}.prefix") if "prefix" in r else None
            hop = r.get("next_hop")
            if hop == "VirtualNetworkGateway":
                ctx.err(f"{rpath}.next_hop", "VirtualNetworkGateway: the lab has no VPN or "
                        "ExpressRoute gateway (Azure refuses this next hop without one)")
                hop = None
            elif "next_hop" in r:
                hop = ctx.choice(r, "next_hop", rpath,
                                 ("VirtualAppliance", "VnetLocal", "Internet", "None"))
            hop_ip = None
            if "next_hop_ip" in r and r["next_hop_ip"] is not None:
                if hop != "VirtualAppliance" and hop is not None:
                    ctx.err(f"{rpath}.next_hop_ip",
                            f"only a VirtualAppliance next hop takes an IP (next_hop is {hop})")
                else:
                    hop_ip = ctx.address(r["next_hop_ip"], f"{rpath}.next_hop_ip")
            elif hop == "VirtualAppliance":
                ctx.err(f"{rpath}.next_hop_ip", "required for next_hop VirtualAppliance")
            if prefix is not None:
                if prefix in prefixes:
                    ctx.err(f"{rpath}.prefix", f"{prefix} is already routed by {prefixes[prefix]}")
                prefixes.setdefault(prefix, rpath)
            if rname and prefix and hop and (hop != "VirtualAppliance" or hop_ip):
                routes.append((rpath, Route(rname, prefix, hop, hop_ip)))
        ctx.names_unique(routes, "route")
        if name and rg:
            out.append((path, RouteTable(name, rg, tuple(r for _, r in routes))))
    return out


def parse_zones(ctx: Ctx, top: dict[str, Any]) -> list[tuple[str, PrivateDnsZone]]:
    out: list[tuple[str, PrivateDnsZone]] = []
    for path, d, name, rg in ctx.resources(top, "private_dns_zones", "zone",
                                           ("linked_vnets", "records"),
                                           name_re=DOMAIN_RE, name_what="a DNS zone name"):
        links: list[str] = []
        for lp, v in ctx.items(d, "linked_vnets", path):
            if isinstance(v, str) and v:
                links.append(v)
            else:
                ctx.err(lp, f"expected a VNet name, got {kind_of(v)}")
        records: dict[str, IPv4Address] = {}
        raw_records = d.get("records", {})
        if not isinstance(raw_records, dict):
            ctx.err(f"{path}.records",
                    f"expected a mapping of name: IPv4, got {kind_of(raw_records)}")
        else:
            for key, value in raw_records.items():
                rp = f"{path}.records.{key}"
                if not isinstance(key, str) or not (key == "@" or DOMAIN_RE.match(key)):
                    ctx.err(rp, f"{key!r} is not a record name relative to the zone")
                elif (addr := ctx.address(value, rp)) is not None:
                    records[key.lower()] = addr
        if name and rg:
            out.append((path, PrivateDnsZone(name, rg, tuple(links), records)))
    return out


def parse_vms(ctx: Ctx, top: dict[str, Any]) -> list[tuple[str, Vm]]:
    out: list[tuple[str, Vm]] = []
    for path, d, name, rg in ctx.resources(top, "vms", "vm",
                                           ("subnet", "ip", "power_state",
                                            "network_watcher_extension", "listens"),
                                           ("nic_nsg", "ip_forwarding", "mtu"),
                                           name_what="a valid VM name"):
        subnet = ctx.string(d, "subnet", path, re.compile(r"^[^/]+/[^/]+$"), "'vnet/subnet'")
        ip = ctx.address(d["ip"], f"{path}.ip") if "ip" in d else None
        nic_nsg = ctx.string(d, "nic_nsg", path, default=None)
        power = ctx.choice(d, "power_state", path, ("running", "stopped", "deallocated"))
        ext = ctx.boolean(d, "network_watcher_extension", path, None)
        listens: list[int] = []
        for lp, port in ctx.items(d, "listens", path):
            if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
                ctx.err(lp, f"expected a TCP port 1-65535, got {kind_of(port)}")
            elif port in listens:
                ctx.err(lp, f"port {port} is listed twice")
            else:
                listens.append(port)
        fwd = ctx.boolean(d, "ip_forwarding", path, False)
        mtu = ctx.number(d, "mtu", path, 576, 9000) if "mtu" in d else 1500
        if name and rg and subnet and ip and power and ext is not None and mtu:
            vnet, _, sub = subnet.partition("/")
            out.append((path, Vm(name, rg, vnet, sub, ip, nic_nsg, power, bool(ext),
                                 tuple(listens), bool(fwd), int(mtu))))
    return out


def parse_traffic(ctx: Ctx, top: dict[str, Any]) -> list[tuple[str, Traffic]]:
    out: list[tuple[str, Traffic]] = []
    for path, raw in ctx.items(top, "traffic", ""):
        d = ctx.mapping(raw, path, ("from", "to", "port", "rate"))
        if d is None:
            continue
        src = ctx.string(d, "from", path)
        to = ctx.string(d, "to", path)
        port = ctx.number(d, "port", path, 1, 65535)
        rate = ctx.number(d, "rate", path, 0.001, 1e6, integer=False)
        if src and to and port and rate:
            out.append((path, Traffic(src, to, int(port), float(rate))))
    return out


def parse_faults(ctx: Ctx, top: dict[str, Any]) -> list[tuple[str, Fault]]:
    out: list[tuple[str, Fault]] = []
    for path, raw in ctx.items(top, "faults", ""):
        if not isinstance(raw, dict):
            ctx.err(path, f"expected a mapping, got {kind_of(raw)}")
            continue
        kind = ctx.choice(raw, "kind", path, tuple(FAULT_KEYS))
        if "kind" not in raw:
            ctx.err(f"{path}.kind", "required key is missing")
        if kind is None:
            continue
        required, optional = FAULT_KEYS[kind]
        d = ctx.mapping(raw, path, ("kind", *required), optional)
        if d is None:
            continue
        at = ctx.string(d, "vm" if kind == "no_listener" else "at", path)
        percent = ctx.number(d, "percent", path, 0, 100, integer=False)
        after = ctx.number(d, "after_bytes", path, 0, 1 << 40)
        mtu = ctx.number(d, "mtu", path, 68, 9000)
        blocked = ctx.boolean(d, "icmp_blocked", path, True if kind == "mtu" else None)
        ms = ctx.number(d, "ms", path, 0, 60000, integer=False)
        port = ctx.number(d, "port", path, 1, 65535)
        if at and all(d.get(k) is not None for k in required):
            out.append((path, Fault(kind, at, percent, after, mtu, blocked, ms, port)))
    return out
