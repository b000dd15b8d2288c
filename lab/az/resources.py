"""The scenario's resources as ARM JSON, in the shape `az … show` prints (camelCase, ids, types).

Fields are the ones the Azure REST API returns for these resource types; optional references
(an NSG on a subnet, a route table) are omitted when absent, as az's generated commands omit
unset properties. ``resourceGroup`` on nested references is added later by the output layer.
"""

from __future__ import annotations

from typing import Any

from lab.az.catalog import Catalog, guid, same
from lab.model import Nsg, NsgRule, Peering, PrivateDnsZone, Route, RouteTable, Subnet, Vm, VNet
from lab.model_v2 import FIREWALL_SUBNET

Json = dict[str, Any]
SUCCEEDED = "Succeeded"

#: Azure's default security rules: name, priority, direction, access, source, destination, text.
DEFAULT_RULES = (
    ("AllowVnetInBound", 65000, "Inbound", "Allow", "VirtualNetwork", "VirtualNetwork",
     "Allow inbound traffic from all VMs in VNET"),
    ("AllowAzureLoadBalancerInBound", 65001, "Inbound", "Allow", "AzureLoadBalancer", "*",
     "Allow inbound traffic from azure load balancer"),
    ("DenyAllInBound", 65500, "Inbound", "Deny", "*", "*", "Deny all inbound traffic"),
    ("AllowVnetOutBound", 65000, "Outbound", "Allow", "VirtualNetwork", "VirtualNetwork",
     "Allow outbound traffic from all VMs to all VMs in VNET"),
    ("AllowInternetOutBound", 65001, "Outbound", "Allow", "*", "Internet",
     "Allow outbound traffic from all VMs to Internet"),
    ("DenyAllOutBound", 65500, "Outbound", "Deny", "*", "*", "Deny all outbound traffic"),
)


def ref(resource_id: str) -> Json:
    return {"id": resource_id}


def mac_address(cat: Catalog, vm: Vm) -> str:
    """A stable MAC in Azure's OUI (00-0D-3A), as az prints NIC MACs (lab/model.py)."""
    return cat.scenario.mac_address(cat.scenario.nic_id(vm), vm.name)


def _base(cat: Catalog, resource_id: str, name: str, rtype: str, group: str,
          location: str | None = None) -> Json:
    body: Json = {"id": resource_id, "name": name, "type": rtype, "resourceGroup": group,
                  "provisioningState": SUCCEEDED}
    if location is not None:
        body["location"] = location
    return body


# -- virtual networks ----------------------------------------------------------------------


def subnet_json(cat: Catalog, vnet: VNet, subnet: Subnet) -> Json:
    s = cat.scenario
    body = _base(cat, s.subnet_id(vnet.name, subnet.name), subnet.name,
                 "Microsoft.Network/virtualNetworks/subnets", vnet.resource_group)
    body.update({"addressPrefix": str(subnet.prefix), "delegations": [],
                 "privateEndpointNetworkPolicies": "Disabled",
                 "privateLinkServiceNetworkPolicies": "Enabled"})
    configs = [ref(f"{s.nic_id(vm)}/ipConfigurations/{s.ip_config_name(vm)}")
               for vm in s.vms if same(vm.vnet, vnet.name) and same(vm.subnet, subnet.name)]
    if s.format >= 2:
        body["privateEndpointNetworkPolicies"] = subnet.private_endpoint_network_policies
        configs += _format2_configs(cat, vnet, subnet)
        pes = [ref(s.pe_id(pe)) for pe in s.private_endpoints
               if pe.vnet == vnet.name and pe.subnet == subnet.name]
        if pes:
            body["privateEndpoints"] = pes
        ngw = s.nat_gateway_of(vnet.name, subnet.name)
        if ngw is not None:
            body["natGateway"] = ref(s.nat_gateway_id(ngw))
    if configs:
        body["ipConfigurations"] = configs
    if subnet.nsg:
        body["networkSecurityGroup"] = ref(s.nsg_id(subnet.nsg))
    if subnet.route_table:
        body["routeTable"] = ref(s.route_table_id(subnet.route_table))
    return body


def _format2_configs(cat: Catalog, vnet: VNet, subnet: Subnet) -> list[Json]:
    """IP configurations format 2 puts in a subnet: private endpoint NICs, internal load
    balancer frontends, the firewall's first IP configuration."""
    s = cat.scenario
    out = [ref(f"{s.pe_nic_id(pe)}/ipConfigurations/{s.pe_ip_config_name(pe)}")
           for pe in s.private_endpoints if pe.vnet == vnet.name and pe.subnet == subnet.name]
    out += [ref(s.lb_child_id(b, "frontendIPConfigurations", b.frontend.name))
            for b in s.load_balancers if b.frontend.vnet == vnet.name
            and b.frontend.subnet == subnet.name]
    out += [ref(f"{s.firewall_id(fw)}/azureFirewallIpConfigurations/{fw.public_ips[0].name}")
            for fw in s.firewalls if fw.vnet == vnet.name and subnet.name == FIREWALL_SUBNET]
    return out


def peering_json(cat: Catalog, vnet: VNet, peering: Peering) -> Json:
    s = cat.scenario
    body = _base(cat, s.peering_id(vnet.name, peering.name), peering.name,
                 "Microsoft.Network/virtualNetworks/virtualNetworkPeerings", vnet.resource_group)
    remote = s.vnet(peering.remote_vnet)
    space = {"addressPrefixes": [str(p) for p in remote.address_space] if remote else []}
    body.update({
        "allowForwardedTraffic": peering.allow_forwarded_traffic,
        "allowGatewayTransit": False,
        "allowVirtualNetworkAccess": True,
        "doNotVerifyRemoteGateways": False,
        "peeringState": peering.state,
        "remoteAddressSpace": space,
        "remoteVirtualNetworkAddressSpace": space,
        "remoteVirtualNetwork": ref(s.vnet_id(peering.remote_vnet)) if remote else None,
        "useRemoteGateways": peering.use_remote_gateways,
    })
    if peering.state == "Connected":
        body["peeringSyncLevel"] = "FullyInSync"
    return body


def vnet_json(cat: Catalog, vnet: VNet) -> Json:
    s = cat.scenario
    vid = s.vnet_id(vnet.name)
    body = _base(cat, vid, vnet.name, "Microsoft.Network/virtualNetworks", vnet.resource_group,
                 s.location)
    body.update({
        "addressSpace": {"addressPrefixes": [str(p) for p in vnet.address_space]},
        "dhcpOptions": {"dnsServers": [str(d) for d in vnet.dns_servers]},
        "enableDdosProtection": False,
        "resourceGuid": guid(vid),
        "subnets": [subnet_json(cat, vnet, sn) for sn in vnet.subnets],
        "virtualNetworkPeerings": [peering_json(cat, vnet, p) for p in vnet.peerings],
    })
    return body


# -- network security groups ---------------------------------------------------------------


def _split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def _one_or_many(body: Json, single: str, plural: str, value: str) -> None:
    parts = _split(value)
    if len(parts) == 1:
        body[single] = parts[0]
        body[plural] = []
    else:
        body[plural] = parts


def rule_json(cat: Catalog, nsg: Nsg, rule: NsgRule) -> Json:
    body = _base(cat, cat.scenario.rule_id(nsg.name, rule.name), rule.name,
                 "Microsoft.Network/networkSecurityGroups/securityRules", nsg.resource_group)
    body.update({"access": rule.access, "direction": rule.direction, "priority": rule.priority,
                 "protocol": rule.protocol})
    _one_or_many(body, "sourceAddressPrefix", "sourceAddressPrefixes", rule.source)
    _one_or_many(body, "sourcePortRange", "sourcePortRanges", rule.source_ports)
    _one_or_many(body, "destinationAddressPrefix", "destinationAddressPrefixes", rule.destination)
    _one_or_many(body, "destinationPortRange", "destinationPortRanges", rule.destination_ports)
    return body


def default_rules_json(cat: Catalog, nsg: Nsg) -> list[Json]:
    rules = []
    for name, priority, direction, access, source, dest, text in DEFAULT_RULES:
        body = _base(cat, cat.scenario.default_rule_id(nsg.name, name), name,
                     "Microsoft.Network/networkSecurityGroups/defaultSecurityRules",
                     nsg.resource_group)
        body.update({
            "access": access, "description": text, "destinationAddressPrefix": dest,
            "destinationAddressPrefixes": [], "destinationPortRange": "*",
            "destinationPortRanges": [], "direction": direction, "priority": priority,
            "protocol": "*", "sourceAddressPrefix": source, "sourceAddressPrefixes": [],
            "sourcePortRange": "*", "sourcePortRanges": [],
        })
        rules.append(body)
    return rules


def nsg_json(cat: Catalog, nsg: Nsg) -> Json:
    s = cat.scenario
    nid = s.nsg_id(nsg.name)
    body = _base(cat, nid, nsg.name, "Microsoft.Network/networkSecurityGroups",
                 nsg.resource_group, s.location)
    body.update({
        "defaultSecurityRules": default_rules_json(cat, nsg),
        "resourceGuid": guid(nid),
        "securityRules": [rule_json(cat, nsg, r) for r in nsg.rules],
    })
    subnets = [ref(s.subnet_id(v.name, sn.name)) for v in s.vnets for sn in v.subnets
               if sn.nsg and same(sn.nsg, nsg.name)]
    nics = [ref(s.nic_id(vm)) for vm in s.vms if vm.nic_nsg and same(vm.nic_nsg, nsg.name)]
    if subnets:
        body["subnets"] = subnets
    if nics:
        body["networkInterfaces"] = nics
    return body


# -- route tables --------------------------------------------------------------------------


def route_json(cat: Catalog, table: RouteTable, route: Route) -> Json:
    body = _base(cat, cat.scenario.route_id(table.name, route.name), route.name,
                 "Microsoft.Network/routeTables/routes", table.resource_group)
    body.update({"addressPrefix": str(route.prefix), "hasBgpOverride": False,
                 "nextHopType": route.next_hop})
    if route.next_hop_ip is not None:
        body["nextHopIpAddress"] = str(route.next_hop_ip)
    return body


def route_table_json(cat: Catalog, table: RouteTable) -> Json:
    s = cat.scenario
    tid = s.route_table_id(table.name)
    body = _base(cat, tid, table.name, "Microsoft.Network/routeTables", table.resource_group,
                 s.location)
    body.update({"disableBgpRoutePropagation": False, "resourceGuid": guid(tid),
                 "routes": [route_json(cat, table, r) for r in table.routes]})
    subnets = [ref(s.subnet_id(v.name, sn.name)) for v in s.vnets for sn in v.subnets
               if sn.route_table and same(sn.route_table, table.name)]
    if subnets:
        body["subnets"] = subnets
    return body


# -- private DNS ---------------------------------------------------------------------------


def zone_json(cat: Catalog, zone: PrivateDnsZone) -> Json:
    body = _base(cat, cat.scenario.zone_id(zone.name), zone.name,
                 "Microsoft.Network/privateDnsZones", zone.resource_group, "global")
    body.update({
        "maxNumberOfRecordSets": 25000, "maxNumberOfVirtualNetworkLinks": 1000,
        "maxNumberOfVirtualNetworkLinksWithRegistration": 100,
        "numberOfRecordSets": len(zone.records) + 1,  # + the SOA record
        "numberOfVirtualNetworkLinks": len(zone.linked_vnets),
        "numberOfVirtualNetworkLinksWithRegistration": 0, "tags": {},
    })
    return body


def link_json(cat: Catalog, zone: PrivateDnsZone, vnet: str) -> Json:
    s = cat.scenario
    body = _base(cat, s.zone_link_id(zone.name, vnet), vnet,
                 "Microsoft.Network/privateDnsZones/virtualNetworkLinks", zone.resource_group,
                 "global")
    body.update({"registrationEnabled": False, "resolutionPolicy": "Default", "tags": {},
                 "virtualNetwork": ref(s.vnet_id(vnet)),
                 "virtualNetworkLinkState": "Completed"})
    return body


def record_set_json(cat: Catalog, zone: PrivateDnsZone, name: str) -> Json:
    zid = cat.scenario.zone_id(zone.name)
    body = _base(cat, f"{zid}/A/{name}", name, "Microsoft.Network/privateDnsZones/A",
                 zone.resource_group)
    del body["provisioningState"]
    body.update({"aRecords": [{"ipv4Address": str(zone.records[name])}],
                 "fqdn": f"{name}.{zone.name}.", "isAutoRegistered": False, "ttl": 10})
    return body


# -- NICs and VMs --------------------------------------------------------------------------


def dns_suffix(cat: Catalog, vnet: str) -> str:
    """The VNet's internal DNS suffix (NIC ``internalDomainNameSuffix``, the guest's search)."""
    return f"{guid(cat.scenario.vnet_id(vnet)).replace('-', '')[:26]}.ax.internal.cloudapp.net"


def nic_json(cat: Catalog, vm: Vm) -> Json:
    s = cat.scenario
    nic_id = s.nic_id(vm)
    vnet = s.vnet(vm.vnet)
    config = _base(cat, f"{nic_id}/ipConfigurations/{s.ip_config_name(vm)}",
                   s.ip_config_name(vm), "Microsoft.Network/networkInterfaces/ipConfigurations",
                   vm.resource_group)
    config.update({"primary": True, "privateIPAddress": str(vm.ip),
                   "privateIPAddressVersion": "IPv4", "privateIPAllocationMethod": "Static",
                   "subnet": ref(s.subnet_id(vm.vnet, vm.subnet))})
    pools = [ref(s.lb_child_id(b, "backendAddressPools", p.name)) for b in s.load_balancers
             for p in b.pools if vm.name in p.vms]
    if pools:
        config["loadBalancerBackendAddressPools"] = pools
    body = _base(cat, nic_id, s.nic_name(vm), "Microsoft.Network/networkInterfaces",
                 vm.resource_group, s.location)
    body.update({
        "disableTcpStateTracking": False,
        "dnsSettings": {
            "appliedDnsServers": [str(d) for d in vnet.dns_servers] if vnet else [],
            "dnsServers": [],
            "internalDomainNameSuffix": dns_suffix(cat, vm.vnet),
        },
        "enableAcceleratedNetworking": False,
        "enableIPForwarding": vm.ip_forwarding,
        "hostedWorkloads": [],
        "ipConfigurations": [config],
        "macAddress": mac_address(cat, vm),
        "nicType": "Standard",
        "primary": True,
        "resourceGuid": guid(nic_id),
        "tapConfigurations": [],
        "virtualMachine": ref(s.vm_id(vm)),
        "vnetEncryptionSupported": False,
    })
    if vm.nic_nsg:
        body["networkSecurityGroup"] = ref(s.nsg_id(vm.nic_nsg))
    return body


EXTENSION_NAME = "NetworkWatcherAgentLinux"
POWER_TEXT = {"running": "VM running", "stopped": "VM stopped", "deallocated": "VM deallocated"}


def vm_json(cat: Catalog, vm: Vm, details: bool = False) -> Json:
    s = cat.scenario
    vid = s.vm_id(vm)
    body = _base(cat, vid, vm.name, "Microsoft.Compute/virtualMachines", vm.resource_group,
                 s.location)
    body.update({
        "hardwareProfile": {"vmSize": "Standard_D2s_v5"},
        "networkProfile": {"networkInterfaces": [{"id": s.nic_id(vm), "primary": True}]},
        "osProfile": {"adminUsername": "azureuser", "allowExtensionOperations": True,
                      "computerName": vm.name,
                      "linuxConfiguration": {"disablePasswordAuthentication": True,
                                             "provisionVMAgent": True},
                      "secrets": []},
        "storageProfile": {
            "dataDisks": [],
            "imageReference": {"offer": "0001-com-ubuntu-server-jammy", "publisher": "Canonical",
                               "sku": "22_04-lts-gen2", "version": "latest"},
            "osDisk": {"caching": "ReadWrite", "createOption": "FromImage", "diskSizeGB": 30,
                       "name": f"{vm.name}_OsDisk_1_{guid(vid).replace('-', '')}",
                       "osType": "Linux"},
        },
        "vmId": guid(vid),
    })
    if vm.network_watcher_extension:
        body["resources"] = [{"id": f"{vid}/extensions/{EXTENSION_NAME}"}]
    if details:
        body.update({"fqdns": "", "macAddresses": mac_address(cat, vm),
                     "powerState": POWER_TEXT.get(vm.power_state, vm.power_state),
                     "privateIps": str(vm.ip), "publicIps": ""})
    return body


def instance_view_json(cat: Catalog, vm: Vm) -> Json:
    """`az vm get-instance-view`: the VM and its ``instanceView`` (power, agent, extension)."""
    body = vm_json(cat, vm)
    running = vm.power_state == "running"
    statuses: list[Json] = [
        {"code": "ProvisioningState/succeeded", "displayStatus": "Provisioning succeeded",
         "level": "Info", "time": cat.scenario.now.isoformat()},
        {"code": f"PowerState/{vm.power_state}",
         "displayStatus": POWER_TEXT.get(vm.power_state, vm.power_state), "level": "Info"},
    ]
    view: Json = {"hyperVGeneration": "V2", "statuses": statuses}
    if vm.power_state != "deallocated":
        view.update({"computerName": vm.name, "osName": "ubuntu", "osVersion": "22.04"})
        agent_status = ({"code": "ProvisioningState/succeeded", "displayStatus": "Ready",
                         "level": "Info", "message": "Guest Agent is running"} if running else
                        {"code": "ProvisioningState/Unavailable", "displayStatus": "Not Ready",
                         "level": "Warning",
                         "message": "VM status blob is found but not yet populated."})
        view["vmAgent"] = {"statuses": [agent_status], "vmAgentVersion": "2.10.0.8"}
    if vm.network_watcher_extension and vm.power_state != "deallocated":
        view["extensions"] = [{
            "name": EXTENSION_NAME,
            "statuses": [{"code": "ProvisioningState/succeeded",
                          "displayStatus": "Provisioning succeeded", "level": "Info",
                          "message": "Enable succeeded"}],
            "type": "Microsoft.Azure.NetworkWatcher.NetworkWatcherAgentLinux",
            "typeHandlerVersion": "1.4.3422.1",
        }]
    body["instanceView"] = view
    return body
