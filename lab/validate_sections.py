"""Parsing of each scenario section into dataclasses, recording problems in a Ctx.

Each helper checks one section's own fields (types, syntax, ranges, names unique within their
kind); lab/validate_refs.py checks what crosses sections.
"""

from __future__ import annotations

import re
from ipaddress import IPv4Address, IPv4Network
from typing import Any

from lab.model import (
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
from lab.model_v2 import Active
from lab.network.tags import parse_ports, prefix_problem
from lab.validate_ctx import DOMAIN_RE, NAME_RE, Ctx, kind_of, parse_active, recent_ago

FAULT_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {  # kind -> (required, optional)
    "loss": (("at", "percent"), ()),
    "reset": (("at", "after_bytes"), ()),
    "mtu": (("at", "mtu"), ("icmp_blocked",)),
    "latency": (("at", "ms"), ()),
    "no_listener": (("vm", "port"), ()),
    "snat_exhaustion": (("at", "percent"), ()),  # format 2
}
#: format 2's optional fault keys, per kind (``active`` on every kind)
FAULT_KEYS_V2: dict[str, tuple[str, ...]] = {"latency": ("jitter_ms",)}
FAULT_KINDS_V1 = ("loss", "reset", "mtu", "latency", "no_listener")
SUBNET_POLICIES = ("Disabled", "Enabled", "NetworkSecurityGroupEnabled", "RouteTableEnabled")

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
            s = ctx.mapping(sraw, spath, ("name", "prefix"), ("nsg", "route_table"),
                            v2=("private_endpoint_network_policies",))
            if s is None:
                continue
            policies = ctx.choice(s, "private_endpoint_network_policies", spath,
                                  SUBNET_POLICIES, "Disabled") or "Disabled"
            sname = ctx.string(s, "name", spath, NAME_RE, "a valid resource name")
            ctx.declare("subnet", f"{name}/{sname}" if name and sname else None)
            prefix = ctx.network(s.get("prefix"), f"{spath}.prefix") if "prefix" in s else None
            if prefix is not None and prefix.prefixlen > 29:
                ctx.err(f"{spath}.prefix", f"{prefix} is smaller than /29, Azure's smallest subnet")
                prefix = None
            nsg = ctx.string(s, "nsg", spath, default=None)
            rt = ctx.string(s, "route_table", spath, default=None)
            if sname and prefix and name:
                subnets.append((spath, Subnet(sname, name, prefix, nsg, rt, policies)))
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
                                          "destination_ports"), v2=("active",))
            if r is None:
                continue
            ok, active = parse_active(ctx, r, rpath)
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
            if ok and all(v is not None for v in values):
                rules.append((rpath, NsgRule(rname or "", int(prio), direction or "",
                                             access or "", proto or "", addrs[0] or "",
                                             ports[0] or "", addrs[1] or "", ports[1] or "",
                                             active)))
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
            r = ctx.mapping(rraw, rpath, ("name", "prefix", "next_hop"), ("next_hop_ip",),
                            v2=("active",))
            if r is None:
                continue
            ok, active = parse_active(ctx, r, rpath)
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
            if ok and rname and prefix and hop and (hop != "VirtualAppliance" or hop_ip):
                routes.append((rpath, Route(rname, prefix, hop, hop_ip, active)))
        ctx.names_unique(routes, "route")
        if name and rg:
            out.append((path, RouteTable(name, rg, tuple(r for _, r in routes))))
    return out


def parse_zones(ctx: Ctx, top: dict[str, Any]) -> list[tuple[str, PrivateDnsZone]]:
    out: list[tuple[str, PrivateDnsZone]] = []
    required = ("linked_vnets", "records") if ctx.fmt < 2 else ("linked_vnets",)
    optional = () if ctx.fmt < 2 else ("records",)
    for path, d, name, rg in ctx.resources(top, "private_dns_zones", "zone", required,
                                           optional, name_re=DOMAIN_RE,
                                           name_what="a DNS zone name"):
        links: list[str] = []
        windows: list[tuple[str, Active]] = []
        for lp, v in ctx.items(d, "linked_vnets", path):
            if isinstance(v, str) and v:
                links.append(v)
            elif isinstance(v, dict) and ctx.fmt >= 2:
                link = ctx.mapping(v, lp, ("vnet",), ("active",))
                vnet = ctx.string(link, "vnet", lp) if link is not None else None
                ok, active = parse_active(ctx, link, lp) if link is not None else (False, None)
                if vnet and ok:
                    if active is None:
                        links.append(vnet)
                    else:
                        windows.append((vnet, active))
            elif isinstance(v, dict):
                ctx.err(lp, "a link with `active` needs `format: 2`")
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
            out.append((path, PrivateDnsZone(name, rg, tuple(links), records, tuple(windows))))
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
        d = ctx.mapping(raw, path, ("from", "to", "port", "rate"), v2=("fqdn", "since"))
        if d is None:
            continue
        src = ctx.string(d, "from", path)
        to = ctx.string(d, "to", path)
        port = ctx.number(d, "port", path, 1, 65535)
        rate = ctx.number(d, "rate", path, 0.001, 1e6, integer=False)
        fqdn = ctx.string(d, "fqdn", path, DOMAIN_RE, "a DNS name", default=None)
        since = recent_ago(ctx, d["since"], f"{path}.since") if "since" in d else None
        if "fqdn" in d and fqdn is None or "since" in d and since is None:
            continue
        if src and to and port and rate:
            out.append((path, Traffic(src, to, int(port), float(rate),
                                      fqdn.lower() if fqdn else None, since)))
    return out


def parse_faults(ctx: Ctx, top: dict[str, Any]) -> list[tuple[str, Fault]]:
    out: list[tuple[str, Fault]] = []
    for path, raw in ctx.items(top, "faults", ""):
        if not isinstance(raw, dict):
            ctx.err(path, f"expected a mapping, got {kind_of(raw)}")
            continue
        if ctx.fmt < 2 and raw.get("kind") == "snat_exhaustion":
            ctx.err(f"{path}.kind", "'snat_exhaustion' needs `format: 2`")
            continue
        kinds = tuple(FAULT_KEYS) if ctx.fmt >= 2 else FAULT_KINDS_V1
        kind = ctx.choice(raw, "kind", path, kinds)
        if "kind" not in raw:
            ctx.err(f"{path}.kind", "required key is missing")
        if kind is None:
            continue
        required, optional = FAULT_KEYS[kind]
        d = ctx.mapping(raw, path, ("kind", *required), optional,
                        v2=(*FAULT_KEYS_V2.get(kind, ()), "active"))
        if d is None:
            continue
        ok, active = parse_active(ctx, d, path)
        jitter = ctx.number(d, "jitter_ms", path, 0, 60000, integer=False)
        at = ctx.string(d, "vm" if kind == "no_listener" else "at", path)
        percent = ctx.number(d, "percent", path, 0, 100, integer=False)
        after = ctx.number(d, "after_bytes", path, 0, 1 << 40)
        mtu = ctx.number(d, "mtu", path, 68, 9000)
        blocked = ctx.boolean(d, "icmp_blocked", path, True if kind == "mtu" else None)
        ms = ctx.number(d, "ms", path, 0, 60000, integer=False)
        port = ctx.number(d, "port", path, 1, 65535)
        if ok and at and all(d.get(k) is not None for k in required):
            out.append((path, Fault(kind, at, percent, after, mtu, blocked, ms, port, jitter,
                                    active)))
    return out
