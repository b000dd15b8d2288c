"""Hand-written VNet flow-log blobs for tests: records, tuples and the folder layout.

Shapes follow Microsoft Learn's "Virtual network flow logs" (record properties, tuple layout)
and "Read flow logs" (blob path); nothing here is produced by the code under test.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SUB = "00000000-0000-0000-0000-000000000000"
FLOW_LOG_ID = (f"/SUBSCRIPTIONS/{SUB}/RESOURCEGROUPS/NETWORKWATCHERRG/PROVIDERS/"
               "MICROSOFT.NETWORK/NETWORKWATCHERS/NETWORKWATCHER_WESTEUROPE/FLOWLOGS/FL-TEST")
TARGET = (f"/subscriptions/{SUB}/resourceGroups/rg/providers/Microsoft.Network/"
          "virtualNetworks/vnet-test")
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def at(minute: int, second: float = 10.0) -> int:
    """Milliseconds since the epoch, ``minute`` minutes after T0 (plus ``second``)."""
    return int((T0 + timedelta(minutes=minute, seconds=second)).timestamp() * 1000)


def tup(ts: int, src: str, dst: str, sport: int, dport: int, state: str, direction: str = "O",
        proto: int = 6, enc: str = "NX", ps: int = 0, bs: int = 0, pr: int = 0,
        br: int = 0) -> str:
    return f"{ts},{src},{dst},{sport},{dport},{proto},{direction},{state},{enc},{ps},{bs},{pr},{br}"


def record(minute: int, mac: str, flows: list[tuple[str, list[tuple[str, list[str]]]]],
           **extra: Any) -> dict[str, Any]:
    """One minute of one NIC: ``flows`` is ``[(aclID, [(rule, [tuple, ...]), ...]), ...]``."""
    t = T0 + timedelta(minutes=minute, seconds=58)
    rec: dict[str, Any] = {
        "time": t.strftime("%Y-%m-%dT%H:%M:%S.1234567Z"), "flowLogVersion": 4,
        "flowLogGUID": "66aa66aa-bb77-cc88-dd99-00ee00ee00ee", "macAddress": mac,
        "category": "FlowLogFlowEvent", "flowLogResourceID": FLOW_LOG_ID,
        "targetResourceID": TARGET, "operationName": "FlowLogFlowEvent",
        "flowRecords": {"flows": [
            {"aclID": acl, "flowGroups": [{"rule": r, "flowTuples": ts} for r, ts in groups]}
            for acl, groups in flows]},
    }
    rec.update(extra)
    return rec


def blob_path(root: Path, mac: str, hour: datetime) -> Path:
    return (root / "flowLogResourceID=" / f"{SUB}_NETWORKWATCHERRG"
            / "NETWORKWATCHER_WESTEUROPE_FL-TEST" / f"y={hour:%Y}" / f"m={hour:%m}"
            / f"d={hour:%d}" / f"h={hour:%H}" / "m=00" / f"macAddress={mac}" / "PT1H.json")


def write_blob(root: Path, mac: str, records: list[dict[str, Any]],
               hour: datetime = T0) -> Path:
    """The blob as Azure writes it: ``{"records":[`` … ``]}``, records comma-separated."""
    path = blob_path(root, mac, hour)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"records":[' + ",".join(json.dumps(r) for r in records) + "]}")
    return path


def activity(minute: int, second: int, operation: str, resource: str,
             caller: str = "alice@contoso.com", status: str = "Succeeded") -> dict[str, Any]:
    """An event as ``az monitor activity-log list`` prints it."""
    t = T0 + timedelta(minutes=minute, seconds=second)
    return {"caller": caller, "eventTimestamp": t.isoformat().replace("+00:00", "Z"),
            "operationName": {"value": operation, "localizedValue": operation},
            "resourceId": f"/subscriptions/{SUB}/resourceGroups/rg/providers/{resource}",
            "status": {"value": status, "localizedValue": status},
            "correlationId": f"corr-{minute}-{second}"}
