"""The points of an ``az monitor metrics list`` answer, for the scorer's fault signals.

A metric's answer spreads one fact over nested objects (the metric's name, the series'
dimension values, each point's figure), so no one unit of it says "Failed: 16200"; the signals
that read metrics (SNAT connections failed, a backend's health probe at 0) read the points here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Point:
    """One point of one series: the metric, its dimension values (lower-case names) and the
    point's aggregates (``total``, ``average``, … as Azure Monitor names them)."""

    metric: str
    dimensions: dict[str, str]
    values: dict[str, float]


def points(output: str) -> Iterator[Point]:
    """Every point of every series of a metrics answer; nothing for any other output."""
    try:
        data: Any = json.loads(output)
    except ValueError:
        return
    metrics = data.get("value") if isinstance(data, dict) else None
    for metric in metrics if isinstance(metrics, list) else []:
        if not isinstance(metric, dict):
            continue
        name = metric.get("name")
        metric_name = str(name.get("value") if isinstance(name, dict) else name or "")
        for series in metric.get("timeseries") or []:
            if not isinstance(series, dict):
                continue
            dims: dict[str, str] = {}
            for meta in series.get("metadatavalues") or []:
                key = meta.get("name") if isinstance(meta, dict) else None
                key = key.get("value") if isinstance(key, dict) else key
                if isinstance(meta, dict) and key:
                    dims[str(key).lower()] = str(meta.get("value"))
            for point in series.get("data") or []:
                if isinstance(point, dict):
                    yield Point(metric_name, dims, {
                        k: float(v) for k, v in point.items()
                        if isinstance(v, int | float) and not isinstance(v, bool)})


def failed_snat(output: str) -> bool:
    """A NAT gateway's ``SNATConnectionCount`` series for ``ConnectionState`` Failed with a
    point above 0: connections the gateway could not translate."""
    return any(p.metric.lower() == "snatconnectioncount"
               and p.dimensions.get("connectionstate", "").lower() == "failed"
               and p.values.get("total", 0) > 0 for p in points(output))


def backend_down(output: str) -> bool:
    """A load balancer's ``DipAvailability`` (Health Probe Status) at 0 in some point: a
    backend that failed its health probe for that whole interval."""
    return any(p.metric.lower() == "dipavailability" and "average" in p.values
               and p.values["average"] == 0 for p in points(output))
