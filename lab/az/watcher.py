"""Network Watcher and the NIC's effective views, answered by the estate's network model.

`az network watcher test-ip-flow|show-next-hop|test-connectivity|show-topology` and `az network
nic show-effective-route-table|list-effective-nsg`, with az's syntax (required options, enum
values), Azure's result shapes and az's table transformers. Azure's preconditions hold:
effective views need a running VM; test-ip-flow and show-next-hop need an allocated one;
test-connectivity needs the source running with the Network Watcher extension.
"""

from __future__ import annotations

from collections import OrderedDict
from ipaddress import IPv4Address
from typing import Any

from lab.az.args import RG, RG_OPTIONAL, Command, Parsed, opt
from lab.az.catalog import Catalog, guid, parse_id
from lab.az.errors import cloud_error, usage_error
from lab.model import Vm
from lab.network import Connection, EffectiveNsg, NotModelled
from lab.probes.common import as_ip, loss_rate

Json = dict[str, Any]
ID_RG_NAME = (("resource_group", "resource_group"), ("name", "name"))


# -- preconditions -------------------------------------------------------------------------


def _need_running_for_nic(cat: Catalog, vm: Vm) -> None:
    if vm.power_state != "running":
        raise cloud_error("NetworkInterfaceNotAttachedToRunningVm",
                          f"Network interface {cat.scenario.nic_id(vm)} is not attached to a "
                          "running virtual machine. Effective routes and security rules are "
                          "available only for a running virtual machine.", 1)


def _need_allocated(cat: Catalog, vm: Vm) -> None:
    if vm.power_state == "deallocated":
        raise cloud_error("VmNotAllocated", f"Virtual machine {cat.scenario.vm_id(vm)} is "
                          "deallocated. The operation requires an allocated virtual machine.")


def _need_agent(cat: Catalog, vm: Vm) -> None:
    if vm.power_state != "running":
        raise cloud_error("VmNotRunning", f"Virtual machine {cat.scenario.vm_id(vm)} is not "
                          "running. The operation requires a running virtual machine.")
    if not vm.network_watcher_extension:
        raise cloud_error("AzureVMAgentExtensionNotInstalled",
                          f"Network Watcher Agent extension (NetworkWatcherAgentLinux) is not "
                          f"installed on virtual machine {cat.scenario.vm_id(vm)}.")


# -- effective routes and NSGs -------------------------------------------------------------


def _route_table(result: Any) -> Any:
    return [OrderedDict([
        ("Source", r["source"]), ("State", r["state"]),
        ("Address Prefix", " ".join(r.get("addressPrefix", []))),
        ("Next Hop Type", r["nextHopType"]),
        ("Next Hop IP", " ".join(r.get("nextHopIpAddress", []))),
    ]) for r in result["value"]]


def effective_routes(cat: Catalog, a: Parsed) -> Any:
    vm = cat.nic(a.require("resource_group"), a.require("name"))
    _need_running_for_nic(cat, vm)
    rows: list[Json] = []
    for r in cat.estate.effective_routes(vm.name):
        row: Json = {"addressPrefix": list(r.prefixes), "disableBgpRoutePropagation": False,
                     "hasBgpOverride": False, "nextHopIpAddress": list(r.next_hop_ips),
                     "nextHopType": r.next_hop_type, "source": r.source, "state": r.state}
        if r.name:
            row["name"] = r.name
        rows.append(row)
    return {"nextLink": None, "value": rows}


def _ranges(ports: tuple[str, ...]) -> tuple[str, list[str]]:
    return (ports[0] if ports else "0-65535"), list(ports)


def _effective_nsg_json(item: EffectiveNsg) -> Json:
    rules = []
    for r in item.rules:
        sport, sports = _ranges(r.source_ports)
        dport, dports = _ranges(r.destination_ports)
        rules.append({
            "access": r.access, "destinationAddressPrefix": r.destination,
            "destinationAddressPrefixes": [r.destination], "destinationPortRange": dport,
            "destinationPortRanges": dports, "direction": r.direction,
            "expandedDestinationAddressPrefix": list(r.expanded_destination),
            "expandedSourceAddressPrefix": list(r.expanded_source), "name": r.name,
            "priority": r.priority, "protocol": r.protocol, "sourceAddressPrefix": r.source,
            "sourceAddressPrefixes": [r.source], "sourcePortRange": sport,
            "sourcePortRanges": sports,
        })
    key = "subnet" if item.association == "subnet" else "networkInterface"
    return {"association": {key: {"id": item.association_id}},
            "effectiveSecurityRules": rules, "networkSecurityGroup": {"id": item.nsg_id},
            "tagMap": {k: list(v) for k, v in item.tag_map.items()}}


def _name_of(assoc: Json, key: str) -> str:
    ref = assoc.get(key)
    return parse_id(ref["id"]).get("name", "-") if isinstance(ref, dict) else "-"


def _nsg_table(result: Any) -> Any:
    rows = []
    for item in result["value"]:
        assoc = item["association"]
        names = (_name_of(assoc, "networkInterface"), _name_of(assoc, "subnet"),
                 parse_id(item["networkSecurityGroup"]["id"]).get("name", "-"))
        if assoc.get("subnet"):
            subnet_id = assoc["subnet"]["id"]
            names = (names[0], subnet_id.rstrip("/").split("/")[-1], names[2])
        for n, rule in enumerate(item["effectiveSecurityRules"]):
            shown = names if n == 0 else (" ", " ", " ")
            rows.append(OrderedDict([
                ("NIC", shown[0]), ("Subnet", shown[1]), ("NSG", shown[2]),
                ("Rule Name", rule.get("name", "")), ("Protocol", rule.get("protocol", "")),
                ("Direction", rule.get("direction", "")), ("Access", rule.get("access", "")),
            ]))
    return rows


def effective_nsgs(cat: Catalog, a: Parsed) -> Any:
    vm = cat.nic(a.require("resource_group"), a.require("name"))
    _need_running_for_nic(cat, vm)
    return {"value": [_effective_nsg_json(i) for i in cat.estate.effective_nsgs(vm.name)]}


# -- test-ip-flow and show-next-hop --------------------------------------------------------


def _ip_port(value: str, option: str, allow_star: bool) -> tuple[IPv4Address, int]:
    host, sep, port = value.rpartition(":")
    ip = as_ip(host) if sep else None
    if ip is None or not (port.isdigit() or (allow_star and port == "*")):
        raise usage_error(f"usage error: {option} must be IP:PORT, e.g. 10.0.0.4:443")
    return ip, (0 if port == "*" else int(port))


def test_ip_flow(cat: Catalog, a: Parsed) -> Any:
    vm = cat.vm_ref(a.require("vm"), a.text("resource_group"))
    direction, protocol = a.require("direction"), a.require("protocol")
    outbound = direction == "Outbound"
    local_ip, local_port = _ip_port(a.require("local"), "--local", outbound)
    remote_ip, remote_port = _ip_port(a.require("remote"), "--remote", not outbound)
    _need_allocated(cat, vm)
    if local_ip != vm.ip:
        raise cloud_error("InvalidLocalIpAddress", f"Local IP address {local_ip} is not assigned "
                          f"to any network interface of virtual machine {vm.name}.")
    verdict = cat.estate.ip_flow_verify(vm.name, direction, protocol, local_ip, local_port,
                                        remote_ip, remote_port)
    return {"access": verdict.access, "ruleName": verdict.rule_name}


def show_next_hop(cat: Catalog, a: Parsed) -> Any:
    vm = cat.vm_ref(a.require("vm"), a.text("resource_group"))
    src, dst = as_ip(a.require("source_ip")), as_ip(a.require("dest_ip"))
    if src is None or dst is None:
        bad = a.require("source_ip") if src is None else a.require("dest_ip")
        raise cloud_error("InvalidRequestFormat", f"'{bad}' is not a valid IPv4 address.")
    _need_allocated(cat, vm)
    if src != vm.ip:
        raise cloud_error("InvalidSourceIpAddress", f"Source IP address {src} is not assigned "
                          f"to any network interface of virtual machine {vm.name}.")
    hop = cat.estate.next_hop(vm.name, src, dst)
    return {"nextHopIpAddress": hop.next_hop_ip, "nextHopType": hop.next_hop_type,
            "routeTableId": hop.route_table_id}


COMMANDS_BASE: list[Command] = [
    Command(("network", "nic", "show-effective-route-table"), (RG, opt("--name", "-n",
            dest="name", required=True)), effective_routes, _route_table, ID_RG_NAME),
    Command(("network", "nic", "list-effective-nsg"), (RG, opt("--name", "-n", dest="name",
            required=True)), effective_nsgs, _nsg_table, ID_RG_NAME),
    Command(("network", "watcher", "test-ip-flow"), (
        opt("--vm", dest="vm", required=True),
        opt("--direction", dest="direction", required=True, choices=("Inbound", "Outbound")),
        opt("--protocol", dest="protocol", required=True, choices=("TCP", "UDP")),
        opt("--local", dest="local", required=True), opt("--remote", dest="remote", required=True),
        RG_OPTIONAL, opt("--nic", dest="nic"), opt("--location", "-l", dest="location")),
        test_ip_flow),
    Command(("network", "watcher", "show-next-hop"), (
        opt("--vm", dest="vm", required=True), opt("--source-ip", dest="source_ip", required=True),
        opt("--dest-ip", dest="dest_ip", required=True), RG_OPTIONAL, opt("--nic", dest="nic"),
        opt("--location", "-l", dest="location")), show_next_hop),
]


# -- test-connectivity ---------------------------------------------------------------------


def _issue(kind: str, origin: str, context: list[tuple[str, str]]) -> Json:
    return {"context": [{"key": k, "value": val} for k, val in context], "origin": origin,
            "severity": "Error", "type": kind}


def _drop_issue(conn: Connection, src: Vm) -> Json | None:
    fwd = conn.forward
    if fwd.delivered or fwd.drop_kind is None:
        return None
    origin = "Outbound" if fwd.dropped_at in (None, src.name) else "Inbound"
    reason = fwd.reason or ""
    if fwd.drop_kind == "nsg":
        rule = reason.rsplit("/", 1)[-1]
        prefix = "DefaultRule_" if "defaultSecurityRules" in reason else "UserRule_"
        return _issue("NetworkSecurityRule", origin, [("RuleName", prefix + rule)])
    if fwd.drop_kind in ("route_none", "loop"):
        return _issue("UserDefinedRoute", "Outbound", [("RouteType", reason or "None")])
    if fwd.drop_kind == "vm_down":
        return _issue("Platform", "Inbound", [("Reason", "VM is not running")])
    return _issue("Platform", origin, [])


def _hop(cat: Catalog, name_or_ip: str, kind: str) -> Json:
    """One hop; the source names its VM, later hops the NIC IP configuration they reach."""
    s = cat.scenario
    vm = s.vm(name_or_ip)
    address, resource = (str(vm.ip) if vm else name_or_ip), None
    if vm is None and s.format >= 2:  # format 2's other hops: a firewall, a private endpoint
        fw, pe = s.firewall(name_or_ip), s.pe(name_or_ip)
        if fw is not None:
            address = str(fw.private_ip)
            resource = (f"{s.firewall_id(fw)}/azureFirewallIpConfigurations/"
                        f"{fw.public_ips[0].name}")
        elif pe is not None:
            address = str(pe.ip)
            resource = f"{s.pe_nic_id(pe)}/ipConfigurations/{s.pe_ip_config_name(pe)}"
    hop: Json = {"address": address, "id": guid("hop", name_or_ip),
                 "issues": [], "links": [], "nextHopIds": [], "previousHopIds": [],
                 "previousLinks": [], "type": kind}
    if vm is not None:
        hop["resourceId"] = (s.vm_id(vm) if kind == "Source" else
                             f"{s.nic_id(vm)}/ipConfigurations/{s.ip_config_name(vm)}")
    elif resource is not None:
        hop["resourceId"] = resource
    return hop


def test_connectivity(cat: Catalog, a: Parsed) -> Any:
    src = cat.vm_ref(a.require("source_resource"), a.text("resource_group"), "--source-resource")
    dest_resource, dest_address = a.text("dest_resource"), a.text("dest_address")
    if not dest_resource and not dest_address:
        raise usage_error("usage error: --dest-resource ID | --dest-address ADDRESS")
    protocol = a.text("protocol") or "Tcp"
    if protocol in ("Http", "Https"):
        raise NotModelled(f"test-connectivity --protocol {protocol} (the lab checks Tcp and "
                          "Icmp)")
    port_text = a.text("dest_port")
    if protocol == "Tcp" and not port_text:
        raise usage_error("usage error: --dest-port is required when --protocol is Tcp")
    _need_agent(cat, src)
    if dest_resource:
        dst_vm = cat.vm_ref(dest_resource, a.text("resource_group"), "--dest-resource")
        dst_ip, label = dst_vm.ip, dst_vm.name
    else:
        assert dest_address is not None
        ip = as_ip(dest_address)
        if ip is None:
            answer = cat.estate.resolve(dest_address, src.name)
            if answer.rcode != "NOERROR" or not answer.addresses:
                issue = _issue("DnsResolution", "Local", [])
                hop = {**_hop(cat, src.name, "Source"), "issues": [issue]}
                return _result("Unreachable", [hop], 0.0, 66, 66)
            ip = answer.addresses[0]
        dst_ip, label = ip, dest_address
    name = dest_address if dest_address and as_ip(dest_address) is None else None
    conn = (cat.estate.ping(src.name, dst_ip) if protocol == "Icmp" else
            cat.estate.connect(src.name, dst_ip, int(port_text or "0"), "tcp", fqdn=name))
    return _connectivity(cat, src, dst_ip, label, conn)


def _hops_v2(cat: Catalog, names: list[str], fwd: Any) -> list[Json]:
    """Format 2's hops: forwarding VMs and firewalls are VirtualAppliance, the end VnetLocal
    (a VM, a load balancer's backend, a private endpoint) or Internet; a NAT gateway is part
    of the platform, not a hop."""
    s = cat.scenario
    hops = []
    last = len(names) - 1
    for n, name in enumerate(names):
        if s.nat_gateway(name) is not None:
            continue
        if n == 0:
            kind = "Source"
        elif s.firewall(name) is not None or (n < last and s.vm(name) is not None):
            kind = "VirtualAppliance"
        elif s.vm(name) is None and s.pe(name) is None:
            kind = "Internet"
        else:
            kind = "VnetLocal"
        hops.append(_hop(cat, name, kind))
    if not fwd.delivered and fwd.drop_kind == "no_outbound":
        hops[-1]["issues"].append(_issue("Platform", "Outbound", [
            ("Reason", "No outbound connectivity: no NAT gateway or firewall")]))
    return hops


def _connectivity(cat: Catalog, src: Vm, dst_ip: IPv4Address, label: str,
                  conn: Connection) -> Json:
    names = list(conn.forward.hops) or [src.name]
    if conn.forward.dropped_at and conn.forward.dropped_at not in names:
        names.append(conn.forward.dropped_at)
    fwd = conn.forward
    if cat.scenario.format >= 2:
        hops = _hops_v2(cat, names, fwd)
    else:
        hops = []
        for n, name in enumerate(names):
            vm = cat.scenario.vm(name)
            kind = ("Source" if n == 0 else
                    "VirtualAppliance" if vm and vm.ip != dst_ip else "VnetLocal")
            hops.append(_hop(cat, name, kind))
    if cat.scenario.format < 2 and cat.scenario.vm_by_ip(dst_ip) is None and (
            fwd.delivered or fwd.drop_kind == "no_host"):
        internet = fwd.delivered or "Internet" in (fwd.reason or "")
        hops.append(_hop(cat, str(dst_ip), "Internet" if internet else "VnetLocal"))
    issue = None if fwd.drop_kind == "no_host" else _drop_issue(conn, src)
    if issue is not None:
        hops[-1]["issues"].append(issue)
    for here, nxt in zip(hops, hops[1:], strict=False):
        here["nextHopIds"] = [nxt["id"]]
        nxt["previousHopIds"] = [here["id"]]
    ok = conn.outcome == "connected"
    failed = round(66 * loss_rate(conn.faults)) if ok else 66
    return _result("Reachable" if ok else "Unreachable", hops, conn.rtt_ms, 66, failed)


def _result(status: str, hops: list[Json], rtt: float, sent: int, failed: int) -> Json:
    body: Json = {"connectionStatus": status, "hops": hops, "probesFailed": failed,
                  "probesSent": sent}
    if status == "Reachable":
        body.update({"avgLatencyInMs": max(1, round(rtt)),
                     "maxLatencyInMs": max(1, round(rtt * 1.6)),
                     "minLatencyInMs": max(1, round(rtt * 0.7))})
    return body


# -- show-topology -------------------------------------------------------------------------


def _assoc(kind: str, rid: str) -> Json:
    return {"associationType": kind, "name": rid.rstrip("/").split("/")[-1], "resourceId": rid}


def show_topology(cat: Catalog, a: Parsed) -> Any:
    s = cat.scenario
    group = a.text("resource_group")
    vnet_ref, subnet_ref = a.text("vnet"), a.text("subnet")
    if not (group or vnet_ref or subnet_ref):
        raise usage_error("usage error: --resource-group NAME | --vnet ID | --subnet ID")
    if vnet_ref or subnet_ref:
        parts = parse_id(vnet_ref or subnet_ref or "")
        vnet = cat.vnet(parts.get("resource_group", group or ""), parts.get("name", vnet_ref or ""))
        group = vnet.resource_group
    assert group is not None
    rg = cat.rg(group)
    out: list[Json] = []

    def add(rid: str, name: str, assocs: list[Json]) -> None:
        out.append({"associations": assocs, "id": rid, "location": s.location, "name": name})

    for v in cat.in_rg(s.vnets, rg):
        add(s.vnet_id(v.name), v.name, [_assoc("Contains", s.subnet_id(v.name, sn.name))
                                        for sn in v.subnets])
        for sn in v.subnets:
            assocs = []
            if sn.nsg:
                assocs.append(_assoc("Associated", s.nsg_id(sn.nsg)))
            if sn.route_table:
                assocs.append(_assoc("Associated", s.route_table_id(sn.route_table)))
            add(s.subnet_id(v.name, sn.name), sn.name, assocs)
    for vm in cat.in_rg(s.vms, rg):
        add(s.vm_id(vm), vm.name, [_assoc("Contains", s.nic_id(vm))])
        assocs = [_assoc("Associated", s.vm_id(vm)),
                  _assoc("Associated", s.subnet_id(vm.vnet, vm.subnet))]
        if vm.nic_nsg:
            assocs.append(_assoc("Associated", s.nsg_id(vm.nic_nsg)))
        add(s.nic_id(vm), s.nic_name(vm), assocs)
    for nsg in cat.in_rg(s.nsgs, rg):
        add(s.nsg_id(nsg.name), nsg.name, [])
    for rt in cat.in_rg(s.route_tables, rg):
        add(s.route_table_id(rt.name), rt.name, [])
    stamp = s.now.isoformat()
    return {"createdDateTime": stamp, "id": guid("topology", rg), "lastModified": stamp,
            "resources": out}


COMMANDS: list[Command] = [
    *COMMANDS_BASE,
    Command(("network", "watcher", "test-connectivity"), (
        opt("--source-resource", dest="source_resource", required=True), RG_OPTIONAL,
        opt("--source-port", dest="source_port"), opt("--dest-resource", dest="dest_resource"),
        opt("--dest-address", dest="dest_address"), opt("--dest-port", dest="dest_port"),
        opt("--protocol", dest="protocol", choices=("Tcp", "Http", "Https", "Icmp")),
        opt("--method", dest="method"), opt("--headers", dest="headers", multi=True),
        opt("--valid-status-codes", dest="valid_status_codes", multi=True),
        opt("--preferred-ip-version", dest="ip_version", choices=("IPv4", "IPv6"))),
        test_connectivity),
    Command(("network", "watcher", "show-topology"), (
        RG_OPTIONAL, opt("--vnet", dest="vnet"), opt("--subnet", dest="subnet"),
        opt("--location", "-l", dest="location")), show_topology),
]

