"""VNet flow logs (version 4) as the lab writes them: records, tuples and the hourly blobs.

One blob per VM NIC in the flow log's scope (private endpoint NICs log nothing *(lab)*) and
hour with traffic since ``now - since``, named as the "Read flow logs" script reads them. Each
minute with flows is one record; per ``traffic`` flow and minute one representative connection
is logged with the ports a capture shows *(lab)*: B (begin, counts 0) and E (end, counts since
B, IP headers included) when allowed, D (counts 0) when denied. An allowed flow appears under
each NSG it crossed at that NIC, a denied one under the denying NSG, ``aclID`` the NSG's
``resourceGuid`` and ``rule`` ``DefaultRule_x`` / ``UserRule_x`` *(lab)*; without NSGs both are
``unspecified`` *(lab)*. Probes from 168.63.129.16 to pool VMs are logged too.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from ipaddress import IPv4Address
from typing import Any

from lab.model import Scenario, Vm, stable_guid
from lab.model_v2 import FlowLog, LbProbe
from lab.network import lb
from lab.network.nsg import Decision, Packet, flow_decisions
from lab.timeline import MINUTE, Timeline, floor_minute
from lab.traffic import connection, probe_connection
from lab.traffic_dns import DNS_PORT
from lab.wire import Seen, seed

CONTAINER = "insights-logs-flowlogflowevent"
UNSPECIFIED = "unspecified"


@dataclass(frozen=True)
class Blob:
    name: str
    content: bytes
    last_modified: datetime


@dataclass(frozen=True)
class Tuple:
    """One flow tuple at one NIC, with where it is filed (NSG guid, rule)."""

    acl: str
    rule: str
    text: str


def scope_vms(s: Scenario, fl: FlowLog) -> list[Vm]:
    """The VMs whose NICs the flow log covers (a VNet, a subnet or one VM)."""
    if "/" in fl.target:
        vnet, _, subnet = fl.target.partition("/")
        return [v for v in s.vms if v.vnet == vnet and v.subnet == subnet]
    if s.vnet(fl.target) is not None:
        return [v for v in s.vms if v.vnet == fl.target]
    return [v for v in s.vms if v.name == fl.target]


def flow_log_resource_id(s: Scenario, fl: FlowLog) -> str:
    return s.flow_log_id(fl).upper()


def blob_name(s: Scenario, fl: FlowLog, hour: datetime, mac: str) -> str:
    prefix = "flowLogResourceID=" + (f"/{s.subscription}_NETWORKWATCHERRG/NETWORKWATCHER_"
                                     f"{s.location}_{fl.name}").upper()
    return (f"{prefix}/y={hour:%Y}/m={hour:%m}/d={hour:%d}/h={hour:%H}/m=00/"
            f"macAddress={mac}/PT1H.json")


def _rule_name(d: Decision) -> str:
    return ("DefaultRule_" if d.default else "UserRule_") + d.rule.name


def _ms(ts_ns: int) -> int:
    return ts_ns // 1_000_000


def _counts(seen: list[Seen], vm: str, forward: tuple[IPv4Address, int]) -> tuple[int, ...]:
    """Packets and bytes each way at ``vm``: (sent, bytes sent, received, bytes received),
    "sent" meaning the flow's initiator towards the responder."""
    out = [0, 0, 0, 0]
    for p in seen:
        if p.vm != vm:
            continue
        src = (IPv4Address(p.ip[12:16]), int.from_bytes(p.ip[20:22], "big"))
        i = 0 if src == forward else 2
        out[i] += 1
        out[i + 1] += int.from_bytes(p.ip[2:4], "big")
    return tuple(out)


def _tuples_at(s: Scenario, vm: Vm, direction: str, decisions: list[Decision], pkt: Packet,
               seen: list[Seen], proto: int, fallback_ms: int) -> list[Tuple]:
    """The tuples one NIC writes for one connection: D under the denying NSG, or B and E under
    each NSG crossed (``unspecified`` without NSGs)."""
    here = [p for p in seen if p.vm == vm.name]
    first = _ms(here[0].ts_ns) if here else fallback_ms
    last = _ms(here[-1].ts_ns) if here else fallback_ms
    base = f"{pkt.src},{pkt.dst},{pkt.src_port or 0},{pkt.dst_port or 0},{proto},{direction}"
    if decisions and not decisions[-1].allowed:
        d = decisions[-1]
        return [Tuple(stable_guid(s.nsg_id(d.nsg)), _rule_name(d),
                      f"{first},{base},D,NX,0,0,0,0")]
    sent = _counts(seen, vm.name, (pkt.src, pkt.src_port or 0))
    begin = f"{first},{base},B,NX,0,0,0,0"
    end = f"{last},{base},E,NX,{sent[0]},{sent[1]},{sent[2]},{sent[3]}"
    if not decisions:
        return [Tuple(UNSPECIFIED, UNSPECIFIED, begin), Tuple(UNSPECIFIED, UNSPECIFIED, end)]
    out = []
    for d in decisions:
        out += [Tuple(stable_guid(s.nsg_id(d.nsg)), _rule_name(d), begin),
                Tuple(stable_guid(s.nsg_id(d.nsg)), _rule_name(d), end)]
    return out


class FlowLogWriter:
    """Builds one flow log's blobs from the timeline (cached per flow log)."""

    def __init__(self, timeline: Timeline) -> None:
        self.timeline = timeline

    def records(self, fl: FlowLog) -> dict[str, list[tuple[datetime, dict[str, Any]]]]:
        """MAC -> [(minute, record)], for the minutes since logging began."""
        tl, s = self.timeline, self.timeline.scenario
        vms = {v.name: v for v in scope_vms(s, fl)}
        start = s.now - timedelta(seconds=fl.since_seconds)
        out: dict[str, list[tuple[datetime, dict[str, Any]]]] = defaultdict(list)
        for minute in tl.minutes(start, s.now):
            per_vm: dict[str, list[Tuple]] = defaultdict(list)
            estate = tl.estate_at(minute)
            snap = estate.scenario
            for index, flow in enumerate(snap.traffic):
                if tl.flowing(s.traffic[index], minute) and flow.port != DNS_PORT:
                    self._flow(snap, estate, index, minute, vms, per_vm)
            self._probes(snap, minute, vms, per_vm)
            for name, tuples in per_vm.items():
                vm = vms[name]
                mac = s.mac_address(s.nic_id(vm), vm.name).replace("-", "")
                out[mac].append((minute, self._record(s, fl, vm, mac, minute, tuples)))
        return out

    def _flow(self, s: Scenario, estate: Any, index: int, minute: datetime,
              vms: dict[str, Vm], per_vm: dict[str, list[Tuple]]) -> None:
        k = int(minute.timestamp() // 60) % 60
        conv = connection(s, estate, index, k)
        if conv is None or conv.flow_wire is None:
            return
        start = minute.timestamp() + 5 + conv.rng.random() * 40
        conv.run(start, *conv.payload)
        path, fallback = conv.forward, int(start * 1000)
        for j, hop in enumerate(path.hops):
            vm = vms.get(hop)
            if vm is None:
                continue
            view = path.views[j] if j < len(path.views) else None
            pkt = (Packet("tcp", view.src, view.src_port, view.dst, view.dst_port) if view
                   else Packet("tcp", conv.client.ip, conv.client.port, conv.server.ip,
                               conv.server.port))
            if j == 0:
                directions = [("O", "Outbound")]
            elif j == len(path.hops) - 1 and path.delivered:
                directions = [("I", "Inbound")]
            else:  # a forwarding VM: the packet arrives, then leaves
                directions = [("I", "Inbound"), ("O", "Outbound")]
            for letter, direction in directions:
                decisions = flow_decisions(s, vm, direction, pkt)
                per_vm[hop] += _tuples_at(s, vm, letter, decisions, pkt, conv.seen, 6, fallback)
                if decisions and not decisions[-1].allowed:
                    break
        model = conv.flow_wire.conn.forward
        victim = vms.get(model.dropped_at or "")
        if (model.drop_kind == "nsg" and victim is not None and victim.name not in path.hops
                and model.last is not None):  # denied on arrival: only the D tuple there
            last = model.last
            pkt = Packet("tcp", last.src, last.src_port, last.dst, last.dst_port)
            decisions = flow_decisions(s, victim, "Inbound", pkt)
            per_vm[victim.name] += _tuples_at(s, victim, "I", decisions, pkt, conv.seen, 6,
                                              fallback)

    def _probes(self, s: Scenario, minute: datetime, vms: dict[str, Vm],
                per_vm: dict[str, list[Tuple]]) -> None:
        for balancer in s.load_balancers:
            probes: dict[str, LbProbe] = {}
            for rule in balancer.rules:
                probe = balancer.probe(rule.probe) if rule.probe else None
                pool = balancer.pool(rule.pool)
                if probe is None or pool is None:
                    continue
                for name in pool.vms:
                    if name in vms:
                        probes[f"{probe.name}@{balancer.name}@{name}"] = probe
            for key, probe in sorted(probes.items()):
                vm = vms[key.rsplit("@", 1)[1]]
                if vm.power_state != "running":
                    continue  # a stopped VM is not probed
                pkt = lb.probe_packet(vm, probe)
                k = int(minute.timestamp() // 60)
                conv = probe_connection(s, vm, probe, key, k)
                start = minute.timestamp() + 1 + (seed(key, k) % 50000) / 1000
                seen: list[Seen] = []
                if conv is not None:
                    conv.run(start, *conv.payload)
                    seen = conv.seen
                    first = next((p for p in seen if p.vm == vm.name), None)
                    if first is not None:
                        pkt = Packet("tcp", IPv4Address(first.ip[12:16]),
                                     int.from_bytes(first.ip[20:22], "big"), vm.ip, probe.port)
                decisions = lb.probe_vm(s, probe, vm).decisions
                per_vm[vm.name] += _tuples_at(s, vm, "I", list(decisions), pkt, seen, 6,
                                              int(start * 1000))

    def _record(self, s: Scenario, fl: FlowLog, vm: Vm, mac: str, minute: datetime,
                tuples: list[Tuple]) -> dict[str, Any]:
        flows: dict[str, dict[str, list[str]]] = {}
        for t in sorted(tuples, key=lambda x: int(x.text.split(",", 1)[0])):
            flows.setdefault(t.acl, {}).setdefault(t.rule, []).append(t.text)
        stamp = (minute + MINUTE).astimezone(UTC)
        return {
            "time": f"{stamp:%Y-%m-%dT%H:%M:%S}.0000000Z",
            "flowLogVersion": 4,
            "flowLogGUID": stable_guid(s.flow_log_id(fl)),
            "macAddress": mac,
            "category": "FlowLogFlowEvent",
            "flowLogResourceID": flow_log_resource_id(s, fl),
            "targetResourceID": _target_id(s, fl),
            "operationName": "FlowLogFlowEvent",
            "flowRecords": {"flows": [
                {"aclID": acl, "flowGroups": [{"rule": rule, "flowTuples": texts}
                                              for rule, texts in groups.items()]}
                for acl, groups in flows.items()]},
        }

    def blobs(self, fl: FlowLog) -> list[Blob]:
        """The flow log's blobs, oldest first."""
        s = self.timeline.scenario
        out: list[Blob] = []
        for mac, records in self.records(fl).items():
            hours: dict[datetime, list[tuple[datetime, dict[str, Any]]]] = defaultdict(list)
            for minute, record in records:
                hours[minute.replace(minute=0)].append((minute, record))
            for hour, items in hours.items():
                body = json.dumps({"records": [r for _, r in items]}, separators=(",", ":"))
                out.append(Blob(blob_name(s, fl, hour, mac), body.encode(),
                                floor_minute(items[-1][0]) + MINUTE))
        out.sort(key=lambda b: (b.last_modified, b.name))
        return out


def _target_id(s: Scenario, fl: FlowLog) -> str:
    if "/" in fl.target:
        vnet, _, subnet = fl.target.partition("/")
        return s.subnet_id(vnet, subnet)
    if s.vnet(fl.target) is not None:
        return s.vnet_id(fl.target)
    return s.nic_id(fl.target)
