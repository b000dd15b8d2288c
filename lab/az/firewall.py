"""`az network firewall …` (the azure-firewall extension, *(lab)*: as if installed): firewalls,
their IP configurations, classic rule collections and rules, policies, rule collection groups
and their collections.

Options are the extension's: ``-f/--firewall-name``, ``-c/--collection-name``,
``--policy-name``, ``--rcg-name`` (or ``--rule-collection-group-name``).
"""

from __future__ import annotations

from typing import Any

from lab.az import resources_v2 as res2
from lab.az.args import RG, RG_OPTIONAL, Command, Parsed, opt
from lab.az.catalog import Catalog, same
from lab.az.errors import resource_not_found
from lab.az.network import ID_RG_NAME, N, _named
from lab.model_v2 import Firewall

FW_NAME = opt("--firewall-name", "-f", dest="parent", required=True)
COLLECTION = opt("--collection-name", "-c", dest="collection", required=True)
POLICY = opt("--policy-name", dest="policy", required=True)
RCG = opt("--rcg-name", "--rule-collection-group-name", dest="rcg", required=True)


def fw_list(cat: Catalog, a: Parsed) -> Any:
    return [res2.firewall_json(cat, f)
            for f in cat.in_rg(cat.scenario.firewalls, a.text("resource_group"))]


def fw_show(cat: Catalog, a: Parsed) -> Any:
    return res2.firewall_json(cat, cat.firewall(a.require("resource_group"), a.require("name")))


def _fw(cat: Catalog, a: Parsed) -> Firewall:
    return cat.firewall(a.require("resource_group"), a.require("parent"))


def ip_config_list(cat: Catalog, a: Parsed) -> Any:
    return res2.fw_ip_configs_json(cat, _fw(cat, a))


def _classic(kind: str) -> tuple[Any, Any, Any]:
    """collection list / collection show / rule list of one classic rule type."""
    key = "networkRuleCollections" if kind == "Network" else "applicationRuleCollections"

    def collections(cat: Catalog, a: Parsed) -> list[dict[str, Any]]:
        return list(res2.firewall_json(cat, _fw(cat, a))[key])

    def list_(cat: Catalog, a: Parsed) -> Any:
        return collections(cat, a)

    def show(cat: Catalog, a: Parsed) -> Any:
        fw = _fw(cat, a)
        return _named(cat, a, collections(cat, a), lambda c: str(c["name"]),
                      f"{cat.scenario.firewall_id(fw)}/{key}")

    def rules(cat: Catalog, a: Parsed) -> Any:
        fw = _fw(cat, a)
        wanted = a.require("collection")
        for c in collections(cat, a):
            if same(str(c["name"]), wanted):
                return c["rules"]
        raise cat.child_missing(f"{cat.scenario.firewall_id(fw)}/{key}/{wanted}")
    return list_, show, rules


_NET = _classic("Network")
_APP = _classic("Application")


def _policy_fw(cat: Catalog, a: Parsed, name: str) -> Firewall:
    group = cat.rg(a.require("resource_group"))
    for fw in cat.scenario.firewalls:
        if fw.policy is not None and same(fw.resource_group, group) and same(fw.policy.name,
                                                                             name):
            return fw
    raise resource_not_found("Microsoft.Network/firewallPolicies", name, group)


def policy_list(cat: Catalog, a: Parsed) -> Any:
    fws = cat.in_rg(cat.scenario.firewalls, a.text("resource_group"))
    return [res2.policy_json(cat, f) for f in fws if f.policy is not None]


def policy_show(cat: Catalog, a: Parsed) -> Any:
    return res2.policy_json(cat, _policy_fw(cat, a, a.require("name")))


def rcg_list(cat: Catalog, a: Parsed) -> Any:
    fw = _policy_fw(cat, a, a.require("policy"))
    assert fw.policy is not None
    return [res2.rcg_json(cat, fw, g.name) for g in fw.policy.groups]


def rcg_show(cat: Catalog, a: Parsed) -> Any:
    fw = _policy_fw(cat, a, a.require("policy"))
    return _named(cat, a, rcg_list(cat, a), lambda g: str(g["name"]),
                  f"{cat.scenario.firewall_policy_id(fw)}/ruleCollectionGroups")


def rcg_collections(cat: Catalog, a: Parsed) -> Any:
    fw = _policy_fw(cat, a, a.require("policy"))
    wanted = a.require("rcg")
    for group in rcg_list(cat, a):
        if same(str(group["name"]), wanted):
            return group["ruleCollections"]
    raise cat.child_missing(f"{cat.scenario.firewall_policy_id(fw)}/ruleCollectionGroups/"
                            f"{wanted}")


COMMANDS: list[Command] = [
    Command(("network", "firewall", "list"), (RG_OPTIONAL,), fw_list),
    Command(("network", "firewall", "show"), (RG, N), fw_show, None, ID_RG_NAME),
    Command(("network", "firewall", "ip-config", "list"), (RG, FW_NAME), ip_config_list),
    Command(("network", "firewall", "network-rule", "collection", "list"), (RG, FW_NAME),
            _NET[0]),
    Command(("network", "firewall", "network-rule", "collection", "show"),
            (RG, FW_NAME, opt("--name", "-n", "--collection-name", "-c", dest="name",
                              required=True)), _NET[1]),
    Command(("network", "firewall", "network-rule", "list"), (RG, FW_NAME, COLLECTION),
            _NET[2]),
    Command(("network", "firewall", "application-rule", "collection", "list"), (RG, FW_NAME),
            _APP[0]),
    Command(("network", "firewall", "application-rule", "collection", "show"),
            (RG, FW_NAME, opt("--name", "-n", "--collection-name", "-c", dest="name",
                              required=True)), _APP[1]),
    Command(("network", "firewall", "application-rule", "list"), (RG, FW_NAME, COLLECTION),
            _APP[2]),
    Command(("network", "firewall", "policy", "list"), (RG_OPTIONAL,), policy_list),
    Command(("network", "firewall", "policy", "show"), (RG, N), policy_show, None, ID_RG_NAME),
    Command(("network", "firewall", "policy", "rule-collection-group", "list"), (RG, POLICY),
            rcg_list),
    Command(("network", "firewall", "policy", "rule-collection-group", "show"),
            (RG, POLICY, N), rcg_show),
    Command(("network", "firewall", "policy", "rule-collection-group", "collection", "list"),
            (RG, POLICY, RCG), rcg_collections),
]
