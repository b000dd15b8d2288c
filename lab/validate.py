"""Validation of a scenario document: every problem, one line each, never a traceback.

Each line reads ``FILE: field.path: problem``. Parsing builds the dataclasses of lab/scenario.py
as it goes, skipping what is broken (lab/validate_sections.py), then checks the references
between sections (lab/validate_refs.py); if anything was wrong, one ScenarioError carries all
the lines.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime, timedelta
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

import yaml

from lab.categories import category_problem, is_custom
from lab.model import ActivityEvent, PrivateDnsZone, Scenario, ScenarioError, Truth
from lab.model_v2 import DEFAULT_ENGINEER_IP, PrivateEndpoint
from lab.validate_ctx import AGO_RE, AGO_UNITS, DOMAIN_RE, Ctx, kind_of
from lab.validate_refs import check_references
from lab.validate_refs_v2 import Parts, check_format2
from lab.validate_sections import (
    parse_faults,
    parse_nsgs,
    parse_route_tables,
    parse_traffic,
    parse_vms,
    parse_vnets,
    parse_zones,
)
from lab.validate_v2 import (
    V2_SECTIONS,
    parse_firewalls,
    parse_flow_logs,
    parse_internet_hosts,
    parse_load_balancers,
    parse_nat_gateways,
    parse_private_endpoints,
    parse_storage_accounts,
)

FORMATS = (1, 2)
SCENARIO_NAME_RE = re.compile(r"^[a-z0-9-]+$")
GUID_RE = re.compile(r"^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")
TOP_REQUIRED = ("format", "name", "title", "symptom", "subscription", "location", "now", "vnets",
                "nsgs", "vms", "traffic", "truth")
TOP_OPTIONAL = ("route_tables", "private_dns_zones", "public_dns", "faults", "activity_log",
                "vm_facts", "replay")


class _DupKeyLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys (a silent override is a hidden typo)."""


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
        seen.add(key)
    return loader.construct_mapping(node)


_DupKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_yaml(path: Path) -> Any:
    """The decoded document, or ScenarioError with one line (file, line, column, problem)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ScenarioError([f"{path.name}: (file): cannot read: {reason}"]) from None
    try:
        return yaml.load(text, Loader=_DupKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1} column {mark.column + 1}" if mark else "(file)"
        problem = exc.problem or exc.context or "invalid YAML"
        raise ScenarioError([f"{path.name}: {where}: YAML syntax error: {problem}"]) from None
    except yaml.YAMLError as exc:
        raise ScenarioError([f"{path.name}: (file): YAML syntax error: {exc}"]) from None


def _activity(ctx: Ctx, top: dict[str, Any], now: datetime | None) -> list[ActivityEvent]:
    out: list[ActivityEvent] = []
    for path, raw in ctx.items(top, "activity_log", ""):
        d = ctx.mapping(raw, path, ("ago", "caller", "status", "operation", "resource"))
        if d is None:
            continue
        ago_raw = d.get("ago")
        m = AGO_RE.match(ago_raw) if isinstance(ago_raw, str) else None
        if "ago" in d and m is None:
            ctx.err(f"{path}.ago", f"{ago_raw!r} is not an integer followed by s, m, h or d "
                    "(e.g. 15m)")
        fields = [ctx.string(d, k, path) for k in ("caller", "status", "operation", "resource")]
        if m and now and all(fields):
            secs = int(m.group(1)) * AGO_UNITS[m.group(2)]
            caller, status, operation, resource = (f or "" for f in fields)
            out.append(ActivityEvent(secs, caller, status, operation, resource,
                                     now - timedelta(seconds=secs)))
    return out


def _now(ctx: Ctx, top: dict[str, Any]) -> datetime | None:
    value = top.get("now")
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            ctx.err("now", f"{value!r} is not an ISO 8601 time (e.g. 2026-11-20T14:20:00Z)")
            return None
    if not isinstance(value, datetime):
        ctx.err("now", f"expected an ISO 8601 time, got {kind_of(value)}")
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _truth(ctx: Ctx, top: dict[str, Any]) -> Truth | None:
    if "truth" not in top:
        return None
    d = ctx.mapping(top["truth"], "truth",
                    ("category", "resources", "keywords", "red_herrings", "fix"))
    if d is None:
        return None
    category: str | None = None
    if "category" in d:
        problem = category_problem(d["category"], ctx.fmt)
        if problem:
            ctx.err("truth.category", problem)
        else:
            category = str(d["category"])
    lists: list[tuple[str, ...]] = []
    for key in ("resources", "keywords", "red_herrings"):
        vals = []
        for p, v in ctx.items(d, key, "truth"):
            if isinstance(v, str) and v.strip():
                vals.append(v)
            else:
                ctx.err(p, f"expected a non-empty string, got {kind_of(v)}")
        lists.append(tuple(vals))
    fix = ctx.string(d, "fix", "truth")
    if category is not None and is_custom(category) and not (lists[0] or lists[1]):
        ctx.err("truth.category", f"the custom category {category} needs at least one "
                "keywords or resources entry (eval names the truth by them)")
    if category is None or fix is None:
        return None
    return Truth(category, lists[0], lists[1], lists[2], fix)


def _str_map(ctx: Ctx, top: dict[str, Any], key: str) -> dict[Any, Any]:
    value = top.get(key) or {}
    if not isinstance(value, dict):
        ctx.err(key, f"expected a mapping, got {kind_of(value)}")
        return {}
    return value


def _with_zone_group_records(zones: list[PrivateDnsZone],
                             pes: list[PrivateEndpoint]) -> list[PrivateDnsZone]:
    """A private endpoint's zone group puts its A record in the zone (as Azure does)."""
    out = []
    for zone in zones:
        records = dict(zone.records)
        for pe in pes:
            if zone.name.lower().rstrip(".") in (pe.zone_group or ()):
                records[pe.target.name.lower()] = pe.ip
        out.append(dataclasses.replace(zone, records=records) if records != zone.records
                   else zone)
    return out


def build_scenario(data: Any, source: str, path: Path | None) -> Scenario:
    """Validate ``data`` and build the Scenario; ScenarioError lists every problem."""
    fmt = data.get("format", 1) if isinstance(data, dict) else 1
    ok_format = fmt in FORMATS and not isinstance(fmt, bool)
    ctx = Ctx(source, fmt if ok_format else 1)
    top = ctx.mapping(data, "", TOP_REQUIRED, TOP_OPTIONAL, V2_SECTIONS)
    if top is None:
        raise ScenarioError(ctx.errors)
    if not ok_format:
        ctx.err("format", f"{fmt!r} is not a supported format version (1 or 2)")
    name = ctx.string(top, "name", "", SCENARIO_NAME_RE, "a scenario name ([a-z0-9-])")
    if name and path is not None and path.stem != name:
        ctx.err("name", f"{name!r} must match the file name ({path.stem})")
    title = ctx.string(top, "title", "")
    symptom = ctx.string(top, "symptom", "")
    sub = ctx.string(top, "subscription", "", GUID_RE, "a subscription id (a GUID)")
    location = ctx.string(top, "location", "", re.compile(r"^[a-z0-9]+$"), "an Azure region")
    now = _now(ctx, top)
    ctx.now = now
    vnets, nsgs, rts = parse_vnets(ctx, top), parse_nsgs(ctx, top), parse_route_tables(ctx, top)
    zones, vms = parse_zones(ctx, top), parse_vms(ctx, top)
    public_dns: dict[str, IPv4Address] = {}
    for key, value in _str_map(ctx, top, "public_dns").items():
        if not isinstance(key, str) or not DOMAIN_RE.match(key.rstrip(".")):
            ctx.err(f"public_dns.{key}", f"{key!r} is not a DNS name")
        elif (addr := ctx.address(value, f"public_dns.{key}")) is not None:
            public_dns[key.rstrip(".").lower()] = addr
    vm_facts: dict[str, dict[str, Any]] = {}
    for key, value in _str_map(ctx, top, "vm_facts").items():
        if not isinstance(value, dict):
            ctx.err(f"vm_facts.{key}", f"expected a mapping of facts, got {kind_of(value)}")
        else:
            vm_facts[str(key)] = dict(value)
    traffic, faults = parse_traffic(ctx, top), parse_faults(ctx, top)
    activity = _activity(ctx, top, now)
    truth = _truth(ctx, top)
    replay = ctx.string(top, "replay", "", re.compile(r"^[^/\\]+\.json$"),
                        "a JSON file name beside the scenario", default=None)
    if replay and path is not None and not (path.parent / replay).is_file():
        ctx.err("replay", f"{replay} not found beside the scenario")
    ctx.names_unique(vnets, "VNet")
    ctx.names_unique(nsgs, "NSG")
    ctx.names_unique(rts, "route table")
    ctx.names_unique(zones, "private DNS zone")
    ctx.names_unique(vms, "VM")
    lbs, pes, fws = (parse_load_balancers(ctx, top), parse_private_endpoints(ctx, top),
                     parse_firewalls(ctx, top))
    ngws, accounts = parse_nat_gateways(ctx, top), parse_storage_accounts(ctx, top)
    flow_logs, hosts = parse_flow_logs(ctx, top), parse_internet_hosts(ctx, top)
    engineer = (ctx.address(top["engineer_ip"], "engineer_ip") if "engineer_ip" in top
                else DEFAULT_ENGINEER_IP if ctx.fmt >= 2 else None)
    for items, kind in ((lbs, "load balancer"), (pes, "private endpoint"), (fws, "firewall"),
                        (ngws, "NAT gateway"), (accounts, "storage account")):
        ctx.names_unique(items, kind)
    check_references(ctx, vnets, nsgs, rts, zones, vms, traffic, faults, vm_facts)
    if ctx.fmt >= 2:
        check_format2(ctx, Parts(vnets, zones, vms, traffic, faults, lbs, pes, fws, ngws,
                                 flow_logs, {a.name for _, a in accounts}, hosts, engineer,
                                 public_dns))
    if ctx.errors or not (name and title and symptom and sub and location and now and truth):
        raise ScenarioError(ctx.errors or [f"{source}: (top level): incomplete scenario"])
    zone_list = _with_zone_group_records([z for _, z in zones], [pe for _, pe in pes])
    return Scenario(
        path=path, format=ctx.fmt, name=name, title=title, symptom=symptom, subscription=sub,
        location=location, now=now, vnets=tuple(v for _, v in vnets),
        nsgs=tuple(n for _, n in nsgs), route_tables=tuple(r for _, r in rts),
        private_dns_zones=tuple(zone_list), public_dns=public_dns,
        vms=tuple(v for _, v in vms), traffic=tuple(t for _, t in traffic),
        faults=tuple(f for _, f in faults), activity_log=tuple(activity), vm_facts=vm_facts,
        truth=truth, replay=replay,
        load_balancers=tuple(x for _, x in lbs), private_endpoints=tuple(x for _, x in pes),
        firewalls=tuple(x for _, x in fws), nat_gateways=tuple(x for _, x in ngws),
        internet_hosts=hosts, engineer_ip=engineer,
        storage_accounts=tuple(x for _, x in accounts),
        flow_logs=tuple(x for _, x in flow_logs),
    )
