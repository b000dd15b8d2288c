"""`az monitor activity-log list`, `az resource list|show`, `az group list|show`, `az account show`.

The activity log returns the scenario's events whose time (``now − ago``) lies in the window az
computes: end = ``--end-time`` or now, start = ``--start-time`` or end − ``--offset`` (default
6h), at most 90 days; newest first, at most ``--max-events`` (default 50).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from lab.az import resources as res
from lab.az import resources_v2 as res2
from lab.az.args import NAME, RG_OPTIONAL, Command, Parsed, opt
from lab.az.catalog import Catalog, guid, parse_id, same
from lab.az.errors import AzError, cloud_error, usage_error
from lab.model import ActivityEvent

Json = dict[str, Any]
_PERIOD = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$", re.IGNORECASE)


def subscription_name(cat: Catalog) -> str:
    return f"Ghost lab ({cat.scenario.name})"


def account_show(cat: Catalog, a: Parsed) -> Any:
    tenant = guid("tenant", cat.sub)
    return {"environmentName": "AzureCloud", "homeTenantId": tenant, "id": cat.sub,
            "isDefault": True, "managedByTenants": [], "name": subscription_name(cat),
            "state": "Enabled", "tenantId": tenant,
            "user": {"name": "ghost-reader@lab.invalid", "type": "user"}}


# -- resource groups and generic resources --------------------------------------------------


def _group_json(cat: Catalog, name: str) -> Json:
    return {"id": f"/subscriptions/{cat.sub}/resourceGroups/{name}",
            "location": cat.scenario.location, "managedBy": None, "name": name,
            "properties": {"provisioningState": "Succeeded"}, "tags": None,
            "type": "Microsoft.Resources/resourceGroups"}


def group_list(cat: Catalog, a: Parsed) -> Any:
    return [_group_json(cat, g) for g in cat.resource_groups()]


def group_show(cat: Catalog, a: Parsed) -> Any:
    return _group_json(cat, cat.rg(a.require("name")))


def _full_resources(cat: Catalog) -> list[Json]:
    s = cat.scenario
    out: list[Json] = [res.vnet_json(cat, v) for v in s.vnets]
    out += [res.nsg_json(cat, n) for n in s.nsgs]
    out += [res.route_table_json(cat, t) for t in s.route_tables]
    out += [res.zone_json(cat, z) for z in s.private_dns_zones]
    out += [res.link_json(cat, z, v) for z in s.private_dns_zones for v in z.linked_vnets]
    out += [res.nic_json(cat, vm) for vm in s.vms]
    out += [res.vm_json(cat, vm) for vm in s.vms]
    if s.format >= 2:
        out += _format2_resources(cat)
    for vm in s.vms:
        if vm.network_watcher_extension:
            vid = s.vm_id(vm)
            out.append({"id": f"{vid}/extensions/{res.EXTENSION_NAME}",
                        "location": s.location, "name": f"{vm.name}/{res.EXTENSION_NAME}",
                        "provisioningState": "Succeeded", "resourceGroup": vm.resource_group,
                        "type": "Microsoft.Compute/virtualMachines/extensions"})
    return out


def _format2_resources(cat: Catalog) -> list[Json]:
    """What format 2 adds to ``az resource list``: load balancers, public IPs, private
    endpoints and their NICs, firewalls and policies, NAT gateways, storage accounts, SQL
    servers a private endpoint targets."""
    s = cat.scenario
    out = [res2.lb_json(cat, b) for b in s.load_balancers]
    out += [res2.public_ip_json(cat, p, rg, owner) for p, rg, owner in s.public_ips()]
    out += [res2.pe_json(cat, pe) for pe in s.private_endpoints]
    out += [res2.pe_nic_json(cat, pe) for pe in s.private_endpoints]
    out += [res2.firewall_json(cat, fw) for fw in s.firewalls]
    out += [res2.policy_json(cat, fw) for fw in s.firewalls if fw.policy is not None]
    out += [res2.nat_gateway_json(cat, n) for n in s.nat_gateways]
    out += res2.storage_accounts(cat)
    seen: set[str] = set()
    for pe in s.private_endpoints:
        if pe.target.kind == "sqlServer" and pe.target.name not in seen:
            seen.add(pe.target.name)
            out.append(res2.sql_server_json(cat, pe))
    return out


_TOP = ("id", "name", "type", "location", "resourceGroup", "tags")


def _generic(full: Json, with_properties: bool) -> Json:
    body: Json = {k: full.get(k) for k in _TOP}
    body.update({"extendedLocation": None, "identity": None, "kind": None, "managedBy": None,
                 "plan": None, "sku": None})
    if with_properties:
        body["properties"] = {k: v for k, v in full.items() if k not in _TOP}
    else:
        body["provisioningState"] = full.get("provisioningState", "Succeeded")
    return body


def resource_list(cat: Catalog, a: Parsed) -> Any:
    group = a.text("resource_group")
    items = _full_resources(cat)
    if group is not None:
        items = [r for r in items if same(r["resourceGroup"], cat.rg(group))]
    rtype, name = a.text("resource_type"), a.text("name")
    if rtype:
        items = [r for r in items if same(r["type"], rtype)]
    if name:
        items = [r for r in items if same(r["name"], name)]
    return [_generic(r, False) for r in items]


def resource_show(cat: Catalog, a: Parsed) -> Any:
    rid = a.text("_id")
    if rid is None:
        group, name, rtype = a.text("resource_group"), a.text("name"), a.text("resource_type")
        if not (group and name and rtype):
            raise usage_error("usage error: --ids IDs | --resource-group NAME --name NAME "
                              "--resource-type TYPE [--namespace NAMESPACE]")
        namespace = a.text("namespace")
        full_type = f"{namespace}/{rtype}" if namespace else rtype
        rid = (f"/subscriptions/{cat.sub}/resourceGroups/{group}/providers/{full_type}/{name}")
    for item in _full_resources(cat):
        if same(item["id"], rid):
            return _generic(item, True)
    parts = parse_id(rid)
    group = cat.rg(parts.get("resource_group", ""))
    kind = f"{parts.get('namespace', '')}/{parts.get('type', '')}"
    raise cloud_error("ResourceNotFound", f"The Resource '{kind}/{parts.get('name', '')}' under "
                      f"resource group '{group}' was not found. For more details please go to "
                      "https://aka.ms/ARMResourceNotFoundFix", 3)


# -- activity log ---------------------------------------------------------------------------


def _parse_time(value: str) -> datetime:
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise AzError(f"Input '{value}' is not valid datetime. Valid example: "
                      "2000-12-31T12:59:59Z") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _parse_offset(value: str) -> timedelta:
    match = _PERIOD.match(value.strip())
    if not value.strip() or match is None:
        raise usage_error(f"argument --offset: invalid period value: '{value}'")
    d, h, m, s = (int(x) if x else 0 for x in match.groups())
    return timedelta(days=d, hours=h, minutes=m, seconds=s)


def _window(cat: Catalog, a: Parsed) -> tuple[datetime, datetime]:
    offset = _parse_offset(a.text("offset") or "6h")
    end = _parse_time(a.require("end_time")) if a.text("end_time") else cat.scenario.now
    start = _parse_time(a.require("start_time")) if a.text("start_time") else end - offset
    if (end - start).days > 90:
        raise AzError("The time span is greater than 90 days.")
    return start, end


def _split_operation(operation: str) -> tuple[str, list[str]]:
    """'Microsoft.Network/networkSecurityGroups/securityRules/write' → (namespace, types)."""
    parts = operation.split("/")
    return parts[0], parts[1:-1]


def event_resource_id(cat: Catalog, event: ActivityEvent) -> str:
    # the whole timeline: a rule deleted since (format 2's ``active``) still has its id
    known = cat.timeline.resource_id_for(event.resource)
    if known is not None:
        return known
    namespace, types = _split_operation(event.operation)
    names = event.resource.split("/")
    group = _guess_group(cat, namespace)
    path = "/".join(f"{t}/{n}" for t, n in zip(types, names, strict=False))
    return f"/subscriptions/{cat.sub}/resourceGroups/{group}/providers/{namespace}/{path}"


def _guess_group(cat: Catalog, namespace: str) -> str:
    """(lab) a resource outside the model lives in the group of the first resource of its kind."""
    s = cat.scenario
    if same(namespace, "Microsoft.Compute") and s.vms:
        return s.vms[0].resource_group
    groups = cat.resource_groups()
    return groups[0] if groups else "rg-unknown"


def _localized(value: str) -> Json:
    return {"localizedValue": value, "value": value}


def event_json(cat: Catalog, event: ActivityEvent) -> Json:
    rid = event_resource_id(cat, event)
    parts = parse_id(rid)
    namespace = parts.get("namespace", event.operation.split("/")[0])
    rtype = "/".join([namespace, *_split_operation(event.operation)[1]])
    seed = f"{event.time.isoformat()}/{event.operation}/{event.resource}"
    event_id = guid("event", seed)
    ticks = int((event.time - datetime(1, 1, 1, tzinfo=UTC)).total_seconds() * 10_000_000)
    stamp = event.time.astimezone(UTC).isoformat()
    return {
        "authorization": {"action": event.operation, "scope": rid},
        "caller": event.caller,
        "category": _localized("Administrative"),
        "correlationId": guid("correlation", seed),
        "description": "",
        "eventDataId": event_id,
        "eventName": _localized("EndRequest"),
        "eventTimestamp": stamp,
        "id": f"{rid}/events/{event_id}/ticks/{ticks}",
        "level": "Error" if event.status.lower() == "failed" else "Informational",
        "operationId": guid("operation", seed),
        "operationName": _localized(event.operation),
        "properties": {"entity": rid, "eventCategory": "Administrative",
                       "message": event.operation},
        "resourceGroupName": parts.get("resource_group", ""),
        "resourceId": rid,
        "resourceProviderName": _localized(namespace),
        "resourceType": _localized(rtype),
        "status": _localized(event.status),
        "subStatus": _localized(""),
        "submissionTimestamp": stamp,
        "subscriptionId": cat.sub,
        "tenantId": guid("tenant", cat.sub),
    }


def activity_log(cat: Catalog, a: Parsed) -> Any:
    start, end = _window(cat, a)
    events = [e for e in cat.scenario.activity_log if start <= e.time <= end]
    events.sort(key=lambda e: e.time, reverse=True)
    rows = [event_json(cat, e) for e in events]
    group, rid = a.text("resource_group"), a.text("resource_id")
    if group:
        rows = [r for r in rows if same(r["resourceGroupName"], group)]
    if rid:
        rows = [r for r in rows if same(r["resourceId"], rid)]
    for key, field in (("caller", "caller"), ("status", "status")):
        wanted = a.text(key)
        if wanted:
            rows = [r for r in rows if same(r[field] if key == "caller" else r[field]["value"],
                                            wanted)]
    namespace = a.text("namespace")
    if namespace:
        rows = [r for r in rows if same(r["resourceProviderName"]["value"], namespace)]
    correlation = a.text("correlation_id")
    if correlation:
        rows = [r for r in rows if same(r["correlationId"], correlation)]
    try:
        limit = int(a.text("max_events") or "50")
    except ValueError:
        raise usage_error(f"argument --max-events: invalid int value: "
                          f"'{a.text('max_events')}'") from None
    rows = rows[:limit]
    select = a.get("select")
    if select:
        wanted_keys = {s.lower() for s in select}
        rows = [{k: v for k, v in r.items() if k.lower() in wanted_keys} for r in rows]
    return rows


COMMANDS: list[Command] = [
    Command(("account", "show"), (opt("--name", "-n", dest="account"),), account_show),
    Command(("group", "list"), (), group_list),
    Command(("group", "show"), (NAME,), group_show,
            ids=(("resource_group", "name"),)),
    Command(("resource", "list"), (RG_OPTIONAL, opt("--resource-type", dest="resource_type"),
                                   opt("--name", "-n", dest="name"),
                                   opt("--tag", dest="tag")), resource_list),
    Command(("resource", "show"), (opt("--resource-group", "-g", dest="resource_group"),
                                   opt("--name", "-n", dest="name"),
                                   opt("--resource-type", dest="resource_type"),
                                   opt("--namespace", dest="namespace"),
                                   opt("--parent", dest="parent"),
                                   opt("--api-version", dest="api_version")),
            resource_show, ids=(("@id", "_id"),)),
    Command(("monitor", "activity-log", "list"), (
        opt("--start-time", dest="start_time"), opt("--end-time", dest="end_time"),
        opt("--offset", dest="offset"), RG_OPTIONAL,
        opt("--resource-id", dest="resource_id"), opt("--caller", dest="caller"),
        opt("--status", dest="status"), opt("--max-events", dest="max_events"),
        opt("--namespace", "--resource-provider", dest="namespace"),
        opt("--correlation-id", dest="correlation_id"),
        opt("--select", dest="select", multi=True)), activity_log),
]
