"""`az network …` reads of the estate's configuration: VNets, subnets, peerings, NSGs and rules,
NICs, route tables and routes, private DNS zones, links and A record sets.

Option names, required options and table layouts follow az (``--vnet-name``, ``--nsg-name``,
``--route-table-name``, ``-z/--zone-name``; the NSG rule and VNet tables are az's transformers).
Kinds of resource the lab's estate never has (application gateways, VPN gateways) list as
empty, which is what Azure answers for such an estate; format 2's kinds are lab/az/network_v2.py.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from lab.az import resources as res
from lab.az.args import RG, RG_OPTIONAL, Command, Parsed, opt
from lab.az.catalog import Catalog, same
from lab.model import PrivateDnsZone, VNet

ID_RG_NAME = (("resource_group", "resource_group"), ("name", "name"))
ID_CHILD = (("resource_group", "resource_group"), ("name", "parent"), ("child_name_1", "name"))
T = TypeVar("T")


def _named(cat: Catalog, a: Parsed, items: Iterable[T], name_of: Callable[[T], str],
           where: str) -> T:
    """The child that ``--name`` names (az matches names case-insensitively), or az's
    not-found error for ``where/NAME``: every ``… show`` of a child resource asks this."""
    name = a.require("name")
    for item in items:
        if same(name_of(item), name):
            return item
    raise cat.child_missing(f"{where}/{name}")


def _vnet_table(result: Any) -> Any:
    def row(v: dict[str, Any]) -> OrderedDict[str, Any]:
        return OrderedDict([
            ("Name", v["name"]), ("ResourceGroup", v["resourceGroup"]),
            ("Location", v["location"]), ("NumSubnets", len(v.get("subnets", []))),
            ("Prefixes", ", ".join(v["addressSpace"]["addressPrefixes"]) or " "),
            ("DnsServers", ", ".join((v.get("dhcpOptions") or {}).get("dnsServers", [])) or " "),
            ("DDOSProtection", v["enableDdosProtection"]),
        ])
    return [row(v) for v in result] if isinstance(result, list) else row(result)


def _rule_row(r: dict[str, Any]) -> OrderedDict[str, Any]:
    return OrderedDict([
        ("Name", r["name"]), ("ResourceGroup", r["resourceGroup"]), ("Priority", r["priority"]),
        ("SourcePortRanges", r.get("sourcePortRange", " ".join(r.get("sourcePortRanges", [])))),
        ("SourceAddressPrefixes",
         r.get("sourceAddressPrefix", " ".join(r.get("sourceAddressPrefixes", [])))),
        ("SourceASG", "None"), ("Access", r["access"]), ("Protocol", r["protocol"]),
        ("Direction", r["direction"]),
        ("DestinationPortRanges",
         r.get("destinationPortRange", " ".join(r.get("destinationPortRanges", [])))),
        ("DestinationAddressPrefixes",
         r.get("destinationAddressPrefix", " ".join(r.get("destinationAddressPrefixes", [])))),
        ("DestinationASG", "None"),
    ])


def _rule_table(result: Any) -> Any:
    return [_rule_row(r) for r in result] if isinstance(result, list) else _rule_row(result)


# -- VNets, subnets, peerings --------------------------------------------------------------


def vnet_list(cat: Catalog, a: Parsed) -> Any:
    return [res.vnet_json(cat, v) for v in cat.in_rg(cat.scenario.vnets, a.text("resource_group"))]


def vnet_show(cat: Catalog, a: Parsed) -> Any:
    return res.vnet_json(cat, cat.vnet(a.require("resource_group"), a.require("name")))


def _parent_vnet(cat: Catalog, a: Parsed) -> VNet:
    return cat.vnet(a.require("resource_group"), a.require("parent"))


def subnet_list(cat: Catalog, a: Parsed) -> Any:
    vnet = _parent_vnet(cat, a)
    return [res.subnet_json(cat, vnet, s) for s in vnet.subnets]


def subnet_show(cat: Catalog, a: Parsed) -> Any:
    vnet = _parent_vnet(cat, a)
    subnet = _named(cat, a, vnet.subnets, lambda s: s.name,
                    f"{cat.scenario.vnet_id(vnet.name)}/subnets")
    return res.subnet_json(cat, vnet, subnet)


def peering_list(cat: Catalog, a: Parsed) -> Any:
    vnet = _parent_vnet(cat, a)
    return [res.peering_json(cat, vnet, p) for p in vnet.peerings]


def peering_show(cat: Catalog, a: Parsed) -> Any:
    vnet = _parent_vnet(cat, a)
    peering = _named(cat, a, vnet.peerings, lambda p: p.name,
                     f"{cat.scenario.vnet_id(vnet.name)}/virtualNetworkPeerings")
    return res.peering_json(cat, vnet, peering)


# -- NSGs and rules ------------------------------------------------------------------------


def nsg_list(cat: Catalog, a: Parsed) -> Any:
    return [res.nsg_json(cat, n) for n in cat.in_rg(cat.scenario.nsgs, a.text("resource_group"))]


def nsg_show(cat: Catalog, a: Parsed) -> Any:
    return res.nsg_json(cat, cat.nsg(a.require("resource_group"), a.require("name")))


def rule_list(cat: Catalog, a: Parsed) -> Any:
    nsg = cat.nsg(a.require("resource_group"), a.require("parent"))
    rules = [res.rule_json(cat, nsg, r) for r in nsg.rules]
    if a.get("include_default"):
        rules += res.default_rules_json(cat, nsg)
    return rules


def rule_show(cat: Catalog, a: Parsed) -> Any:
    nsg = cat.nsg(a.require("resource_group"), a.require("parent"))
    rule = _named(cat, a, nsg.rules, lambda r: r.name,
                  f"{cat.scenario.nsg_id(nsg.name)}/securityRules")
    return res.rule_json(cat, nsg, rule)


# -- route tables --------------------------------------------------------------------------


def rt_list(cat: Catalog, a: Parsed) -> Any:
    tables = cat.in_rg(cat.scenario.route_tables, a.text("resource_group"))
    return [res.route_table_json(cat, t) for t in tables]


def rt_show(cat: Catalog, a: Parsed) -> Any:
    return res.route_table_json(cat, cat.route_table(a.require("resource_group"),
                                                     a.require("name")))


def route_list(cat: Catalog, a: Parsed) -> Any:
    table = cat.route_table(a.require("resource_group"), a.require("parent"))
    return [res.route_json(cat, table, r) for r in table.routes]


def route_show(cat: Catalog, a: Parsed) -> Any:
    table = cat.route_table(a.require("resource_group"), a.require("parent"))
    route = _named(cat, a, table.routes, lambda r: r.name,
                   f"{cat.scenario.route_table_id(table.name)}/routes")
    return res.route_json(cat, table, route)


# -- private DNS ---------------------------------------------------------------------------


def zone_list(cat: Catalog, a: Parsed) -> Any:
    zones = cat.in_rg(cat.scenario.private_dns_zones, a.text("resource_group"))
    return [res.zone_json(cat, z) for z in zones]


def zone_show(cat: Catalog, a: Parsed) -> Any:
    return res.zone_json(cat, cat.zone(a.require("resource_group"), a.require("name")))


def _parent_zone(cat: Catalog, a: Parsed) -> PrivateDnsZone:
    return cat.zone(a.require("resource_group"), a.require("parent"))


def link_list(cat: Catalog, a: Parsed) -> Any:
    zone = _parent_zone(cat, a)
    return [res.link_json(cat, zone, v) for v in zone.linked_vnets]


def link_show(cat: Catalog, a: Parsed) -> Any:
    zone = _parent_zone(cat, a)
    vnet = _named(cat, a, zone.linked_vnets, str,
                  f"{cat.scenario.zone_id(zone.name)}/virtualNetworkLinks")
    return res.link_json(cat, zone, vnet)


def record_list(cat: Catalog, a: Parsed) -> Any:
    zone = _parent_zone(cat, a)
    return [res.record_set_json(cat, zone, n) for n in sorted(zone.records)]


def record_show(cat: Catalog, a: Parsed) -> Any:
    zone = _parent_zone(cat, a)
    record = _named(cat, a, zone.records, str, f"{cat.scenario.zone_id(zone.name)}/A")
    return res.record_set_json(cat, zone, record)


def ip_config_list(cat: Catalog, a: Parsed) -> Any:
    vm = cat.nic(a.require("resource_group"), a.require("parent"))
    return res.nic_json(cat, vm)["ipConfigurations"]


def ip_config_show(cat: Catalog, a: Parsed) -> Any:
    vm = cat.nic(a.require("resource_group"), a.require("parent"))
    return _named(cat, a, res.nic_json(cat, vm)["ipConfigurations"], lambda c: str(c["name"]),
                  f"{cat.scenario.nic_id(vm)}/ipConfigurations")


def record_set_all(cat: Catalog, a: Parsed) -> Any:
    zone = _parent_zone(cat, a)
    zid = cat.scenario.zone_id(zone.name)
    soa = {"fqdn": f"{zone.name}.", "id": f"{zid}/SOA/@", "isAutoRegistered": False,
           "name": "@", "resourceGroup": zone.resource_group, "ttl": 3600,
           "type": "Microsoft.Network/privateDnsZones/SOA",
           "soaRecord": {"email": "azureprivatedns-host.microsoft.com", "expireTime": 2419200,
                         "host": "azureprivatedns.net", "minimumTtl": 10, "refreshTime": 3600,
                         "retryTime": 300, "serialNumber": 1}}
    return [soa, *(res.record_set_json(cat, zone, n) for n in sorted(zone.records))]


# -- kinds the lab's estate never has ------------------------------------------------------


def empty_list(cat: Catalog, a: Parsed) -> Any:
    group = a.text("resource_group")
    if group is not None:
        cat.rg(group)
    return []


def watcher_list(cat: Catalog, a: Parsed) -> Any:
    location = cat.scenario.location
    rid = (f"/subscriptions/{cat.sub}/resourceGroups/NetworkWatcherRG/providers/"
           f"Microsoft.Network/networkWatchers/NetworkWatcher_{location}")
    return [{"id": rid, "location": location, "name": f"NetworkWatcher_{location}",
             "provisioningState": "Succeeded", "resourceGroup": "NetworkWatcherRG",
             "type": "Microsoft.Network/networkWatchers"}]


# -- the command table ---------------------------------------------------------------------

N = opt("--name", "-n", dest="name", required=True)


def _pair(words: str, list_handler: Any, show_handler: Any, parent: tuple[str, ...] = (),
          rg_required: bool = False, table: Any = None, list_extra: tuple[Any, ...] = (),
          name_opt: Any = N) -> list[Command]:
    """A resource kind's `list` and `show` commands, with or without a parent option."""
    w = tuple(words.split())
    parent_opts = (opt(*parent, dest="parent", required=True),) if parent else ()
    list_rg = RG if (parent or rg_required) else RG_OPTIONAL
    ids = ID_CHILD if parent else ID_RG_NAME
    return [
        Command((*w, "list"), (list_rg, *parent_opts, *list_extra), list_handler, table),
        Command((*w, "show"), (RG, *parent_opts, name_opt), show_handler, table, ids),
    ]


COMMANDS: list[Command] = [
    *_pair("network vnet", vnet_list, vnet_show, table=_vnet_table),
    *_pair("network vnet subnet", subnet_list, subnet_show, parent=("--vnet-name",)),
    *_pair("network vnet peering", peering_list, peering_show, parent=("--vnet-name",)),
    *_pair("network nsg", nsg_list, nsg_show),
    *_pair("network nsg rule", rule_list, rule_show, parent=("--nsg-name",), table=_rule_table,
           list_extra=(opt("--include-default", dest="include_default", flag=True),)),
    *_pair("network route-table", rt_list, rt_show),
    *_pair("network route-table route", route_list, route_show,
           parent=("--route-table-name",)),
    *_pair("network private-dns zone", zone_list, zone_show),
    *_pair("network private-dns link vnet", link_list, link_show,
           parent=("--zone-name", "-z")),
    *_pair("network private-dns record-set a", record_list, record_show,
           parent=("--zone-name", "-z")),
    *_pair("network nic ip-config", ip_config_list, ip_config_show, parent=("--nic-name",)),
    Command(("network", "private-dns", "record-set", "list"),
            (RG, opt("--zone-name", "-z", dest="parent", required=True)), record_set_all),
    Command(("network", "application-gateway", "list"), (RG_OPTIONAL,), empty_list),
    Command(("network", "vnet-gateway", "list"), (RG,), empty_list),
    Command(("network", "watcher", "list"), (), watcher_list),
]
