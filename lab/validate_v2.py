"""Parsing of the sections format 2 adds: load balancers, private endpoints, firewalls, NAT
gateways, Internet hosts, the engineer's address, storage accounts and flow logs.

Each parser checks its section's own fields (types, enums, ranges, names unique within their
kind and within their parent) and records problems in the Ctx; lab/validate_refs_v2.py checks
what crosses sections (references, address plans).
"""

from __future__ import annotations

import re
from ipaddress import IPv4Address
from typing import Any

from lab.model_v2 import (
    PE_KINDS,
    Firewall,
    FlowLog,
    FwAppRule,
    FwCollection,
    FwGroup,
    FwNetworkRule,
    FwPolicy,
    LbFrontend,
    LbPool,
    LbProbe,
    LbRule,
    LoadBalancer,
    NatGateway,
    PeTarget,
    PrivateEndpoint,
    PublicIp,
    StorageAccount,
)
from lab.network.tags import parse_ports, parse_prefix
from lab.validate_ctx import DOMAIN_RE, NAME_RE, Ctx, kind_of, recent_ago

#: ports Azure refuses for an Http/Https health probe (*Azure Load Balancer health probes*)
EXCLUDED_HTTP_PROBE_PORTS = frozenset({19, 21, 25, 70, 110, 119, 143, 220, 993})
VNET_SUBNET_RE = re.compile(r"^[^/]+/[^/]+$")
COLLECTION_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,80}$")
STORAGE_NAME_RE = re.compile(r"^[a-z0-9]{3,24}$")
TARGET_NAME_RE = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
APP_PROTOCOL_RE = re.compile(r"^(Http|Https|Mssql):(\d{1,5})$")
FQDN_RULE_RE = re.compile(r"^(\*\.)?[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?$")
V2_SECTIONS = ("load_balancers", "private_endpoints", "firewalls", "nat_gateways",
               "internet_hosts", "engineer_ip", "storage_accounts", "flow_logs")


def _public_ip(ctx: Ctx, value: Any, path: str) -> PublicIp | None:
    d = ctx.mapping(value, path, ("name", "ip"))
    if d is None:
        return None
    name = ctx.string(d, "name", path, NAME_RE, "a valid resource name")
    ip = ctx.address(d["ip"], f"{path}.ip") if "ip" in d else None
    return PublicIp(name, ip) if name and ip else None


def _public_ips(ctx: Ctx, d: dict[str, Any], path: str, lo: int, hi: int) -> list[PublicIp]:
    items = ctx.items(d, "public_ips", path)
    if "public_ips" in d and not lo <= len(items) <= hi:
        ctx.err(f"{path}.public_ips", f"needs {lo}-{hi} public IPs, got {len(items)}")
    return [ip for p, v in items if (ip := _public_ip(ctx, v, p)) is not None]


def _strings(ctx: Ctx, d: dict[str, Any], key: str, path: str, what: str,
             pattern: re.Pattern[str] | None = None) -> list[str]:
    out: list[str] = []
    items = ctx.items(d, key, path)
    if key in d and isinstance(d[key], list) and not d[key]:
        ctx.err(f"{path}.{key}", f"needs at least one {what}")
    for p, v in items:
        text = str(v) if isinstance(v, (str, int)) and not isinstance(v, bool) else None
        if text is None or not text.strip() or (pattern and not pattern.match(text)):
            ctx.err(p, f"{v!r} is not {what}")
        else:
            out.append(text)
    return out


# -- load balancers ------------------------------------------------------------------------


def _frontend(ctx: Ctx, value: Any, path: str) -> LbFrontend | None:
    d = ctx.mapping(value, path, ("name",), ("subnet", "ip", "public_ip"))
    if d is None:
        return None
    name = ctx.string(d, "name", path, NAME_RE, "a valid resource name")
    if "public_ip" in d:
        for key in ("subnet", "ip"):
            if key in d:
                ctx.err(f"{path}.{key}", "a public frontend has public_ip only (no subnet or ip)")
        pip = _public_ip(ctx, d["public_ip"], f"{path}.public_ip")
        return LbFrontend(name, pip.ip, public_ip=pip) if name and pip else None
    for key in ("subnet", "ip"):
        if key not in d:
            ctx.err(f"{path}.{key}", "required key is missing (an internal frontend has subnet "
                    "and ip; a public one public_ip)")
    subnet = ctx.string(d, "subnet", path, VNET_SUBNET_RE, "'vnet/subnet'")
    ip = ctx.address(d["ip"], f"{path}.ip") if "ip" in d else None
    if not (name and subnet and ip):
        return None
    vnet, _, sub = subnet.partition("/")
    return LbFrontend(name, ip, vnet, sub)


def _probe(ctx: Ctx, value: Any, path: str) -> LbProbe | None:
    d = ctx.mapping(value, path, ("name", "protocol", "port", "interval", "threshold"),
                    ("path",))
    if d is None:
        return None
    name = ctx.string(d, "name", path, NAME_RE, "a valid probe name")
    proto = ctx.choice(d, "protocol", path, ("Tcp", "Http", "Https"))
    port = ctx.number(d, "port", path, 1, 65535)
    interval = ctx.number(d, "interval", path, 5, 2147483646)
    threshold = ctx.number(d, "threshold", path, 1, 2147483647)
    probe_path = ctx.string(d, "path", path, default=None)
    if proto in ("Http", "Https"):
        if "path" not in d:
            ctx.err(f"{path}.path", f"required for an {proto} probe (e.g. /health)")
        if port in EXCLUDED_HTTP_PROBE_PORTS:
            ctx.err(f"{path}.port", f"Azure refuses an {proto} probe on port {port} (19, 21, 25, "
                    "70, 110, 119, 143, 220 and 993 are excluded)")
            return None
    elif proto == "Tcp" and "path" in d:
        ctx.err(f"{path}.path", "a Tcp probe has no path (only Http and Https probes do)")
        return None
    if name and proto and port and interval and threshold and (proto == "Tcp" or probe_path):
        return LbProbe(name, proto, int(port), int(interval), int(threshold), probe_path)
    return None


def _lb_rule(ctx: Ctx, value: Any, path: str) -> LbRule | None:
    d = ctx.mapping(value, path, ("name", "protocol", "frontend_port", "backend_port", "pool"),
                    ("probe",))
    if d is None:
        return None
    name = ctx.string(d, "name", path, NAME_RE, "a valid rule name")
    proto = ctx.choice(d, "protocol", path, ("Tcp", "Udp", "All"))
    ports = [ctx.number(d, k, path, 0, 65535) for k in ("frontend_port", "backend_port")]
    pool = ctx.string(d, "pool", path)
    probe = ctx.string(d, "probe", path, default=None)
    if proto is None or None in ports or not (name and pool):
        return None
    front, back = int(ports[0]), int(ports[1])
    if proto == "All" and (front, back) != (0, 0):
        ctx.err(f"{path}.protocol", "protocol All is for HA ports: frontend_port and "
                "backend_port 0")
        return None
    if proto != "All" and 0 in (front, back):
        ctx.err(f"{path}.frontend_port" if front == 0 else f"{path}.backend_port",
                "port 0 is for HA ports only (protocol All, both ports 0)")
        return None
    return LbRule(name, proto, front, back, pool, probe)


def _raw_names(d: dict[str, Any], key: str) -> set[str]:
    items = d.get(key)
    return {str(i["name"]) for i in items if isinstance(i, dict) and isinstance(
        i.get("name"), str)} if isinstance(items, list) else set()


def parse_load_balancers(ctx: Ctx, top: dict[str, Any]) -> list[tuple[str, LoadBalancer]]:
    out: list[tuple[str, LoadBalancer]] = []
    for path, d, name, rg in ctx.resources(top, "load_balancers", "lb",
                                           ("frontend", "pools", "probes", "rules")):
        front = _frontend(ctx, d["frontend"], f"{path}.frontend") if "frontend" in d else None
        pools: list[tuple[str, LbPool]] = []
        for pp, raw in ctx.items(d, "pools", path):
            p = ctx.mapping(raw, pp, ("name", "vms"))
            if p is None:
                continue
            pname = ctx.string(p, "name", pp, NAME_RE, "a valid pool name")
            vms: list[str] = []
            for vp, v in ctx.items(p, "vms", pp):
                if isinstance(v, str) and v:
                    vms.append(v)
                else:
                    ctx.err(vp, f"expected a VM name, got {kind_of(v)}")
            if pname:
                pools.append((pp, LbPool(pname, tuple(vms))))
        probes = [(pp, pr) for pp, raw in ctx.items(d, "probes", path)
                  if (pr := _probe(ctx, raw, pp)) is not None]
        rules = [(rp, r) for rp, raw in ctx.items(d, "rules", path)
                 if (r := _lb_rule(ctx, raw, rp)) is not None]
        for items, kind in ((pools, "pool"), (probes, "probe"), (rules, "rule")):
            ctx.names_unique(items, kind)
        # names as written, even of broken entries (one mistake, one line)
        pool_names = {p.name for _, p in pools} | _raw_names(d, "pools")
        probe_names = {p.name for _, p in probes} | _raw_names(d, "probes")
        seen: dict[tuple[str, int], str] = {}
        for rp, r in rules:
            if r.pool not in pool_names:
                ctx.err(f"{rp}.pool", f"no pool named {r.pool!r} in {path}.pools")
            if r.probe is not None and r.probe not in probe_names:
                ctx.err(f"{rp}.probe", f"no probe named {r.probe!r} in {path}.probes")
            if r.ha_ports and front is not None and not front.internal:
                ctx.err(f"{rp}.protocol", "HA ports (protocol All, ports 0) need an internal "
                        "load balancer")
            for proto in (("Tcp", "Udp") if r.protocol == "All" else (r.protocol,)):
                key = (proto, r.frontend_port)
                if key in seen:
                    ctx.err(f"{rp}.frontend_port", f"{proto} port {r.frontend_port} of the "
                            f"frontend is already used by {seen[key]}")
                seen.setdefault(key, rp)
        if name and rg and front is not None:
            out.append((path, LoadBalancer(name, rg, front, tuple(p for _, p in pools),
                                           tuple(p for _, p in probes),
                                           tuple(r for _, r in rules))))
    return out


# -- private endpoints ---------------------------------------------------------------------


def _pe_target(ctx: Ctx, value: Any, path: str) -> PeTarget | None:
    d = ctx.mapping(value, path, ("kind", "name", "resource_group", "public_ip"),
                    ("public_access",))
    if d is None:
        return None
    kind = ctx.choice(d, "kind", path, tuple(PE_KINDS))
    storage = PE_KINDS[kind][0] == "Microsoft.Storage/storageAccounts" if kind else False
    name = ctx.string(d, "name", path, STORAGE_NAME_RE if storage else TARGET_NAME_RE,
                      "a storage account name (3-24 of a-z, 0-9)" if storage
                      else "a lower-case resource name (a-z, 0-9, -)")
    rg = ctx.string(d, "resource_group", path, NAME_RE, "a valid resource group name")
    ip = ctx.address(d["public_ip"], f"{path}.public_ip") if "public_ip" in d else None
    access = ctx.choice(d, "public_access", path, ("Enabled", "Disabled"), "Enabled")
    if kind and name and rg and ip and access:
        return PeTarget(kind, name, rg, ip, access)
    return None


def parse_private_endpoints(ctx: Ctx,
                            top: dict[str, Any]) -> list[tuple[str, PrivateEndpoint]]:
    out: list[tuple[str, PrivateEndpoint]] = []
    for path, d, name, rg in ctx.resources(top, "private_endpoints", "pe",
                                           ("subnet", "ip", "target", "state"),
                                           ("zone_group", "nic_name")):
        subnet = ctx.string(d, "subnet", path, VNET_SUBNET_RE, "'vnet/subnet'")
        ip = ctx.address(d["ip"], f"{path}.ip") if "ip" in d else None
        target = _pe_target(ctx, d["target"], f"{path}.target") if "target" in d else None
        state = ctx.choice(d, "state", path, ("Approved", "Pending", "Rejected", "Disconnected"))
        zones: tuple[str, ...] | None = None
        if d.get("zone_group") is not None:
            names = _strings(ctx, d, "zone_group", path, "a private DNS zone name", DOMAIN_RE)
            if not 1 <= len(d["zone_group"] if isinstance(d["zone_group"], list) else []) <= 5:
                ctx.err(f"{path}.zone_group", "a zone group holds 1-5 zones")
            lowered = [z.lower().rstrip(".") for z in names]
            for i, z in enumerate(lowered):
                if z in lowered[:i]:
                    ctx.err(f"{path}.zone_group[{i}]", f"{z} is listed twice")
            zones = tuple(dict.fromkeys(lowered))
        nic = ctx.string(d, "nic_name", path, NAME_RE, "a valid NIC name", default=None)
        if name and rg and subnet and ip and target and state:
            vnet, _, sub = subnet.partition("/")
            out.append((path, PrivateEndpoint(name, rg, vnet, sub, ip, target, state, zones,
                                              nic)))
    return out


# -- firewalls -----------------------------------------------------------------------------


def _addresses(ctx: Ctx, d: dict[str, Any], key: str, path: str) -> list[str]:
    out = []
    for value in _strings(ctx, d, key, path, "an IPv4 address, a CIDR or *"):
        if value == "*" or parse_prefix(value) is not None:
            out.append(value)
        else:
            ctx.err(f"{path}.{key}", f"{value!r} is not an IPv4 address, a CIDR (without host "
                    "bits) or *")
    return out


def _network_rule(ctx: Ctx, value: Any, path: str) -> FwNetworkRule | None:
    d = ctx.mapping(value, path, ("name", "protocols", "sources", "destinations", "ports"))
    if d is None:
        return None
    name = ctx.string(d, "name", path, COLLECTION_NAME_RE, "a rule name (letters, digits, _.-)")
    protocols = _strings(ctx, d, "protocols", path, "one of TCP, UDP, ICMP, Any",
                         re.compile(r"^(TCP|UDP|ICMP|Any)$"))
    sources = _addresses(ctx, d, "sources", path)
    dests = _addresses(ctx, d, "destinations", path)
    ports = _strings(ctx, d, "ports", path, "'*', 'N' or 'N-M'")
    joined = ",".join(ports)
    if ports and parse_ports(joined) is None:
        ctx.err(f"{path}.ports", f"{joined!r} is not '*', 'N', 'N-M' or a list of those")
        return None
    if name and protocols and sources and dests and ports:
        return FwNetworkRule(name, tuple(protocols), tuple(sources), tuple(dests), joined)
    return None


def _app_rule(ctx: Ctx, value: Any, path: str) -> FwAppRule | None:
    d = ctx.mapping(value, path, ("name", "sources", "fqdns", "protocols"))
    if d is None:
        return None
    name = ctx.string(d, "name", path, COLLECTION_NAME_RE, "a rule name (letters, digits, _.-)")
    sources = _addresses(ctx, d, "sources", path)
    fqdns = _strings(ctx, d, "fqdns", path, "an FQDN or *.suffix", FQDN_RULE_RE)
    protocols: list[tuple[str, int]] = []
    for text in _strings(ctx, d, "protocols", path, "Http:N, Https:N or Mssql:N",
                         APP_PROTOCOL_RE):
        m = APP_PROTOCOL_RE.match(text)
        if m and 1 <= int(m.group(2)) <= 65535:
            protocols.append((m.group(1), int(m.group(2))))
        else:
            ctx.err(f"{path}.protocols", f"{text!r}: the port must be 1-65535")
    if name and sources and fqdns and protocols:
        return FwAppRule(name, tuple(sources), tuple(f.lower() for f in fqdns), tuple(protocols))
    return None


def _collection(ctx: Ctx, value: Any, path: str) -> FwCollection | None:
    d = ctx.mapping(value, path, ("name", "type", "priority", "action", "rules"))
    if d is None:
        return None
    if d.get("type") in ("Dnat", "DNAT", "Nat", "NAT"):
        ctx.err(f"{path}.type", "DNAT collections are not modelled by the lab (Network or "
                "Application)")
        return None
    name = ctx.string(d, "name", path, COLLECTION_NAME_RE,
                      "a collection name (1-80 letters, digits, _.-)")
    kind = ctx.choice(d, "type", path, ("Network", "Application"))
    priority = ctx.number(d, "priority", path, 100, 65000)
    action = ctx.choice(d, "action", path, ("Allow", "Deny"))
    parse = _network_rule if kind == "Network" else _app_rule
    rules = [(rp, r) for rp, raw in ctx.items(d, "rules", path)
             if kind is not None and (r := parse(ctx, raw, rp)) is not None]
    if "rules" in d and isinstance(d["rules"], list) and not d["rules"]:
        ctx.err(f"{path}.rules", "a collection needs at least one rule")
    ctx.names_unique(rules, "rule")
    if name and kind and priority and action:
        return FwCollection(name, kind, int(priority), action, tuple(r for _, r in rules))
    return None


def _collections(ctx: Ctx, d: dict[str, Any], key: str, path: str) -> list[FwCollection]:
    items = [(cp, c) for cp, raw in ctx.items(d, key, path)
             if (c := _collection(ctx, raw, cp)) is not None]
    ctx.names_unique(items, "collection")
    seen: dict[tuple[str, int], str] = {}
    for cp, c in items:
        other = seen.setdefault((c.type, c.priority), cp)
        if other != cp:
            ctx.err(f"{cp}.priority", f"{c.priority} is already used by {other} ({c.type} "
                    "collections need distinct priorities)")
    return [c for _, c in items]


def _policy(ctx: Ctx, value: Any, path: str) -> FwPolicy | None:
    d = ctx.mapping(value, path, ("name", "groups"))
    if d is None:
        return None
    name = ctx.string(d, "name", path, NAME_RE, "a valid policy name")
    groups: list[tuple[str, FwGroup]] = []
    for gp, raw in ctx.items(d, "groups", path):
        g = ctx.mapping(raw, gp, ("name", "priority", "collections"))
        if g is None:
            continue
        gname = ctx.string(g, "name", gp, NAME_RE, "a valid group name")
        prio = ctx.number(g, "priority", gp, 100, 65000)
        colls = _collections(ctx, g, "collections", gp)
        if gname and prio:
            groups.append((gp, FwGroup(gname, int(prio), tuple(colls))))
    ctx.names_unique(groups, "rule collection group")
    seen: dict[int, str] = {}
    for gp, grp in groups:
        other = seen.setdefault(grp.priority, gp)
        if other != gp:
            ctx.err(f"{gp}.priority", f"{grp.priority} is already used by {other}")
    return FwPolicy(name, tuple(g for _, g in groups)) if name else None


def parse_firewalls(ctx: Ctx, top: dict[str, Any]) -> list[tuple[str, Firewall]]:
    out: list[tuple[str, Firewall]] = []
    for path, d, name, rg in ctx.resources(top, "firewalls", "firewall",
                                           ("vnet", "private_ip", "public_ips", "tier"),
                                           ("policy", "rule_collections")):
        vnet = ctx.string(d, "vnet", path)
        ip = ctx.address(d["private_ip"], f"{path}.private_ip") if "private_ip" in d else None
        pips = _public_ips(ctx, d, path, 1, 250)
        tier = ctx.choice(d, "tier", path, ("Standard", "Premium"))
        has_policy, has_classic = "policy" in d, "rule_collections" in d
        if has_policy == has_classic:
            ctx.err(path, "give exactly one of policy (a firewall policy) or rule_collections "
                    "(classic rules)")
        policy = _policy(ctx, d["policy"], f"{path}.policy") if has_policy else None
        classic = _collections(ctx, d, "rule_collections", path) if has_classic else []
        if name and rg and vnet and ip and pips and tier and has_policy != has_classic:
            out.append((path, Firewall(name, rg, vnet, ip, tuple(pips), tier, policy,
                                       tuple(classic))))
    return out


# -- NAT gateways, Internet, storage, flow logs --------------------------------------------


def parse_nat_gateways(ctx: Ctx, top: dict[str, Any]) -> list[tuple[str, NatGateway]]:
    out: list[tuple[str, NatGateway]] = []
    for path, d, name, rg in ctx.resources(top, "nat_gateways", "nat_gateway",
                                           ("public_ips", "subnets"), ("idle_timeout",)):
        pips = _public_ips(ctx, d, path, 1, 16)
        subnets = [(v, s) for v, _, s in (t.partition("/") for t in _strings(
            ctx, d, "subnets", path, "'vnet/subnet'", VNET_SUBNET_RE))]
        idle = ctx.number(d, "idle_timeout", path, 4, 120) if "idle_timeout" in d else 4
        if name and rg and pips and idle:
            out.append((path, NatGateway(name, rg, tuple(pips), tuple(subnets), int(idle))))
    return out


def parse_internet_hosts(ctx: Ctx, top: dict[str, Any]) -> dict[IPv4Address, tuple[int, ...]]:
    value = top.get("internet_hosts") or {}
    if not isinstance(value, dict):
        ctx.err("internet_hosts", f"expected a mapping of IPv4: [ports], got {kind_of(value)}")
        return {}
    out: dict[IPv4Address, tuple[int, ...]] = {}
    for key, ports in value.items():
        path = f"internet_hosts.{key}"
        addr = ctx.address(str(key), path)
        if not isinstance(ports, list) or not ports:
            ctx.err(path, f"expected a list of TCP ports, got {kind_of(ports)}")
            continue
        good = []
        for i, port in enumerate(ports):
            if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
                ctx.err(f"{path}[{i}]", f"expected a TCP port 1-65535, got {kind_of(port)}")
            else:
                good.append(port)
        if addr is not None:
            out[addr] = tuple(dict.fromkeys(good))
    return out


def parse_storage_accounts(ctx: Ctx,
                           top: dict[str, Any]) -> list[tuple[str, StorageAccount]]:
    return [(path, StorageAccount(name, rg)) for path, _, name, rg in ctx.resources(
        top, "storage_accounts", "storage_account", (), name_re=STORAGE_NAME_RE,
        name_what="a storage account name (3-24 of a-z and 0-9)") if name and rg]


def parse_flow_logs(ctx: Ctx, top: dict[str, Any]) -> list[tuple[str, FlowLog]]:
    out: list[tuple[str, FlowLog]] = []
    for path, raw in ctx.items(top, "flow_logs", ""):
        d = ctx.mapping(raw, path, ("name", "target", "storage_account", "since"),
                        ("retention_days",))
        if d is None:
            continue
        name = ctx.string(d, "name", path, NAME_RE, "a valid flow log name")
        ctx.declare("flow_log", name)
        target = ctx.string(d, "target", path)
        account = ctx.string(d, "storage_account", path)
        since = recent_ago(ctx, d["since"], f"{path}.since") if "since" in d else None
        days = ctx.number(d, "retention_days", path, 0, 365) if "retention_days" in d else 0
        if name and target and account and since is not None and days is not None:
            out.append((path, FlowLog(name, target, account, since, int(days))))
    return out
