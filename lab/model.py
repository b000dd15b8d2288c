"""A lab scenario (specs/lab-scenario-format.md, formats 1 and 2) as frozen dataclasses.

The dataclasses live here, apart from loading (lab/scenario.py) and validation (lab/validate*.py),
so that both import this module and neither imports the other's caller. Resource ids are derived
here, once, so every answer of the lab names resources the same way. ``Scenario.at(t)`` is the
estate as it stood at ``t`` (format 2's ``active`` windows): point-in-time answers use
``at(now)``; flow logs and metrics walk the minutes.
"""

from __future__ import annotations

import dataclasses
import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from ipaddress import IPv4Address, IPv4Network, ip_address
from pathlib import Path
from typing import Any, TypeVar

from lab.model_v2 import (
    Active,
    Firewall,
    FlowLog,
    LoadBalancer,
    NatGateway,
    PrivateEndpoint,
    PublicIp,
    StorageAccount,
    active_at,
)

SHIPPED_DIR = Path(__file__).resolve().parent / "scenarios"
T = TypeVar("T")


class ScenarioError(Exception):
    """A scenario that cannot be loaded; ``errors`` holds one line per problem."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(self.errors))


@dataclass(frozen=True)
class Subnet:
    name: str
    vnet: str
    prefix: IPv4Network
    nsg: str | None = None
    route_table: str | None = None
    private_endpoint_network_policies: str = "Disabled"  # format 2


@dataclass(frozen=True)
class Peering:
    name: str
    vnet: str
    remote_vnet: str
    state: str  # Initiated | Connected | Disconnected
    allow_forwarded_traffic: bool = False
    use_remote_gateways: bool = False


@dataclass(frozen=True)
class VNet:
    name: str
    resource_group: str
    address_space: tuple[IPv4Network, ...]
    dns_servers: tuple[IPv4Address, ...] = ()
    subnets: tuple[Subnet, ...] = ()
    peerings: tuple[Peering, ...] = ()

    def contains(self, ip: IPv4Address) -> bool:
        return any(ip in p for p in self.address_space)


@dataclass(frozen=True)
class NsgRule:
    """A custom rule, strings as written in the scenario."""

    name: str
    priority: int
    direction: str  # Inbound | Outbound
    access: str  # Allow | Deny
    protocol: str  # Tcp | Udp | Icmp | *
    source: str
    source_ports: str
    destination: str
    destination_ports: str
    active: Active | None = None  # format 2


@dataclass(frozen=True)
class Nsg:
    name: str
    resource_group: str
    rules: tuple[NsgRule, ...] = ()

    def rule(self, name: str) -> NsgRule | None:
        return next((r for r in self.rules if r.name == name), None)


@dataclass(frozen=True)
class Route:
    name: str
    prefix: IPv4Network
    next_hop: str  # VirtualAppliance | VnetLocal | Internet | None
    next_hop_ip: IPv4Address | None = None
    active: Active | None = None  # format 2


@dataclass(frozen=True)
class RouteTable:
    name: str
    resource_group: str
    routes: tuple[Route, ...] = ()

    def route(self, name: str) -> Route | None:
        return next((r for r in self.routes if r.name == name), None)


@dataclass(frozen=True)
class PrivateDnsZone:
    name: str
    resource_group: str
    linked_vnets: tuple[str, ...] = ()
    records: dict[str, IPv4Address] = field(default_factory=dict)
    link_windows: tuple[tuple[str, Active], ...] = ()  # format 2: links with ``active``


@dataclass(frozen=True)
class Vm:
    name: str
    resource_group: str
    vnet: str
    subnet: str
    ip: IPv4Address
    nic_nsg: str | None = None
    power_state: str = "running"  # running | stopped | deallocated
    network_watcher_extension: bool = True
    listens: tuple[int, ...] = ()
    ip_forwarding: bool = False
    mtu: int = 1500


@dataclass(frozen=True)
class Traffic:
    source: str  # `from` in the YAML: a VM name (format 2: or an Internet client's IPv4)
    to: str  # a VM name or an IPv4 address no VM holds
    port: int
    rate: float
    fqdn: str | None = None  # format 2: the name the client asked for
    since_seconds: int | None = None  # format 2: flowing since now - since (None: always)


@dataclass(frozen=True)
class Fault:
    kind: str  # loss | reset | mtu | latency | no_listener | snat_exhaustion
    at: str  # the VM (no_listener: its `vm`); format 2: a firewall or NAT gateway too
    percent: float | None = None
    after_bytes: int | None = None
    mtu: int | None = None
    icmp_blocked: bool | None = None
    ms: float | None = None
    port: int | None = None
    jitter_ms: float | None = None  # format 2
    active: Active | None = None  # format 2


@dataclass(frozen=True)
class ActivityEvent:
    ago_seconds: int
    caller: str
    status: str
    operation: str
    resource: str
    time: datetime


@dataclass(frozen=True)
class Truth:
    category: str
    resources: tuple[str, ...]
    keywords: tuple[str, ...]
    red_herrings: tuple[str, ...]
    fix: str


def stable_guid(*parts: str) -> str:
    """A stable GUID for a derived identifier (resourceGuid, vmId, NIC name suffixes)."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "ghost-lab/" + "/".join(parts)))


def _name(obj: Any) -> str:
    """Accept a resource object or its name, so callers may pass either."""
    return obj if isinstance(obj, str) else str(obj.name)


@dataclass(frozen=True)
class Scenario:
    path: Path | None
    format: int
    name: str
    title: str
    symptom: str
    subscription: str
    location: str
    now: datetime
    vnets: tuple[VNet, ...]
    nsgs: tuple[Nsg, ...]
    route_tables: tuple[RouteTable, ...]
    private_dns_zones: tuple[PrivateDnsZone, ...]
    public_dns: dict[str, IPv4Address]
    vms: tuple[Vm, ...]
    traffic: tuple[Traffic, ...]
    faults: tuple[Fault, ...]
    activity_log: tuple[ActivityEvent, ...]
    vm_facts: dict[str, dict[str, Any]]
    truth: Truth
    replay: str | None = None
    # format 2 (empty in format 1)
    load_balancers: tuple[LoadBalancer, ...] = ()
    private_endpoints: tuple[PrivateEndpoint, ...] = ()
    firewalls: tuple[Firewall, ...] = ()
    nat_gateways: tuple[NatGateway, ...] = ()
    internet_hosts: dict[IPv4Address, tuple[int, ...]] = field(default_factory=dict)
    engineer_ip: IPv4Address | None = None
    storage_accounts: tuple[StorageAccount, ...] = ()
    flow_logs: tuple[FlowLog, ...] = ()

    # -- lookups (None when absent) -------------------------------------------------------

    def vm(self, name: str) -> Vm | None:
        return next((v for v in self.vms if v.name == name), None)

    def vm_by_ip(self, ip: str | IPv4Address) -> Vm | None:
        try:
            addr = ip_address(str(ip))
        except ValueError:
            return None
        return next((v for v in self.vms if v.ip == addr), None)

    def vnet(self, name: str) -> VNet | None:
        return next((v for v in self.vnets if v.name == name), None)

    def subnet(self, vnet: str, name: str) -> Subnet | None:
        net = self.vnet(vnet)
        return next((s for s in net.subnets if s.name == name), None) if net else None

    def subnet_of(self, vm: str | Vm) -> Subnet | None:
        v = self.vm(_name(vm))
        return self.subnet(v.vnet, v.subnet) if v else None

    def nsg(self, name: str) -> Nsg | None:
        return next((n for n in self.nsgs if n.name == name), None)

    def route_table(self, name: str) -> RouteTable | None:
        return next((r for r in self.route_tables if r.name == name), None)

    def zone(self, name: str) -> PrivateDnsZone | None:
        wanted = name.rstrip(".").lower()
        return next((z for z in self.private_dns_zones if z.name.lower() == wanted), None)

    def faults_at(self, vm: str | Vm) -> tuple[Fault, ...]:
        name = _name(vm)
        return tuple(f for f in self.faults if f.at == name)

    def vnet_of_ip(self, ip: IPv4Address) -> VNet | None:
        """The VNet whose address space holds ``ip``."""
        return next((v for v in self.vnets if v.contains(ip)), None)

    # -- format 2 lookups -----------------------------------------------------------------

    def lb(self, name: str) -> LoadBalancer | None:
        return next((x for x in self.load_balancers if x.name == name), None)

    def pe(self, name: str) -> PrivateEndpoint | None:
        return next((x for x in self.private_endpoints if x.name == name), None)

    def firewall(self, name: str) -> Firewall | None:
        return next((x for x in self.firewalls if x.name == name), None)

    def nat_gateway(self, name: str) -> NatGateway | None:
        return next((x for x in self.nat_gateways if x.name == name), None)

    def storage_account(self, name: str) -> StorageAccount | None:
        return next((x for x in self.storage_accounts if x.name == name), None)

    def flow_log(self, name: str) -> FlowLog | None:
        return next((x for x in self.flow_logs if x.name == name), None)

    def pe_by_ip(self, ip: IPv4Address) -> PrivateEndpoint | None:
        return next((p for p in self.private_endpoints if p.ip == ip), None)

    def firewall_by_ip(self, ip: IPv4Address) -> Firewall | None:
        """The firewall whose private IP is ``ip``."""
        return next((f for f in self.firewalls if f.private_ip == ip), None)

    def lb_by_frontend(self, ip: IPv4Address) -> LoadBalancer | None:
        return next((b for b in self.load_balancers if b.frontend.ip == ip), None)

    def nat_gateway_of(self, vnet: str, subnet: str) -> NatGateway | None:
        return next((n for n in self.nat_gateways if (vnet, subnet) in n.subnets), None)

    def public_ips(self) -> list[tuple[PublicIp, str, str]]:
        """Every public IP resource: (ip, resource group, owner name as in the file)."""
        out: list[tuple[PublicIp, str, str]] = []
        for lb in self.load_balancers:
            if lb.frontend.public_ip is not None:
                out.append((lb.frontend.public_ip, lb.resource_group, lb.name))
        for fw in self.firewalls:
            out += [(p, fw.resource_group, fw.name) for p in fw.public_ips]
        for ngw in self.nat_gateways:
            out += [(p, ngw.resource_group, ngw.name) for p in ngw.public_ips]
        return out

    def public_ip(self, name: str) -> tuple[PublicIp, str, str] | None:
        return next((x for x in self.public_ips() if x[0].name == name), None)

    def pool_lbs(self, vm: str) -> list[LoadBalancer]:
        """The load balancers with ``vm`` in one of their pools."""
        return [b for b in self.load_balancers if any(vm in p.vms for p in b.pools)]

    # -- time (format 2) ------------------------------------------------------------------

    @property
    def has_windows(self) -> bool:
        """True when anything carries ``active`` or ``since`` (so ``at(t)`` may differ)."""
        return (any(r.active for n in self.nsgs for r in n.rules)
                or any(r.active for t in self.route_tables for r in t.routes)
                or any(f.active for f in self.faults)
                or any(z.link_windows for z in self.private_dns_zones)
                or any(t.since_seconds is not None for t in self.traffic))

    def window_key(self, t: datetime) -> tuple[bool, ...]:
        """What is active at ``t``, as a key: equal keys give the same ``at(t)``."""
        return (*(active_at(r.active, t) for n in self.nsgs for r in n.rules),
                *(active_at(r.active, t) for rt in self.route_tables for r in rt.routes),
                *(active_at(f.active, t) for f in self.faults),
                *(w.covers(t) for z in self.private_dns_zones for _, w in z.link_windows),
                *(self.flowing(x, t) for x in self.traffic))

    def flowing(self, flow: Traffic, t: datetime) -> bool:
        """``flow`` is flowing at ``t`` (``since`` counts back from now)."""
        return flow.since_seconds is None or t.timestamp() >= (
            self.now.timestamp() - flow.since_seconds)

    def at(self, t: datetime, keep_traffic: bool = False) -> Scenario:
        """The estate as it stood at ``t``: rules, routes, faults and zone links active then,
        the traffic flowing then (every flow, in order, with ``keep_traffic``: flow logs keep
        each flow's index); the same object when nothing carries a window."""
        if not self.has_windows:
            return self
        nsgs = tuple(dataclasses.replace(n, rules=tuple(
            dataclasses.replace(r, active=None) for r in n.rules if active_at(r.active, t)))
            for n in self.nsgs)
        tables = tuple(dataclasses.replace(rt, routes=tuple(
            dataclasses.replace(r, active=None) for r in rt.routes if active_at(r.active, t)))
            for rt in self.route_tables)
        faults = tuple(dataclasses.replace(f, active=None) for f in self.faults
                       if active_at(f.active, t))
        zones = tuple(dataclasses.replace(z, link_windows=(), linked_vnets=(
            *z.linked_vnets, *(v for v, w in z.link_windows if w.covers(t))))
            for z in self.private_dns_zones)
        traffic = tuple(dataclasses.replace(x, since_seconds=None) for x in self.traffic
                        if keep_traffic or self.flowing(x, t))
        return dataclasses.replace(self, nsgs=nsgs, route_tables=tables, faults=faults,
                                   private_dns_zones=zones, traffic=traffic)

    # -- resource ids ---------------------------------------------------------------------

    def _rg(self, resource_group: str) -> str:
        return f"/subscriptions/{self.subscription}/resourceGroups/{resource_group}"

    def _net(self, resource_group: str, kind: str, name: str) -> str:
        return f"{self._rg(resource_group)}/providers/Microsoft.Network/{kind}/{name}"

    def _need(self, found: T | None, what: str, name: str) -> T:
        """A resource an id is asked for must exist: an id of nothing is a bug, not an answer."""
        if found is None:
            raise KeyError(f"no {what} named {name!r} in scenario {self.name}")
        return found

    def _need_vm(self, vm: str | Vm) -> Vm:
        return self._need(self.vm(_name(vm)), "VM", _name(vm))

    def vm_id(self, vm: str | Vm) -> str:
        v = self._need_vm(vm)
        return f"{self._rg(v.resource_group)}/providers/Microsoft.Compute/virtualMachines/{v.name}"

    def nic_name(self, vm: str | Vm) -> str:
        return f"{_name(vm)}VMNic"

    def nic_id(self, vm: str | Vm) -> str:
        v = self._need_vm(vm)
        return self._net(v.resource_group, "networkInterfaces", self.nic_name(v))

    def ip_config_name(self, vm: str | Vm) -> str:
        return f"ipconfig{_name(vm)}"

    def vnet_id(self, vnet: str | VNet) -> str:
        net = self._need(self.vnet(_name(vnet)), "VNet", _name(vnet))
        return self._net(net.resource_group, "virtualNetworks", net.name)

    def subnet_id(self, vnet: str | VNet, subnet: str | Subnet) -> str:
        return f"{self.vnet_id(vnet)}/subnets/{_name(subnet)}"

    def peering_id(self, vnet: str | VNet, peering: str | Peering) -> str:
        return f"{self.vnet_id(vnet)}/virtualNetworkPeerings/{_name(peering)}"

    def nsg_id(self, nsg: str | Nsg) -> str:
        found = self._need(self.nsg(_name(nsg)), "NSG", _name(nsg))
        return self._net(found.resource_group, "networkSecurityGroups", found.name)

    def rule_id(self, nsg: str | Nsg, rule: str | NsgRule) -> str:
        return f"{self.nsg_id(nsg)}/securityRules/{_name(rule)}"

    def default_rule_id(self, nsg: str | Nsg, rule: str) -> str:
        return f"{self.nsg_id(nsg)}/defaultSecurityRules/{rule}"

    def route_table_id(self, rt: str | RouteTable) -> str:
        found = self._need(self.route_table(_name(rt)), "route table", _name(rt))
        return self._net(found.resource_group, "routeTables", found.name)

    def route_id(self, rt: str | RouteTable, route: str | Route) -> str:
        return f"{self.route_table_id(rt)}/routes/{_name(route)}"

    def zone_id(self, zone: str | PrivateDnsZone) -> str:
        found = self._need(self.zone(_name(zone)), "private DNS zone", _name(zone))
        return self._net(found.resource_group, "privateDnsZones", found.name)

    def zone_link_id(self, zone: str | PrivateDnsZone, vnet: str) -> str:
        return f"{self.zone_id(zone)}/virtualNetworkLinks/{vnet}"

    # -- format 2 ids ---------------------------------------------------------------------

    def lb_id(self, lb: str | LoadBalancer) -> str:
        found = self._need(self.lb(_name(lb)), "load balancer", _name(lb))
        return self._net(found.resource_group, "loadBalancers", found.name)

    def lb_child_id(self, lb: str | LoadBalancer, kind: str, name: str) -> str:
        """``kind``: frontendIPConfigurations | backendAddressPools | probes |
        loadBalancingRules."""
        return f"{self.lb_id(lb)}/{kind}/{name}"

    def public_ip_id(self, name: str) -> str:
        found = self._need(self.public_ip(name), "public IP", name)
        return self._net(found[1], "publicIPAddresses", found[0].name)

    def pe_id(self, pe: str | PrivateEndpoint) -> str:
        found = self._need(self.pe(_name(pe)), "private endpoint", _name(pe))
        return self._net(found.resource_group, "privateEndpoints", found.name)

    def pe_nic_name(self, pe: str | PrivateEndpoint) -> str:
        found = self._need(self.pe(_name(pe)), "private endpoint", _name(pe))
        return found.nic_name or f"{found.name}.nic.{stable_guid(self.pe_id(found))}"

    def pe_nic_id(self, pe: str | PrivateEndpoint) -> str:
        found = self._need(self.pe(_name(pe)), "private endpoint", _name(pe))
        return self._net(found.resource_group, "networkInterfaces", self.pe_nic_name(found))

    def pe_ip_config_name(self, pe: str | PrivateEndpoint) -> str:
        return f"privateEndpointIpConfig.{stable_guid(self.pe_id(pe), 'ipconfig')}"

    def pe_target_id(self, pe: str | PrivateEndpoint) -> str:
        found = self._need(self.pe(_name(pe)), "private endpoint", _name(pe))
        t = found.target
        return f"{self._rg(t.resource_group)}/providers/{t.resource_type}/{t.name}"

    def firewall_id(self, fw: str | Firewall) -> str:
        found = self._need(self.firewall(_name(fw)), "firewall", _name(fw))
        return self._net(found.resource_group, "azureFirewalls", found.name)

    def firewall_policy_id(self, fw: str | Firewall) -> str:
        found = self._need(self.firewall(_name(fw)), "firewall", _name(fw))
        policy = self._need(found.policy, "firewall policy of", found.name)
        return self._net(found.resource_group, "firewallPolicies", policy.name)

    def rcg_id(self, fw: str | Firewall, group: str) -> str:
        return f"{self.firewall_policy_id(fw)}/ruleCollectionGroups/{group}"

    def nat_gateway_id(self, ngw: str | NatGateway) -> str:
        found = self._need(self.nat_gateway(_name(ngw)), "NAT gateway", _name(ngw))
        return self._net(found.resource_group, "natGateways", found.name)

    def storage_id(self, sa: str | StorageAccount) -> str:
        found = self._need(self.storage_account(_name(sa)), "storage account", _name(sa))
        return (f"{self._rg(found.resource_group)}/providers/Microsoft.Storage/"
                f"storageAccounts/{found.name}")

    def network_watcher_id(self) -> str:
        return (f"/subscriptions/{self.subscription}/resourceGroups/NetworkWatcherRG/providers/"
                f"Microsoft.Network/networkWatchers/NetworkWatcher_{self.location}")

    def flow_log_id(self, fl: str | FlowLog) -> str:
        return f"{self.network_watcher_id()}/flowLogs/{_name(fl)}"

    def mac_address(self, nic_id: str, vm_name: str | None = None) -> str:
        """A NIC's MAC in Azure's OUI 00-0D-3A. Format 2: the first three bytes of SHA-256 of
        the NIC's lower-case id; format 1 keeps its old derivation (from the VM name)."""
        seed = vm_name if self.format == 1 and vm_name is not None else nic_id.lower()
        digest = hashlib.sha256(seed.encode()).hexdigest().upper()
        return "00-0D-3A-" + "-".join(digest[i:i + 2] for i in (0, 2, 4))

    def _format2_id_for(self, head: str, tail: str) -> str | None:
        """Ids of what format 2 adds: lb, lb/probe (rule, pool, frontend), pe, fw,
        fw/collection, ngw, storage accounts, public IPs, flow logs."""
        if not tail:
            for find, make in ((self.lb, self.lb_id), (self.pe, self.pe_id),
                               (self.firewall, self.firewall_id),
                               (self.nat_gateway, self.nat_gateway_id),
                               (self.storage_account, self.storage_id),
                               (self.flow_log, self.flow_log_id)):
                if find(head) is not None:
                    return make(head)
            if self.public_ip(head) is not None:
                return self.public_ip_id(head)
            fw = next((f for f in self.firewalls if f.policy and f.policy.name == head), None)
            return self.firewall_policy_id(fw) if fw is not None else None
        lb = self.lb(head)
        if lb is not None:
            for kind, items in (("probes", lb.probes), ("loadBalancingRules", lb.rules),
                                ("backendAddressPools", lb.pools),
                                ("frontendIPConfigurations", (lb.frontend,))):
                if any(i.name == tail for i in items):
                    return self.lb_child_id(lb, kind, tail)
        fw = self.firewall(head)
        if fw is not None:
            if fw.policy is not None:
                for g in fw.policy.groups:
                    if g.name == tail or any(c.name == tail for c in g.collections):
                        return self.rcg_id(fw, g.name)
            for c in fw.collections:
                if c.name == tail:
                    kind = ("networkRuleCollections" if c.type == "Network"
                            else "applicationRuleCollections")
                    return f"{self.firewall_id(fw)}/{kind}/{c.name}"
        return None

    def resource_id_for(self, text: str) -> str | None:
        """The id of what an activity-log ``resource`` names, or None when outside the model."""
        head, _, tail = text.partition("/")
        extra = self._format2_id_for(head, tail) if self.format >= 2 else None
        if extra is not None:
            return extra
        if not tail:
            if self.vm(text):
                return self.vm_id(text)
            if self.nsg(text):
                return self.nsg_id(text)
            if self.vnet(text):
                return self.vnet_id(text)
            if self.route_table(text):
                return self.route_table_id(text)
            if self.zone(text):
                return self.zone_id(text)
            nic_owner = next((v for v in self.vms if self.nic_name(v).lower() == text.lower()),
                             None)
            if nic_owner is not None:
                return self.nic_id(nic_owner)
            owners = [v.name for v in self.vnets for p in v.peerings if p.name == text]
            return self.peering_id(owners[0], text) if len(owners) == 1 else None
        nsg = self.nsg(head)
        if nsg and nsg.rule(tail):
            return self.rule_id(head, tail)
        rt = self.route_table(head)
        if rt and rt.route(tail):
            return self.route_id(head, tail)
        if self.subnet(head, tail):
            return self.subnet_id(head, tail)
        net = self.vnet(head)
        if net and any(p.name == tail for p in net.peerings):
            return self.peering_id(head, tail)
        return None

    def replay_path(self) -> Path | None:
        if self.replay is None:
            return None
        base = self.path.parent if self.path is not None else SHIPPED_DIR
        return base / self.replay


