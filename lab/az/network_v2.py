"""`az network …` reads of what format 2 adds: load balancers and their parts, public IPs,
private endpoints and their DNS zone groups, NAT gateways, and a private endpoint's NIC.

Options are az's: ``--lb-name`` for a load balancer's parts, ``--endpoint-name`` for a zone
group. A format-1 estate has none of these resources, so its lists stay ``[]``.
"""

from __future__ import annotations

from typing import Any

from lab.az import resources as res
from lab.az import resources_v2 as res2
from lab.az.args import Command, Parsed
from lab.az.catalog import Catalog, same
from lab.az.errors import resource_not_found
from lab.az.network import _named, _pair
from lab.model_v2 import LoadBalancer


def _lb(cat: Catalog, a: Parsed) -> LoadBalancer:
    return cat.lb(a.require("resource_group"), a.require("parent"))


def lb_list(cat: Catalog, a: Parsed) -> Any:
    return [res2.lb_json(cat, b)
            for b in cat.in_rg(cat.scenario.load_balancers, a.text("resource_group"))]


def lb_show(cat: Catalog, a: Parsed) -> Any:
    return res2.lb_json(cat, cat.lb(a.require("resource_group"), a.require("name")))


def _part(kind: str, items: str) -> tuple[Any, Any]:
    """list/show handlers of one kind of load balancer part (its JSON key in ``lb_json``)."""
    def list_(cat: Catalog, a: Parsed) -> Any:
        return res2.lb_json(cat, _lb(cat, a))[items]

    def show(cat: Catalog, a: Parsed) -> Any:
        balancer = _lb(cat, a)
        return _named(cat, a, res2.lb_json(cat, balancer)[items], lambda x: str(x["name"]),
                      f"{cat.scenario.lb_id(balancer)}/{kind}")
    return list_, show


_FRONT = _part("frontendIPConfigurations", "frontendIPConfigurations")
_POOL = _part("backendAddressPools", "backendAddressPools")
_PROBE = _part("probes", "probes")
_RULE = _part("loadBalancingRules", "loadBalancingRules")


def _lb_table(result: Any) -> Any:
    from collections import OrderedDict

    def row(b: dict[str, Any]) -> OrderedDict[str, Any]:
        return OrderedDict([("Location", b["location"]), ("Name", b["name"]),
                            ("ProvisioningState", b["provisioningState"]),
                            ("ResourceGroup", b["resourceGroup"]),
                            ("ResourceGuid", b["resourceGuid"])])
    return [row(b) for b in result] if isinstance(result, list) else row(result)


# -- public IPs ----------------------------------------------------------------------------


def public_ip_list(cat: Catalog, a: Parsed) -> Any:
    group = a.text("resource_group")
    wanted = cat.rg(group) if group is not None else None
    return [res2.public_ip_json(cat, pip, rg, owner) for pip, rg, owner in cat.scenario.public_ips()
            if wanted is None or same(rg, wanted)]


def public_ip_show(cat: Catalog, a: Parsed) -> Any:
    group, name = cat.rg(a.require("resource_group")), a.require("name")
    for pip, rg, owner in cat.scenario.public_ips():
        if same(rg, group) and same(pip.name, name):
            return res2.public_ip_json(cat, pip, rg, owner)
    raise resource_not_found("Microsoft.Network/publicIPAddresses", name, group)


# -- private endpoints ---------------------------------------------------------------------


def pe_list(cat: Catalog, a: Parsed) -> Any:
    return [res2.pe_json(cat, pe)
            for pe in cat.in_rg(cat.scenario.private_endpoints, a.text("resource_group"))]


def pe_show(cat: Catalog, a: Parsed) -> Any:
    return res2.pe_json(cat, cat.pe(a.require("resource_group"), a.require("name")))


def zone_group_list(cat: Catalog, a: Parsed) -> Any:
    pe = cat.pe(a.require("resource_group"), a.require("parent"))
    return [res2.zone_group_json(cat, pe)] if pe.zone_group else []


def zone_group_show(cat: Catalog, a: Parsed) -> Any:
    pe = cat.pe(a.require("resource_group"), a.require("parent"))
    groups = [res2.zone_group_json(cat, pe)] if pe.zone_group else []
    return _named(cat, a, groups, lambda g: str(g["name"]),
                  f"{cat.scenario.pe_id(pe)}/privateDnsZoneGroups")


# -- NAT gateways --------------------------------------------------------------------------


def ngw_list(cat: Catalog, a: Parsed) -> Any:
    return [res2.nat_gateway_json(cat, n)
            for n in cat.in_rg(cat.scenario.nat_gateways, a.text("resource_group"))]


def ngw_show(cat: Catalog, a: Parsed) -> Any:
    return res2.nat_gateway_json(cat, cat.nat_gateway(a.require("resource_group"),
                                                      a.require("name")))


# -- NICs: a private endpoint's NIC beside the VMs' ----------------------------------------


def nic_list(cat: Catalog, a: Parsed) -> Any:
    group = a.text("resource_group")
    out = [res.nic_json(cat, vm) for vm in cat.in_rg(cat.scenario.vms, group)]
    out += [res2.pe_nic_json(cat, pe)
            for pe in cat.in_rg(cat.scenario.private_endpoints, group)]
    return out


def nic_show(cat: Catalog, a: Parsed) -> Any:
    group, name = a.require("resource_group"), a.require("name")
    pe = cat.pe_nic(group, name)
    if pe is not None:
        return res2.pe_nic_json(cat, pe)
    return res.nic_json(cat, cat.nic(group, name))


LB_NAME = ("--lb-name",)

COMMANDS: list[Command] = [
    *_pair("network lb", lb_list, lb_show, table=_lb_table),
    *_pair("network lb frontend-ip", *_FRONT, parent=LB_NAME),
    *_pair("network lb address-pool", *_POOL, parent=LB_NAME),
    *_pair("network lb probe", *_PROBE, parent=LB_NAME),
    *_pair("network lb rule", *_RULE, parent=LB_NAME),
    *_pair("network public-ip", public_ip_list, public_ip_show),
    *_pair("network private-endpoint", pe_list, pe_show),
    *_pair("network private-endpoint dns-zone-group", zone_group_list, zone_group_show,
           parent=("--endpoint-name",)),
    *_pair("network nat gateway", ngw_list, ngw_show),
    *_pair("network nic", nic_list, nic_show),
]
