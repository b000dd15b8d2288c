"""A lab scenario (specs/lab-scenario-format.md, version 1) as frozen dataclasses.

Loading validates everything (lab/validate.py) and raises one ScenarioError holding every
problem as a line ``FILE: field.path: problem``, so a scenario author fixes a file in one pass.
Resource ids are derived here, once, so every answer of the lab names resources the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from ipaddress import IPv4Address, IPv4Network, ip_address
from pathlib import Path
from typing import Any, TypeVar

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
    source: str  # `from` in the YAML: a VM name
    to: str  # a VM name or an IPv4 address no VM holds
    port: int
    rate: float


@dataclass(frozen=True)
class Fault:
    kind: str  # loss | reset | mtu | latency | no_listener
    at: str  # the VM (no_listener: its `vm`)
    percent: float | None = None
    after_bytes: int | None = None
    mtu: int | None = None
    icmp_blocked: bool | None = None
    ms: float | None = None
    port: int | None = None


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

    def resource_id_for(self, text: str) -> str | None:
        """The id of what an activity-log ``resource`` names, or None when outside the model."""
        head, _, tail = text.partition("/")
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


def parse_scenario(data: Any, source: str) -> Scenario:
    """Validate a decoded YAML document; ``source`` names it in error lines."""
    from lab.validate import build_scenario  # validate imports this module's dataclasses

    return build_scenario(data, source, None)


def load_scenario(path: str | Path) -> Scenario:
    """Read, validate and build a scenario file; ScenarioError lists every problem."""
    from lab.validate import build_scenario, read_yaml

    p = Path(path)
    data = read_yaml(p)
    return build_scenario(data, p.name, p)


def shipped_dir() -> Path:
    return SHIPPED_DIR


def shipped_scenarios() -> list[Path]:
    return sorted(SHIPPED_DIR.glob("*.yaml")) if SHIPPED_DIR.is_dir() else []


def find_scenario(name_or_path: str) -> Path:
    """A shipped scenario's name ("nsg-deny-redis") or a scenario file's path."""
    candidate = Path(name_or_path)
    if candidate.is_file():
        return candidate
    shipped = SHIPPED_DIR / f"{name_or_path}.yaml"
    if "/" not in name_or_path and shipped.is_file():
        return shipped
    names = ", ".join(p.stem for p in shipped_scenarios()) or "none"
    raise ScenarioError(
        [f"{name_or_path}: no such scenario file or shipped scenario (shipped: {names})"]
    )
