"""Realistic VNet flow-log blobs (version 4) with planted, known truth.

Writes the folder tree that ``az storage blob download-batch`` writes from the
``insights-logs-flowlogflowevent`` container: one ``PT1H.json`` per NIC and hour under
``flowLogResourceID=/{SUB}_NETWORKWATCHERRG/NETWORKWATCHER_{LOC}_{NAME}/y=/m=/d=/h=/m=00/
macAddress={MAC}/``, each ``{"records": [...]}`` with one record per minute.

The estate: NIC 0 is a Redis VM (10.1.2.4:6379) behind a subnet NSG and a NIC NSG (so its
allowed flows appear under both ACLs, as VNet flow logs log them), NIC 1 an API VM
(10.1.5.6:8080), the others web VMs (10.1.1.x) whose subnet NSG denies the Internet's
scanners. Every minute each web VM talks to Redis, to the Internet (HTTPS, DNS), to SQL over a
long-lived connection (a C tuple every 5 minutes), answers load-balancer probes and is scanned.
NIC 2 is busy (``busy`` times the tuples), so its blobs are the largest.

Planted (the truth the analyser must find, returned by :func:`generate`):
- a denial window: from ``deny_from`` to ``deny_until`` (minutes after ``start``) the Redis
  subnet NSG's ``UserRule_deny-web-to-redis`` denies every web VM's connections to
  10.1.2.4:6379 (``I,D`` at the Redis NIC; ``O,B``/``O,E`` with packets out, none back, at the
  web NIC); before and after, the same flows are allowed and answered;
- a one-way flow: from ``one_way_from`` the web VM on NIC 4 (or the last one) sends to
  203.0.113.50:443 and nothing comes back;
- a sudden stop: the web VM on NIC 3 (or the last one) calls the API every minute until
  ``stop_at``, then never again, while its NIC keeps logging;
- the activity-log writes at the start and end of the denial and at the stop (``events``).

Used by ``benchmarks/flowlogs.py`` (large) and the tests (small, exact counts).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

SUB = "6f1c2d3e-0000-4000-8000-00000000abcd"
LOCATION = "westeurope"
FLOW_LOG = "fl-vnet-prod"
FLOW_LOG_ID = (f"/SUBSCRIPTIONS/{SUB.upper()}/RESOURCEGROUPS/NETWORKWATCHERRG/PROVIDERS/"
               f"MICROSOFT.NETWORK/NETWORKWATCHERS/NETWORKWATCHER_{LOCATION.upper()}/FLOWLOGS/"
               f"{FLOW_LOG.upper()}")
TARGET = (f"/subscriptions/{SUB}/resourceGroups/rg-prod-net/providers/Microsoft.Network/"
          "virtualNetworks/vnet-prod")
GUID = "5d6c7b8a-1111-4222-8333-944455556666"
ACL_WEB = "a1b2c3d4-0001-4000-8000-000000000001"    # nsg-web (subnet)
ACL_DATA = "a1b2c3d4-0002-4000-8000-000000000002"   # nsg-data (subnet)
ACL_REDIS = "a1b2c3d4-0003-4000-8000-000000000003"  # nsg-redis-nic (NIC)
ACL_APP = "a1b2c3d4-0004-4000-8000-000000000004"    # nsg-app (subnet)
REDIS, API, SQL, DNS, PROBE = "10.1.2.4", "10.1.5.6", "10.1.4.5", "168.63.129.16", "168.63.129.16"
PARTNER = "203.0.113.50"
DENY_RULE = "UserRule_deny-web-to-redis"
CONTAINER_PREFIX = "flowLogResourceID="


@dataclass
class Plan:
    """What to generate; minute offsets count from ``start``."""

    nics: int = 24
    hours: int = 12
    tuples_per_minute: int = 800        # per web NIC and minute, on average
    busy: int = 6                       # NIC 2 logs this many times more
    start: datetime = field(default_factory=lambda: datetime(2026, 3, 2, 6, 0, tzinfo=UTC))
    seed: int = 7
    deny_from: int = 200
    deny_until: int = 240               # exclusive: the first minute allowed again
    one_way_from: int = 300
    stop_at: int = 400                  # the first minute without the flow
    redis_conns: int = 2                # connections per web VM and minute to Redis


def mac_of(i: int) -> str:
    h = hashlib.sha256(f"nic-{i}".encode()).hexdigest()[:6].upper()
    return "000D3A" + h


def ip_of(i: int) -> str:
    if i == 0:
        return REDIS
    if i == 1:
        return API
    return f"10.1.1.{2 + i}"


def blob_name(mac: str, hour: datetime) -> str:
    return (f"{CONTAINER_PREFIX}/{SUB.upper()}_NETWORKWATCHERRG/NETWORKWATCHER_"
            f"{LOCATION.upper()}_{FLOW_LOG.upper()}/y={hour:%Y}/m={hour:%m}/d={hour:%d}/"
            f"h={hour:%H}/m=00/macAddress={mac}/PT1H.json")


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond:06d}0Z"


class _Minute:
    """The tuples of one NIC in one minute, grouped by ACL and rule (insertion ordered)."""

    def __init__(self) -> None:
        self.groups: dict[str, dict[str, list[str]]] = {}

    def add(self, acl: str, rule: str, tup: str) -> None:
        self.groups.setdefault(acl, {}).setdefault(rule, []).append(tup)

    def record(self, t: datetime, mac: str) -> dict[str, Any]:
        return {
            "time": _iso(t), "flowLogVersion": 4, "flowLogGUID": GUID, "macAddress": mac,
            "category": "FlowLogFlowEvent", "flowLogResourceID": FLOW_LOG_ID,
            "targetResourceID": TARGET, "operationName": "FlowLogFlowEvent",
            "flowRecords": {"flows": [
                {"aclID": acl, "flowGroups": [{"rule": r, "flowTuples": ts}
                                              for r, ts in rules.items()]}
                for acl, rules in self.groups.items()]},
        }


class _Truth:
    def __init__(self) -> None:
        self.denied: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self.one_way: dict[tuple[str, str, str, str], dict[str, Any]] = {}
        self.stopped: dict[tuple[str, str, str, str], dict[str, Any]] = {}

    @staticmethod
    def _note(table: dict[tuple[str, str, str, str], dict[str, Any]],
              key: tuple[str, str, str, str], minute: datetime, **extra: Any) -> None:
        e = table.setdefault(key, {"src": key[0], "dst": key[1], "dport": int(key[2]),
                                   "protocol": int(key[3]), "first_minute": minute,
                                   "last_minute": minute, "tuples": 0, **extra})
        e["first_minute"] = min(e["first_minute"], minute)
        e["last_minute"] = max(e["last_minute"], minute)
        e["tuples"] += 1


def _ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def generate(out_dir: str, plan: Plan | None = None) -> dict[str, Any]:
    """Write the blobs under ``out_dir/blobs`` and the activity log as ``out_dir/events.json``;
    return the truth."""
    p = plan or Plan()
    if p.nics < 3:
        raise ValueError("need at least 3 NICs (Redis, API, one web VM)")
    rnd = random.Random(p.seed)
    internet = [f"20.{rnd.randrange(32, 64)}.{rnd.randrange(256)}.{rnd.randrange(1, 255)}"
                for _ in range(2000)]
    truth = _Truth()
    minutes = p.hours * 60
    webs = list(range(2, p.nics))
    stopper = webs[min(1, len(webs) - 1)]
    one_way = webs[min(2, len(webs) - 1)]
    files: list[str] = []
    total_bytes = 0
    total_tuples = 0
    for hour in range(p.hours):
        hour_start = p.start + timedelta(hours=hour)
        per_nic: dict[int, list[dict[str, Any]]] = {i: [] for i in range(p.nics)}
        for mi in range(hour * 60, hour * 60 + 60):
            t0 = p.start + timedelta(minutes=mi)
            base = _ms(t0)
            recs = {i: _Minute() for i in range(p.nics)}
            denied_now = p.deny_from <= mi < p.deny_until
            for w in webs:
                me = ip_of(w)
                rec = recs[w]
                n_target = p.tuples_per_minute * (p.busy if w == 2 else 1)
                count = 0
                for _ in range(p.redis_conns):  # to Redis, the planted denial window
                    ts = base + rnd.randrange(0, 55_000)
                    sport = str(rnd.randrange(32768, 61000))
                    key = (me, REDIS, "6379", "6")
                    if denied_now:
                        rec.add(ACL_WEB, "DefaultRule_AllowVnetOutBound",
                                f"{ts},{me},{REDIS},{sport},6379,6,O,B,NX,0,0,0,0")
                        rec.add(ACL_WEB, "DefaultRule_AllowVnetOutBound",
                                f"{ts + 3000},{me},{REDIS},{sport},6379,6,O,E,NX,2,120,0,0")
                        recs[0].add(ACL_DATA, DENY_RULE,
                                    f"{ts + 1},{me},{REDIS},{sport},6379,6,I,D,NX,0,0,0,0")
                        truth._note(truth.denied, key, t0, rule=DENY_RULE, acl_id=ACL_DATA)
                    else:
                        pk, by = rnd.randrange(6, 40), rnd.randrange(600, 9000)
                        rk, rb = rnd.randrange(5, 30), rnd.randrange(400, 20000)
                        b = f"{ts},{me},{REDIS},{sport},6379,6,O,B,NX,0,0,0,0"
                        e = f"{ts + 800},{me},{REDIS},{sport},6379,6,O,E,NX,{pk},{by},{rk},{rb}"
                        rec.add(ACL_WEB, "DefaultRule_AllowVnetOutBound", b)
                        rec.add(ACL_WEB, "DefaultRule_AllowVnetOutBound", e)
                        bi = b.replace(",O,", ",I,")
                        ei = e.replace(",O,", ",I,")
                        for acl, rule in ((ACL_DATA, "UserRule_allow-web-to-redis"),
                                          (ACL_REDIS, "DefaultRule_AllowVnetInBound")):
                            recs[0].add(acl, rule, bi)
                            recs[0].add(acl, rule, ei)
                    count += 2
                if w == stopper and mi < p.stop_at:  # to the API until the stop
                    ts = base + rnd.randrange(0, 50_000)
                    sport = str(rnd.randrange(32768, 61000))
                    b = f"{ts},{me},{API},{sport},8080,6,O,B,NX,0,0,0,0"
                    e = f"{ts + 400},{me},{API},{sport},8080,6,O,E,NX,9,1400,7,5200"
                    rec.add(ACL_WEB, "DefaultRule_AllowVnetOutBound", b)
                    rec.add(ACL_WEB, "DefaultRule_AllowVnetOutBound", e)
                    recs[1].add(ACL_APP, "UserRule_allow-web-to-api", b.replace(",O,", ",I,"))
                    recs[1].add(ACL_APP, "UserRule_allow-web-to-api", e.replace(",O,", ",I,"))
                    truth._note(truth.stopped, (me, API, "8080", "6"), t0)
                    count += 2
                if w == one_way:  # to the partner: answered, then one way
                    ts = base + rnd.randrange(0, 35_000)  # B and E in this minute
                    sport = str(rnd.randrange(32768, 61000))
                    gone = mi >= p.one_way_from
                    back = "0,0" if gone else f"{rnd.randrange(5, 20)},{rnd.randrange(3000, 9000)}"
                    rec.add(ACL_WEB, "DefaultRule_AllowInternetOutBound",
                            f"{ts},{me},{PARTNER},{sport},443,6,O,B,NX,0,0,0,0")
                    rec.add(ACL_WEB, "DefaultRule_AllowInternetOutBound",
                            f"{ts + 21000},{me},{PARTNER},{sport},443,6,O,E,NX,6,360,{back}")
                    if gone:
                        truth._note(truth.one_way, (me, PARTNER, "443", "6"), t0)
                    count += 2
                if mi % 5 == 0:  # the long-lived SQL connection reports every 5 minutes
                    rec.add(ACL_WEB, "DefaultRule_AllowVnetOutBound",
                            f"{base + 1000},{me},{SQL},{40000 + w},1433,6,O,C,NX,"
                            f"{rnd.randrange(100, 900)},{rnd.randrange(10**5, 10**6)},"
                            f"{rnd.randrange(100, 900)},{rnd.randrange(10**5, 10**7)}")
                    count += 1
                while count < n_target:
                    ts = base + rnd.randrange(0, 59_000)
                    kind = rnd.random()
                    if kind < 0.45:  # a scanner, denied by the subnet NSG
                        src = (f"{rnd.choice((45, 80, 91, 185, 193, 194))}.{rnd.randrange(256)}."
                               f"{rnd.randrange(256)}.{rnd.randrange(1, 255)}")
                        rec.add(ACL_WEB, "DefaultRule_DenyAllInBound",
                                f"{ts},{src},{me},{rnd.randrange(1024, 65535)},"
                                f"{rnd.choice((22, 23, 445, 3389, 8080, 5900, 1433))},6,I,D,NX,"
                                "0,0,0,0")
                        count += 1
                    elif kind < 0.85:  # HTTPS to the Internet (APIs, CDNs: a few popular)
                        dst = internet[min(int(rnd.expovariate(1 / 300)), len(internet) - 1)]
                        sport = rnd.randrange(32768, 61000)
                        rule = "DefaultRule_AllowInternetOutBound"
                        rec.add(ACL_WEB, rule, f"{ts},{me},{dst},{sport},443,6,O,B,NX,0,0,0,0")
                        rec.add(ACL_WEB, rule,
                                f"{ts + rnd.randrange(50, 900)},{me},{dst},{sport},443,6,O,E,"
                                f"NX,{rnd.randrange(8, 60)},{rnd.randrange(900, 30000)},"
                                f"{rnd.randrange(8, 90)},{rnd.randrange(3000, 120000)}")
                        count += 2
                    elif kind < 0.95:  # the load balancer's probe
                        sport = rnd.randrange(1024, 65535)
                        rule = "DefaultRule_AllowAzureLoadBalancerInBound"
                        rec.add(ACL_WEB, rule, f"{ts},{PROBE},{me},{sport},80,6,I,B,NX,0,0,0,0")
                        rec.add(ACL_WEB, rule, f"{ts + 2},{PROBE},{me},{sport},80,6,I,E,NX,"
                                               "3,180,2,120")
                        count += 2
                    else:  # DNS
                        sport = rnd.randrange(32768, 61000)
                        rule = "DefaultRule_AllowVnetOutBound"
                        rec.add(ACL_WEB, rule, f"{ts},{me},{DNS},{sport},53,17,O,B,NX,0,0,0,0")
                        rec.add(ACL_WEB, rule, f"{ts + 30000},{me},{DNS},{sport},53,17,O,E,"
                                               "NX,1,74,1,90")
                        count += 2
                total_tuples += count
            record_time = t0 + timedelta(seconds=59, microseconds=rnd.randrange(0, 900_000))
            for i, rec in recs.items():
                if rec.groups:
                    per_nic[i].append(rec.record(record_time, mac_of(i)))
                    if i < 2:
                        total_tuples += sum(len(v) for g in rec.groups.values()
                                            for v in g.values())
        for i, records in per_nic.items():
            if not records:
                continue
            path = os.path.join(out_dir, "blobs", *blob_name(mac_of(i), hour_start).split("/"))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            body = '{"records":[' + ",".join(json.dumps(r, separators=(",", ":"))
                                             for r in records) + "]}"
            with open(path, "w", encoding="utf-8") as fh:
                fh.write(body)
            files.append(path)
            total_bytes += len(body)
    events = _events(p, ip_of(stopper))
    with open(os.path.join(out_dir, "events.json"), "w", encoding="utf-8") as fh:
        json.dump(events, fh, indent=1)
    return {
        "files": files, "bytes": total_bytes, "tuples": total_tuples, "minutes": minutes,
        "denied": list(truth.denied.values()), "one_way": list(truth.one_way.values()),
        "stopped": list(truth.stopped.values()), "events": events,
        "deny_rule": DENY_RULE, "deny_acl": ACL_DATA,
    }


def _event(at: datetime, operation: str, resource: str, caller: str) -> dict[str, Any]:
    rid = f"/subscriptions/{SUB}/resourceGroups/rg-prod-net/providers/{resource}"
    return {"caller": caller, "eventTimestamp": at.isoformat().replace("+00:00", "Z"),
            "operationName": {"value": operation, "localizedValue": operation},
            "resourceId": rid, "status": {"value": "Succeeded", "localizedValue": "Succeeded"},
            "category": {"value": "Administrative", "localizedValue": "Administrative"}}


def _events(p: Plan, stopper_ip: str) -> list[dict[str, Any]]:
    rules = "Microsoft.Network/networkSecurityGroups/securityRules"
    m = p.start
    return [
        _event(m + timedelta(minutes=p.deny_from - 1, seconds=50), f"{rules}/write",
               "Microsoft.Network/networkSecurityGroups/nsg-data/securityRules/"
               "deny-web-to-redis", "alice@contoso.com"),
        _event(m + timedelta(minutes=p.deny_until - 1, seconds=40), f"{rules}/delete",
               "Microsoft.Network/networkSecurityGroups/nsg-data/securityRules/"
               "deny-web-to-redis", "bob@contoso.com"),
        _event(m + timedelta(minutes=p.stop_at, seconds=5),
               "Microsoft.Network/routeTables/routes/write",
               "Microsoft.Network/routeTables/rt-web/routes/to-api", "ci-deploy@contoso.com"),
        _event(m + timedelta(minutes=30), "Microsoft.Compute/virtualMachines/write",
               "Microsoft.Compute/virtualMachines/api-vm-02", "ci-deploy@contoso.com"),
    ]
