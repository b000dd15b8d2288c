"""Finding a scenario's resources the way ARM does: by resource group and name, case-insensitively.

A lookup that fails raises the error ARM returns (resource group not found, resource not found),
so every `az … show` of the lab fails like the real one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, TypeVar

from lab.az.errors import (
    AzError,
    child_not_found,
    resource_group_not_found,
    resource_not_found,
    usage_error,
)
from lab.model import Nsg, PrivateDnsZone, RouteTable, Scenario, Vm, VNet, stable_guid
from lab.model_v2 import Firewall, LoadBalancer, NatGateway, PrivateEndpoint
from lab.network import Estate

NETWORK = "Microsoft.Network"


class _Placed(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def resource_group(self) -> str: ...


T = TypeVar("T", bound=_Placed)


def guid(*parts: str) -> str:
    """A stable GUID for a derived identifier (resourceGuid, vmId, correlation ids)."""
    return stable_guid(*parts)


def same(a: str, b: str) -> bool:
    return a.lower() == b.lower()


class Catalog:
    """The scenario's resources, looked up as ARM would, plus the estate that answers paths."""

    def __init__(self, scenario: Scenario, estate: Estate) -> None:
        # the estate at ``now`` (format 2's windows resolved); the whole timeline for flow
        # logs and metrics
        self.scenario = estate.scenario
        self.timeline = estate.timeline
        self.estate = estate
        self.cache: dict[str, Any] = {}  # computed once per runner: flow-log blobs, timeline

    @property
    def sub(self) -> str:
        return self.scenario.subscription

    def resource_groups(self) -> list[str]:
        s = self.scenario
        seen: dict[str, str] = {}
        groups: Iterable[_Placed] = (*s.vnets, *s.nsgs, *s.route_tables, *s.private_dns_zones,
                                     *s.vms, *s.load_balancers, *s.private_endpoints,
                                     *s.firewalls, *s.nat_gateways, *s.storage_accounts)
        for item in groups:
            seen.setdefault(item.resource_group.lower(), item.resource_group)
        for pe in s.private_endpoints:  # the target's group exists too
            seen.setdefault(pe.target.resource_group.lower(), pe.target.resource_group)
        return list(seen.values())

    def rg(self, name: str) -> str:
        """The canonical spelling of a resource group, or ARM's ResourceGroupNotFound."""
        for group in self.resource_groups():
            if same(group, name):
                return group
        raise resource_group_not_found(name)

    def in_rg(self, items: Sequence[T], resource_group: str | None) -> list[T]:
        """Every item, or those of one (existing) resource group."""
        if resource_group is None:
            return list(items)
        group = self.rg(resource_group)
        return [i for i in items if same(i.resource_group, group)]

    def _find(self, items: Sequence[T], resource_group: str, name: str, kind: str) -> T:
        group = self.rg(resource_group)
        for item in items:
            if same(item.resource_group, group) and same(item.name, name):
                return item
        raise resource_not_found(f"{NETWORK}/{kind}" if "/" not in kind else kind, name, group)

    def vnet(self, resource_group: str, name: str) -> VNet:
        return self._find(self.scenario.vnets, resource_group, name, "virtualNetworks")

    def nsg(self, resource_group: str, name: str) -> Nsg:
        return self._find(self.scenario.nsgs, resource_group, name, "networkSecurityGroups")

    def route_table(self, resource_group: str, name: str) -> RouteTable:
        return self._find(self.scenario.route_tables, resource_group, name, "routeTables")

    def zone(self, resource_group: str, name: str) -> PrivateDnsZone:
        return self._find(self.scenario.private_dns_zones, resource_group, name.rstrip("."),
                          "privateDnsZones")

    def vm(self, resource_group: str, name: str) -> Vm:
        return self._find(self.scenario.vms, resource_group, name,
                          "Microsoft.Compute/virtualMachines")

    def nic(self, resource_group: str, name: str) -> Vm:
        """The VM whose NIC is ``name`` (each VM has exactly one, ``{vm}VMNic``)."""
        group = self.rg(resource_group)
        for vm in self.scenario.vms:
            if same(vm.resource_group, group) and same(self.scenario.nic_name(vm), name):
                return vm
        raise resource_not_found(f"{NETWORK}/networkInterfaces", name, group)

    def lb(self, resource_group: str, name: str) -> LoadBalancer:
        return self._find(self.scenario.load_balancers, resource_group, name, "loadBalancers")

    def pe(self, resource_group: str, name: str) -> PrivateEndpoint:
        return self._find(self.scenario.private_endpoints, resource_group, name,
                          "privateEndpoints")

    def firewall(self, resource_group: str, name: str) -> Firewall:
        return self._find(self.scenario.firewalls, resource_group, name, "azureFirewalls")

    def nat_gateway(self, resource_group: str, name: str) -> NatGateway:
        return self._find(self.scenario.nat_gateways, resource_group, name, "natGateways")

    def pe_nic(self, resource_group: str, name: str) -> PrivateEndpoint | None:
        """The private endpoint whose NIC is ``name`` (None: not a private endpoint's NIC)."""
        group = self.rg(resource_group)
        return next((pe for pe in self.scenario.private_endpoints
                     if same(pe.resource_group, group)
                     and same(self.scenario.pe_nic_name(pe), name)), None)

    def vm_named(self, name: str) -> Vm | None:
        return next((v for v in self.scenario.vms if same(v.name, name)), None)

    def vm_ref(self, ref: str, resource_group: str | None, option: str = "--vm") -> Vm:
        """A VM given by name (with -g) or by resource id, as Network Watcher commands take it."""
        if ref.startswith("/"):
            parts = parse_id(ref)
            if parts.get("type", "").lower() != "virtualmachines":
                raise AzError(f"Invalid resource id for {option}: {ref}")
            return self.vm(parts.get("resource_group", ""), parts.get("name", ""))
        if resource_group is None:
            raise usage_error(f"usage error: {option} NAME --resource-group NAME | {option} ID")
        return self.vm(resource_group, ref)

    def child_missing(self, resource_id: str) -> AzError:
        return child_not_found(resource_id)


def parse_id(resource_id: str) -> dict[str, str]:
    """Split an ARM id: subscription, resource_group, namespace, type, name, child_type_1, …"""
    parts = [p for p in resource_id.split("/") if p]
    out: dict[str, str] = {}
    lowered = [p.lower() for p in parts]
    if "subscriptions" in lowered:
        i = lowered.index("subscriptions")
        if i + 1 < len(parts):
            out["subscription"] = parts[i + 1]
    if "resourcegroups" in lowered:
        i = lowered.index("resourcegroups")
        if i + 1 < len(parts):
            out["resource_group"] = parts[i + 1]
    if "providers" in lowered:
        i = lowered.index("providers")
        rest = parts[i + 1:]
        if rest:
            out["namespace"] = rest[0]
        pairs = rest[1:]
        if len(pairs) >= 2:
            out["type"], out["name"] = pairs[0], pairs[1]
        level = 1
        for j in range(2, len(pairs) - 1, 2):
            out[f"child_type_{level}"] = pairs[j]
            out[f"child_name_{level}"] = pairs[j + 1]
            level += 1
    return out
