"""Format 2's resources as ARM JSON, in the shape `az … show` prints (properties lifted).

Load balancers and their parts, public IPs, private endpoints (their NIC, zone group and the
target's connection), NAT gateways, Azure Firewalls (classic collections or a policy with rule
collection groups), storage accounts, SQL servers and flow logs. Field names and types are the
REST API's for these resource types; what the scenario does not say takes Azure's default.
"""

from __future__ import annotations

from typing import Any

from lab.az.catalog import Catalog, guid
from lab.model_v2 import (
    FIREWALL_SUBNET,
    PE_KINDS,
    Firewall,
    FlowLog,
    FwAppRule,
    FwCollection,
    FwNetworkRule,
    LoadBalancer,
    NatGateway,
    PrivateEndpoint,
    PublicIp,
    StorageAccount,
)

Json = dict[str, Any]
SUCCEEDED = "Succeeded"
STANDARD_REGIONAL = {"name": "Standard", "tier": "Regional"}
FLOW_LOG_CONTAINER = "insights-logs-flowlogflowevent"


def ref(resource_id: str) -> Json:
    return {"id": resource_id}


def _base(resource_id: str, name: str, rtype: str, group: str, location: str | None = None
          ) -> Json:
    body: Json = {"id": resource_id, "name": name, "type": rtype, "resourceGroup": group,
                  "provisioningState": SUCCEEDED}
    if location is not None:
        body["location"] = location
    return body


# -- load balancers ------------------------------------------------------------------------

LB = "Microsoft.Network/loadBalancers"


def _rules_using(cat: Catalog, lb: LoadBalancer, attr: str, name: str) -> list[Json]:
    s = cat.scenario
    return [ref(s.lb_child_id(lb, "loadBalancingRules", r.name)) for r in lb.rules
            if getattr(r, attr) == name]


def frontend_json(cat: Catalog, lb: LoadBalancer) -> Json:
    s, f = cat.scenario, lb.frontend
    body = _base(s.lb_child_id(lb, "frontendIPConfigurations", f.name), f.name,
                 f"{LB}/frontendIPConfigurations", lb.resource_group)
    body["loadBalancingRules"] = [ref(s.lb_child_id(lb, "loadBalancingRules", r.name))
                                  for r in lb.rules]
    if f.public_ip is not None:
        body["publicIPAddress"] = ref(s.public_ip_id(f.public_ip.name))
    else:
        body.update({"privateIPAddress": str(f.ip), "privateIPAddressVersion": "IPv4",
                     "privateIPAllocationMethod": "Static",
                     "subnet": ref(s.subnet_id(f.vnet or "", f.subnet or ""))})
    return body


def pool_json(cat: Catalog, lb: LoadBalancer, name: str) -> Json:
    s = cat.scenario
    pool = lb.pool(name)
    body = _base(s.lb_child_id(lb, "backendAddressPools", name), name,
                 f"{LB}/backendAddressPools", lb.resource_group)
    configs = [ref(f"{s.nic_id(vm)}/ipConfigurations/{s.ip_config_name(vm)}")
               for vm in (pool.vms if pool else ()) if s.vm(vm) is not None]
    body.update({"backendIPConfigurations": configs, "loadBalancerBackendAddresses": [],
                 "loadBalancingRules": _rules_using(cat, lb, "pool", name)})
    return body


def probe_json(cat: Catalog, lb: LoadBalancer, name: str) -> Json:
    s = cat.scenario
    p = lb.probe(name)
    assert p is not None
    body = _base(s.lb_child_id(lb, "probes", name), name, f"{LB}/probes", lb.resource_group)
    body.update({"intervalInSeconds": p.interval, "numberOfProbes": p.threshold,
                 "port": p.port, "probeThreshold": 1, "protocol": p.protocol,
                 "loadBalancingRules": _rules_using(cat, lb, "probe", name)})
    if p.path is not None:
        body["requestPath"] = p.path
    return body


def lb_rule_json(cat: Catalog, lb: LoadBalancer, name: str) -> Json:
    s = cat.scenario
    r = lb.rule(name)
    assert r is not None
    body = _base(s.lb_child_id(lb, "loadBalancingRules", name), name,
                 f"{LB}/loadBalancingRules", lb.resource_group)
    pool = ref(s.lb_child_id(lb, "backendAddressPools", r.pool))
    body.update({
        "backendAddressPool": pool, "backendAddressPools": [pool], "backendPort": r.backend_port,
        "disableOutboundSnat": False, "enableFloatingIP": False, "enableTcpReset": False,
        "frontendIPConfiguration": ref(s.lb_child_id(lb, "frontendIPConfigurations",
                                                     lb.frontend.name)),
        "frontendPort": r.frontend_port, "idleTimeoutInMinutes": 4, "loadDistribution": "Default",
        "protocol": r.protocol,
    })
    if r.probe is not None:
        body["probe"] = ref(s.lb_child_id(lb, "probes", r.probe))
    return body


def lb_json(cat: Catalog, lb: LoadBalancer) -> Json:
    s = cat.scenario
    lid = s.lb_id(lb)
    body = _base(lid, lb.name, LB, lb.resource_group, s.location)
    body.update({
        "backendAddressPools": [pool_json(cat, lb, p.name) for p in lb.pools],
        "frontendIPConfigurations": [frontend_json(cat, lb)],
        "inboundNatPools": [], "inboundNatRules": [],
        "loadBalancingRules": [lb_rule_json(cat, lb, r.name) for r in lb.rules],
        "outboundRules": [], "probes": [probe_json(cat, lb, p.name) for p in lb.probes],
        "resourceGuid": guid(lid), "sku": dict(STANDARD_REGIONAL),
    })
    return body


# -- public IPs ----------------------------------------------------------------------------


def _owner_config(cat: Catalog, owner: str, pip: PublicIp) -> Json:
    s = cat.scenario
    balancer = s.lb(owner)
    if balancer is not None:
        return {"ipConfiguration": ref(s.lb_child_id(balancer, "frontendIPConfigurations",
                                                     balancer.frontend.name))}
    fw = s.firewall(owner)
    if fw is not None:
        return {"ipConfiguration": ref(f"{s.firewall_id(fw)}/azureFirewallIpConfigurations/"
                                       f"{pip.name}")}
    return {"natGateway": ref(s.nat_gateway_id(owner))}


def public_ip_json(cat: Catalog, pip: PublicIp, group: str, owner: str) -> Json:
    s = cat.scenario
    pid = s.public_ip_id(pip.name)
    body = _base(pid, pip.name, "Microsoft.Network/publicIPAddresses", group, s.location)
    body.update({
        "ddosSettings": {"protectionMode": "VirtualNetworkInherited"},
        "idleTimeoutInMinutes": 4, "ipAddress": str(pip.ip), "ipTags": [],
        "publicIPAddressVersion": "IPv4", "publicIPAllocationMethod": "Static",
        "resourceGuid": guid(pid), "sku": dict(STANDARD_REGIONAL),
        **_owner_config(cat, owner, pip),
    })
    return body


# -- private endpoints ---------------------------------------------------------------------


def pe_json(cat: Catalog, pe: PrivateEndpoint) -> Json:
    s = cat.scenario
    pid = s.pe_id(pe)
    body = _base(pid, pe.name, "Microsoft.Network/privateEndpoints", pe.resource_group,
                 s.location)
    conn = _base(f"{pid}/privateLinkServiceConnections/{pe.name}", pe.name,
                 "Microsoft.Network/privateEndpoints/privateLinkServiceConnections",
                 pe.resource_group)
    conn.update({"groupIds": [pe.target.kind], "privateLinkServiceId": s.pe_target_id(pe),
                 "privateLinkServiceConnectionState": {
                     "actionsRequired": "None",
                     "description": "Auto-Approved" if pe.state == "Approved" else "",
                     "status": pe.state}})
    body.update({
        "customDnsConfigs": [{"fqdn": pe.target.fqdn, "ipAddresses": [str(pe.ip)]}],
        "customNetworkInterfaceName": pe.nic_name or "", "ipConfigurations": [],
        "manualPrivateLinkServiceConnections": [],
        "networkInterfaces": [ref(s.pe_nic_id(pe))],
        "privateLinkServiceConnections": [conn],
        "subnet": ref(s.subnet_id(pe.vnet, pe.subnet)),
    })
    return body


def zone_group_json(cat: Catalog, pe: PrivateEndpoint) -> Json:
    s = cat.scenario
    body = _base(f"{s.pe_id(pe)}/privateDnsZoneGroups/default", "default",
                 "Microsoft.Network/privateEndpoints/privateDnsZoneGroups", pe.resource_group)
    body["privateDnsZoneConfigs"] = [{
        "name": zone.replace(".", "-"), "privateDnsZoneId": s.zone_id(zone),
        "recordSets": [{"fqdn": f"{pe.target.name}.{zone}.", "ipAddresses": [str(pe.ip)],
                        "provisioningState": SUCCEEDED, "recordSetName": pe.target.name,
                        "recordType": "A", "ttl": 10}],
    } for zone in pe.zone_group or ()]
    return body


def pe_nic_json(cat: Catalog, pe: PrivateEndpoint) -> Json:
    s = cat.scenario
    nic_id = s.pe_nic_id(pe)
    config = _base(f"{nic_id}/ipConfigurations/{s.pe_ip_config_name(pe)}",
                   s.pe_ip_config_name(pe), "Microsoft.Network/networkInterfaces/ipConfigurations",
                   pe.resource_group)
    config.update({
        "primary": True, "privateIPAddress": str(pe.ip), "privateIPAddressVersion": "IPv4",
        "privateIPAllocationMethod": "Static",
        "privateLinkConnectionProperties": {"fqdns": [pe.target.fqdn],
                                            "groupId": pe.target.kind,
                                            "requiredMemberName": pe.target.kind},
        "subnet": ref(s.subnet_id(pe.vnet, pe.subnet)),
    })
    body = _base(nic_id, s.pe_nic_name(pe), "Microsoft.Network/networkInterfaces",
                 pe.resource_group, s.location)
    body.update({
        "disableTcpStateTracking": False,
        "dnsSettings": {"appliedDnsServers": [], "dnsServers": []},
        "enableAcceleratedNetworking": False, "enableIPForwarding": False,
        "hostedWorkloads": [], "ipConfigurations": [config],
        "macAddress": s.mac_address(nic_id), "nicType": "Standard",
        "privateEndpoint": ref(s.pe_id(pe)), "resourceGuid": guid(nic_id),
        "tapConfigurations": [], "vnetEncryptionSupported": False,
    })
    return body


def target_connection_json(cat: Catalog, pe: PrivateEndpoint) -> Json:
    """The target's side of the connection (``privateEndpointConnections`` of a SQL server)."""
    s = cat.scenario
    return {"id": f"{s.pe_target_id(pe)}/privateEndpointConnections/{pe.name}-"
                  f"{guid(s.pe_id(pe))}",
            "properties": {"groupIds": [pe.target.kind], "privateEndpoint": ref(s.pe_id(pe)),
                           "privateLinkServiceConnectionState": {
                               "actionsRequired": "None", "description": "",
                               "status": pe.state},
                           "provisioningState": "Ready"}}


def sql_server_json(cat: Catalog, pe: PrivateEndpoint) -> Json:
    s = cat.scenario
    t = pe.target
    tid = s.pe_target_id(pe)
    conns = [target_connection_json(cat, p) for p in s.private_endpoints
             if s.pe_target_id(p).lower() == tid.lower()]
    return {"administratorLogin": "sqladmin", "fullyQualifiedDomainName": t.fqdn, "id": tid,
            "kind": "v12.0", "location": s.location, "minimalTlsVersion": "1.2",
            "name": t.name, "privateEndpointConnections": conns,
            "publicNetworkAccess": t.public_access, "resourceGroup": t.resource_group,
            "restrictOutboundNetworkAccess": "Disabled", "state": "Ready",
            "type": PE_KINDS["sqlServer"][0], "version": "12.0"}


# -- NAT gateways --------------------------------------------------------------------------


def nat_gateway_json(cat: Catalog, ngw: NatGateway) -> Json:
    s = cat.scenario
    nid = s.nat_gateway_id(ngw)
    body = _base(nid, ngw.name, "Microsoft.Network/natGateways", ngw.resource_group, s.location)
    body.update({"idleTimeoutInMinutes": ngw.idle_timeout,
                 "publicIpAddresses": [ref(s.public_ip_id(p.name)) for p in ngw.public_ips],
                 "resourceGuid": guid(nid), "sku": {"name": "Standard"},
                 "subnets": [ref(s.subnet_id(v, n)) for v, n in ngw.subnets]})
    return body


# -- Azure Firewall ------------------------------------------------------------------------


def _net_rule(r: FwNetworkRule, policy: bool) -> Json:
    body: Json = {"description": None, "destinationAddresses": list(r.destinations),
                  "destinationFqdns": [], "destinationIpGroups": [],
                  "destinationPorts": r.ports.split(","), "name": r.name,
                  "sourceAddresses": list(r.sources), "sourceIpGroups": []}
    if policy:
        body.update({"ipProtocols": list(r.protocols), "ruleType": "NetworkRule"})
    else:
        body["protocols"] = list(r.protocols)
    return body


def _app_rule(r: FwAppRule, policy: bool) -> Json:
    body: Json = {"description": None, "fqdnTags": [], "name": r.name,
                  "protocols": [{"port": port, "protocolType": proto}
                                for proto, port in r.protocols],
                  "sourceAddresses": list(r.sources), "sourceIpGroups": [],
                  "targetFqdns": list(r.fqdns)}
    if policy:
        body.update({"destinationAddresses": [], "httpHeadersToInsert": [],
                     "ruleType": "ApplicationRule", "targetUrls": [], "terminateTLS": False,
                     "webCategories": []})
    return body


def _rules_json(c: FwCollection, policy: bool) -> list[Json]:
    return [_net_rule(r, policy) if isinstance(r, FwNetworkRule) else _app_rule(r, policy)
            for r in c.rules if isinstance(r, (FwNetworkRule, FwAppRule))]


def classic_collection_json(cat: Catalog, fw: Firewall, c: FwCollection) -> Json:
    kind = "networkRuleCollections" if c.type == "Network" else "applicationRuleCollections"
    body = _base(f"{cat.scenario.firewall_id(fw)}/{kind}/{c.name}", c.name,
                 f"Microsoft.Network/azureFirewalls/{kind}", fw.resource_group)
    del body["type"]
    body.update({"action": {"type": c.action}, "priority": c.priority,
                 "rules": _rules_json(c, False)})
    return body


def policy_collection_json(c: FwCollection) -> Json:
    return {"action": {"type": c.action}, "name": c.name, "priority": c.priority,
            "ruleCollectionType": "FirewallPolicyFilterRuleCollection",
            "rules": _rules_json(c, True)}


def fw_ip_configs_json(cat: Catalog, fw: Firewall) -> list[Json]:
    s = cat.scenario
    out = []
    for i, pip in enumerate(fw.public_ips):
        body = _base(f"{s.firewall_id(fw)}/azureFirewallIpConfigurations/{pip.name}", pip.name,
                     "Microsoft.Network/azureFirewalls/azureFirewallIpConfigurations",
                     fw.resource_group)
        body["publicIPAddress"] = ref(s.public_ip_id(pip.name))
        if i == 0:
            body.update({"privateIPAddress": str(fw.private_ip),
                         "subnet": ref(s.subnet_id(fw.vnet, FIREWALL_SUBNET))})
        out.append(body)
    return out


def firewall_json(cat: Catalog, fw: Firewall) -> Json:
    s = cat.scenario
    body = _base(s.firewall_id(fw), fw.name, "Microsoft.Network/azureFirewalls",
                 fw.resource_group, s.location)
    classic = fw.policy is None
    body.update({
        "additionalProperties": {},
        "applicationRuleCollections": [classic_collection_json(cat, fw, c)
                                       for c in fw.collections if c.type == "Application"]
        if classic else [],
        "ipConfigurations": fw_ip_configs_json(cat, fw), "natRuleCollections": [],
        "networkRuleCollections": [classic_collection_json(cat, fw, c)
                                   for c in fw.collections if c.type == "Network"]
        if classic else [],
        "sku": {"name": "AZFW_VNet", "tier": fw.tier}, "threatIntelMode": "Alert",
    })
    if fw.policy is not None:
        body["firewallPolicy"] = ref(s.firewall_policy_id(fw))
    return body


def policy_json(cat: Catalog, fw: Firewall) -> Json:
    s = cat.scenario
    assert fw.policy is not None
    pid = s.firewall_policy_id(fw)
    body = _base(pid, fw.policy.name, "Microsoft.Network/FirewallPolicies", fw.resource_group,
                 s.location)
    body.update({"childPolicies": [], "firewalls": [ref(s.firewall_id(fw))],
                 "ruleCollectionGroups": [ref(s.rcg_id(fw, g.name)) for g in fw.policy.groups],
                 "sku": {"tier": fw.tier}, "threatIntelMode": "Alert"})
    return body


def rcg_json(cat: Catalog, fw: Firewall, group: str) -> Json:
    assert fw.policy is not None
    g = next(x for x in fw.policy.groups if x.name == group)
    body = _base(cat.scenario.rcg_id(fw, g.name), g.name,
                 "Microsoft.Network/FirewallPolicies/RuleCollectionGroups", fw.resource_group)
    body.update({"priority": g.priority,
                 "ruleCollections": [policy_collection_json(c) for c in g.collections]})
    return body


# -- storage and flow logs -----------------------------------------------------------------


def storage_account_json(cat: Catalog, name: str, group: str, public_access: str = "Enabled"
                         ) -> Json:
    s = cat.scenario
    sid = (f"/subscriptions/{s.subscription}/resourceGroups/{group}/providers/"
           f"Microsoft.Storage/storageAccounts/{name}")
    endpoints = {k: f"https://{name}.{k}.core.windows.net/"
                 for k in ("blob", "dfs", "file", "queue", "table")}
    endpoints["web"] = f"https://{name}.z6.web.core.windows.net/"
    return {"accessTier": "Hot", "allowBlobPublicAccess": False, "allowSharedKeyAccess": False,
            "creationTime": "2026-01-05T09:12:44.000000+00:00",
            "enableHttpsTrafficOnly": True, "id": sid, "kind": "StorageV2",
            "location": s.location, "minimumTlsVersion": "TLS1_2", "name": name,
            "networkRuleSet": {"bypass": "AzureServices", "defaultAction": "Allow",
                               "ipRules": [], "virtualNetworkRules": []},
            "primaryEndpoints": endpoints, "primaryLocation": s.location,
            "provisioningState": SUCCEEDED, "publicNetworkAccess": public_access,
            "resourceGroup": group, "sku": {"name": "Standard_LRS", "tier": "Standard"},
            "statusOfPrimary": "available", "type": "Microsoft.Storage/storageAccounts"}


def storage_accounts(cat: Catalog) -> list[Json]:
    """Flow-log accounts, and storage accounts that private endpoints target."""
    s = cat.scenario
    out = [storage_account_json(cat, a.name, a.resource_group) for a in s.storage_accounts]
    seen = {a.name for a in s.storage_accounts}
    for pe in s.private_endpoints:
        t = pe.target
        if t.resource_type == "Microsoft.Storage/storageAccounts" and t.name not in seen:
            seen.add(t.name)
            out.append(storage_account_json(cat, t.name, t.resource_group, t.public_access))
    return out


def flow_log_target_id(cat: Catalog, fl: FlowLog) -> str:
    s = cat.scenario
    if "/" in fl.target:
        vnet, _, subnet = fl.target.partition("/")
        return s.subnet_id(vnet, subnet)
    if s.vnet(fl.target) is not None:
        return s.vnet_id(fl.target)
    return s.nic_id(fl.target)


def flow_log_json(cat: Catalog, fl: FlowLog, account: StorageAccount) -> Json:
    s = cat.scenario
    fid = s.flow_log_id(fl)
    target = flow_log_target_id(cat, fl)
    body = _base(fid, fl.name, "Microsoft.Network/networkWatchers/flowLogs", "NetworkWatcherRG",
                 s.location)
    body.update({
        "enabled": True,
        "flowAnalyticsConfiguration": {"networkWatcherFlowAnalyticsConfiguration": {
            "enabled": False, "trafficAnalyticsInterval": 60}},
        "format": {"type": "JSON", "version": 2},
        "retentionPolicy": {"days": fl.retention_days, "enabled": fl.retention_days > 0},
        "storageId": s.storage_id(account), "targetResourceGuid": guid(target),
        "targetResourceId": target,
    })
    return body
