"""Validation of a scenario document: every problem, one line each, never a traceback.

Each line reads ``FILE: field.path: problem``. Parsing builds the dataclasses of lab/scenario.py
as it goes, skipping what is broken (lab/validate_sections.py), then checks the references
between sections (lab/validate_refs.py); if anything was wrong, one ScenarioError carries all
the lines.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from ipaddress import IPv4Address
from pathlib import Path
from typing import Any

import yaml

from lab.scenario import ActivityEvent, Scenario, ScenarioError, Truth
from lab.validate_refs import check_references
from lab.validate_sections import (
    DOMAIN_RE,
    Ctx,
    kind_of,
    parse_faults,
    parse_nsgs,
    parse_route_tables,
    parse_traffic,
    parse_vms,
    parse_vnets,
    parse_zones,
)

CATEGORIES = (
    "nsg_deny", "nic_nsg_deny", "udr_blackhole", "udr_wrong_next_hop", "nva_down", "nva_loss",
    "nva_reset", "peering_disconnected", "peering_forwarding_blocked", "private_dns_link_missing",
    "custom_dns_broken", "vm_stopped", "service_down", "mtu_blackhole", "asymmetric_routing",
    "extension_missing", "healthy",
)
SCENARIO_NAME_RE = re.compile(r"^[a-z0-9-]+$")
GUID_RE = re.compile(r"^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}$")
AGO_RE = re.compile(r"^(\d+)([smhd])$")
AGO_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
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
    category = ctx.choice(d, "category", "truth", CATEGORIES)
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
    if category is None or fix is None:
        return None
    return Truth(category, lists[0], lists[1], lists[2], fix)


def _str_map(ctx: Ctx, top: dict[str, Any], key: str) -> dict[Any, Any]:
    value = top.get(key) or {}
    if not isinstance(value, dict):
        ctx.err(key, f"expected a mapping, got {kind_of(value)}")
        return {}
    return value


def build_scenario(data: Any, source: str, path: Path | None) -> Scenario:
    """Validate ``data`` and build the Scenario; ScenarioError lists every problem."""
    ctx = Ctx(source)
    top = ctx.mapping(data, "", TOP_REQUIRED, TOP_OPTIONAL)
    if top is None:
        raise ScenarioError(ctx.errors)
    fmt = top.get("format", 1)
    if fmt != 1 or isinstance(fmt, bool):
        ctx.err("format", f"{fmt!r} is not a supported format version (only 1)")
    name = ctx.string(top, "name", "", SCENARIO_NAME_RE, "a scenario name ([a-z0-9-])")
    if name and path is not None and path.stem != name:
        ctx.err("name", f"{name!r} must match the file name ({path.stem})")
    title = ctx.string(top, "title", "")
    symptom = ctx.string(top, "symptom", "")
    sub = ctx.string(top, "subscription", "", GUID_RE, "a subscription id (a GUID)")
    location = ctx.string(top, "location", "", re.compile(r"^[a-z0-9]+$"), "an Azure region")
    now = _now(ctx, top)
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
    check_references(ctx, vnets, nsgs, rts, zones, vms, traffic, faults, vm_facts)
    if ctx.errors or not (name and title and symptom and sub and location and now and truth):
        raise ScenarioError(ctx.errors or [f"{source}: (top level): incomplete scenario"])
    return Scenario(
        path=path, format=1, name=name, title=title, symptom=symptom, subscription=sub,
        location=location, now=now, vnets=tuple(v for _, v in vnets),
        nsgs=tuple(n for _, n in nsgs), route_tables=tuple(r for _, r in rts),
        private_dns_zones=tuple(z for _, z in zones), public_dns=public_dns,
        vms=tuple(v for _, v in vms), traffic=tuple(t for _, t in traffic),
        faults=tuple(f for _, f in faults), activity_log=tuple(activity), vm_facts=vm_facts,
        truth=truth, replay=replay,
    )
