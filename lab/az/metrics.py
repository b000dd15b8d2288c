"""`az monitor metrics list --resource ID --metric M`: Azure Monitor's answer for the metrics the
lab computes (lab/metrics.py): load balancers and NAT gateways.

The window is ``--offset`` (default 1h) ending at now, or ``--start-time``/``--end-time`` as az
reads them; ``--interval`` PT1M (default; az's ``1m`` form too), PT5M, PT15M, PT30M or PT1H,
points summed (counts) or averaged (availability); ``--aggregation`` defaults to the metric's
primary; without ``--filter``/``--dimension`` no split, with ``--filter "Dim eq '*'"`` one
series per value. Other resources' metrics (VMs, firewalls…) are not modelled (exit 2).
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from lab.az.args import Command, Parsed, opt
from lab.az.catalog import Catalog, parse_id, same
from lab.az.errors import cloud_error, usage_error
from lab.az.monitor import _parse_offset, _parse_time
from lab.az.storage import timeline
from lab.metrics import LB_METRICS, NAT_METRICS, MetricInfo, Values, lb_minute, nat_minute
from lab.network import NotModelled
from lab.timeline import MINUTE, floor_minute

Json = dict[str, Any]
INTERVALS = {"PT1M": 1, "PT5M": 5, "PT15M": 15, "PT30M": 30, "PT1H": 60, "PT6H": 360,
             "PT12H": 720, "P1D": 1440}
AGGREGATIONS = ("Average", "Count", "Maximum", "Minimum", "Total")
_FILTER = re.compile(r"^\s*(\w+)\s+eq\s+'([^']*)'\s*$", re.IGNORECASE)


def _interval(text: str | None) -> tuple[str, int]:
    if text is None:
        return "PT1M", 1
    upper = text.strip().upper()
    if upper in INTERVALS:
        return upper, INTERVALS[upper]
    m = re.match(r"^(?:(\d+)H)?(?:(\d+)M)?$", upper)
    if m and any(m.groups()):
        minutes = int(m.group(1) or 0) * 60 + int(m.group(2) or 0)
        for name, value in INTERVALS.items():
            if value == minutes:
                return name, value
    raise cloud_error("BadRequest", f"Invalid interval '{text}'. Allowed: "
                      + ", ".join(INTERVALS))


def _window(cat: Catalog, a: Parsed) -> tuple[datetime, datetime]:
    offset = _parse_offset(a.text("offset") or "1h")
    start_text, end_text = a.text("start_time"), a.text("end_time")
    if start_text and end_text:
        return _parse_time(start_text), _parse_time(end_text)
    if end_text:
        end = _parse_time(end_text)
        return end - offset, end
    if start_text:
        start = _parse_time(start_text)
        return start, start + offset
    return cat.scenario.now - offset, cat.scenario.now


def _resource(cat: Catalog, a: Parsed) -> tuple[str, str, Any, dict[str, MetricInfo]]:
    """(resource id, namespace/type, the resource, its metrics) or NotModelled."""
    ref = a.require("resource")
    if not ref.startswith("/"):
        group, rtype = a.text("resource_group"), a.text("resource_type")
        namespace = a.text("namespace")
        if not (group and rtype):
            raise usage_error("usage error: --resource ID | --resource NAME --resource-group "
                              "NAME --resource-type TYPE [--namespace NAMESPACE]")
        full = f"{namespace}/{rtype}" if namespace else rtype
        ref = (f"/subscriptions/{cat.sub}/resourceGroups/{group}/providers/{full}/{ref}")
    parts = parse_id(ref)
    kind, name = parts.get("type", ""), parts.get("name", "")
    group = cat.rg(parts.get("resource_group", ""))
    s = cat.scenario
    if same(kind, "loadBalancers"):
        balancer = cat.lb(group, name)
        return s.lb_id(balancer), "Microsoft.Network/loadBalancers", balancer, LB_METRICS
    if same(kind, "natGateways"):
        ngw = cat.nat_gateway(group, name)
        return s.nat_gateway_id(ngw), "Microsoft.Network/natGateways", ngw, NAT_METRICS
    raise NotModelled(f"az monitor metrics of {parts.get('namespace', '?')}/{kind or '?'} "
                      "(the lab computes load balancer and NAT gateway metrics)")


def _split(a: Parsed, info: MetricInfo) -> str | None:
    """The dimension value wanted: "*" (split), a value, or None (no split)."""
    filt, dims = a.text("filter"), a.get("dimension") or []
    if filt:
        m = _FILTER.match(filt)
        if m is None:
            raise cloud_error("BadRequest", f"Invalid $filter '{filt}': the lab reads "
                              "\"Dimension eq 'value'\" or \"Dimension eq '*'\"")
        if info.dimension is None or not same(m.group(1), info.dimension):
            raise cloud_error("BadRequest", f"Metric {info.name} has no dimension "
                              f"{m.group(1)}" + (f" (its dimension: {info.dimension})"
                                                 if info.dimension else ""))
        return m.group(2)
    if dims:
        if info.dimension is None or not any(same(d, info.dimension) for d in dims):
            raise cloud_error("BadRequest", f"Metric {info.name} has no dimension "
                              f"{', '.join(dims)}")
        return "*"
    return None


def _aggregate(values: list[float], how: str) -> float:
    if how == "Average":
        return round(sum(values) / len(values), 4)
    if how == "Total":
        return sum(values)
    if how == "Maximum":
        return max(values)
    if how == "Minimum":
        return min(values)
    return float(len(values))


def _series(per_minute: list[Values | None], key: str | None, info: MetricInfo) -> list[
        float | None]:
    out: list[float | None] = []
    for values in per_minute:
        if values is None:
            out.append(None)
        elif key is None:  # no split: the values of every dimension combined
            nums = list(values.values())
            out.append(sum(nums) if info.primary == "Total" else (
                sum(nums) / len(nums) if nums else None))
        else:
            out.append(values.get(key))
    return out


def metrics_list(cat: Catalog, a: Parsed) -> Any:
    rid, namespace, resource, known = _resource(cat, a)
    names = a.get("metrics") or []
    interval_name, step = _interval(a.text("interval"))
    start, end = _window(cat, a)
    if end <= start:
        raise cloud_error("BadRequest", "The end time must be after the start time.")
    wanted_aggs = [x.capitalize() for x in (a.get("aggregation") or [])]
    for agg in wanted_aggs:
        if agg not in AGGREGATIONS:
            raise usage_error(f"argument --aggregation: invalid choice: '{agg}'")
    tl = timeline(cat)
    minutes = []
    t = floor_minute(start)
    while t < end:
        minutes.append(t)
        t += MINUTE
    value = []
    for name in names:
        info = next((m for k, m in known.items() if same(k, name)), None)
        if info is None:
            raise cloud_error("BadRequest", f"Failed to find metric configuration for provider: "
                              f"Microsoft.Network, resource Type: {namespace.split('/')[-1]}, "
                              f"metric: {name}, Valid metrics: {', '.join(known)}")
        per_minute: list[Values | None] = [
            None if m >= cat.scenario.now else (
                lb_minute(tl, resource.name, info.name, m) if info.name in LB_METRICS
                else nat_minute(tl, resource, info.name, m)) for m in minutes]
        split = _split(a, info)
        keys: list[str | None] = []
        if split is None:
            keys = [None]
        elif split == "*":
            keys = [k for k in sorted({k for v in per_minute if v for k in v})]
        else:
            keys = [split]
        aggs = wanted_aggs or [info.primary]
        timeseries = []
        for key in keys:
            series = _series(per_minute, key, info)
            data = []
            for i in range(0, len(minutes), step):
                chunk = [v for v in series[i:i + step] if v is not None]
                point: Json = {"timeStamp": minutes[i].isoformat()}
                if chunk:
                    point.update({agg.lower(): _aggregate(chunk, agg) for agg in aggs})
                data.append(point)
            meta = [] if key is None else [{"name": {"localizedValue": info.dimension.lower()
                                                     if info.dimension else "",
                                                     "value": (info.dimension or "").lower()},
                                            "value": key}]
            timeseries.append({"data": data, "metadatavalues": meta})
        value.append({"displayDescription": info.display, "errorCode": "Success",
                      "id": f"{rid}/providers/Microsoft.Insights/metrics/{info.name}",
                      "name": {"localizedValue": info.display, "value": info.name},
                      "resourceGroup": resource.resource_group, "timeseries": timeseries,
                      "type": "Microsoft.Insights/metrics", "unit": info.unit})
    return {"cost": len(minutes) * max(1, len(value)), "interval": interval_name,
            "namespace": namespace, "resourceregion": cat.scenario.location,
            "timespan": f"{start.strftime('%Y-%m-%dT%H:%M:%SZ')}/"
                        f"{end.strftime('%Y-%m-%dT%H:%M:%SZ')}",
            "value": value}


COMMANDS: list[Command] = [
    Command(("monitor", "metrics", "list"), (
        opt("--resource", dest="resource", required=True),
        opt("--metrics", "--metric", dest="metrics", required=True, multi=True),
        opt("--resource-group", "-g", dest="resource_group"),
        opt("--resource-type", dest="resource_type"),
        opt("--namespace", "--resource-namespace", dest="namespace"),
        opt("--start-time", dest="start_time"), opt("--end-time", dest="end_time"),
        opt("--offset", dest="offset"), opt("--interval", dest="interval"),
        opt("--aggregation", dest="aggregation", multi=True),
        opt("--filter", dest="filter"), opt("--dimension", dest="dimension", multi=True),
        opt("--top", dest="top"), opt("--orderby", dest="orderby"),
        opt("--metric-namespace", dest="metric_namespace")), metrics_list),
]
