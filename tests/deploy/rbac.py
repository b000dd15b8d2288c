"""What Ghost does in Azure, as RBAC actions: the Azure SDK calls in ``cloud/`` (found by AST)
and the ``az`` reads the safety gate calls SAFE (its allowlist, core/safety/rules/az_reads.py).

``tests/deploy/test_role.py`` compares the union with ``deploy/azure/ghost-role.json`` and
``deploy/azure/ghost-storage-role.json``: a call without a mapping, an action the roles lack and
an action nothing uses all fail. When you add an SDK call to ``cloud/``, add it to ``SDK_ACTIONS``
with the RBAC actions Azure checks for it (learn.microsoft.com "Azure permissions for
Networking/Compute/Storage"), then to the role file.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

#: Network Watcher checks these on the capture's storage account when a capture is created:
#: it writes the capture with a service SAS it obtains on the caller's behalf.
_CAPTURE_STORAGE = ("Microsoft.Storage/storageAccounts/read",
                    "Microsoft.Storage/storageAccounts/listServiceSas/action")
_BLOBS = "Microsoft.Storage/storageAccounts/blobServices/containers/blobs"

#: SDK operation key -> RBAC actions (control plane) and data actions ("data:" prefix).
#: Keys: "<operation group>.<method>" for management clients, "blob.<method>" for
#: azure-storage-blob clients, "arm:<function>" for raw ARM GETs (``_arm_get``) by the function
#: that makes them.
SDK_ACTIONS: dict[str, tuple[str, ...]] = {
    "network_watchers.list_all": ("Microsoft.Network/networkWatchers/read",),
    "packet_captures.begin_create": (
        "Microsoft.Network/networkWatchers/packetCaptures/write",
        "Microsoft.Compute/virtualMachines/read",  # the target VM
        *_CAPTURE_STORAGE),
    "packet_captures.begin_get_status": (
        "Microsoft.Network/networkWatchers/packetCaptures/queryStatus/action",),
    "packet_captures.begin_delete": ("Microsoft.Network/networkWatchers/packetCaptures/delete",),
    "packet_captures.list": ("Microsoft.Network/networkWatchers/packetCaptures/read",),
    # raw ARM GETs through the network client's pipeline (no azure-mgmt-compute)
    "arm:detect_target": ("Microsoft.Compute/virtualMachines/read",
                          "Microsoft.ContainerService/managedClusters/read"),
    "arm:_require_extension": ("Microsoft.Compute/virtualMachines/extensions/read",),
    # azure-storage-blob
    "blob.get_container_client": (),  # builds a client, no request
    "blob.get_blob_client": (),
    "blob.exists": ("Microsoft.Storage/storageAccounts/blobServices/containers/read",),
    "blob.download_blob": (f"data:{_BLOBS}/read",),
    "blob.readinto": (f"data:{_BLOBS}/read",),
    "blob.delete_blob": (f"data:{_BLOBS}/delete",),
}

_NW = "Microsoft.Network/networkWatchers"
_N = "Microsoft.Network"
_VM = "Microsoft.Compute/virtualMachines"
_PDNS = f"{_N}/privateDnsZones"
_DNS = f"{_N}/dnsZones"

#: The gate's clean ``az`` reads (core/safety/rules/az_reads.py CLEAN_READS) Ghost's identity may
#: run: "group words: verbs" -> the RBAC actions they need. Every clean read is either here or
#: in ``AZ_DECLINED``; the test fails on a read in neither.
_AZ_TABLE: dict[str, tuple[str, ...]] = {
    "network watcher: list": (f"{_NW}/read",),
    "network watcher: test-ip-flow": (f"{_NW}/ipFlowVerify/action",),
    "network watcher: show-next-hop": (f"{_NW}/nextHop/action",),
    "network watcher: test-connectivity": (f"{_NW}/connectivityCheck/action",),
    "network watcher: show-topology": (f"{_NW}/topology/action",),
    "network watcher: run-configuration-diagnostic": (
        f"{_NW}/networkConfigurationDiagnostic/action",),
    "network watcher: show-security-group-view": (f"{_NW}/securityGroupView/action",),
    "network watcher flow-log: list show": (f"{_NW}/flowLogs/read",),
    "network watcher connection-monitor: list show": (f"{_NW}/connectionMonitors/read",),
    "network watcher packet-capture: list show": (f"{_NW}/packetCaptures/read",),
    "network watcher packet-capture: show-status": (f"{_NW}/packetCaptures/queryStatus/action",),
    "network vnet: list show": (f"{_N}/virtualNetworks/read",),
    "network vnet subnet: list show": (f"{_N}/virtualNetworks/subnets/read",),
    "network vnet peering: list show": (f"{_N}/virtualNetworks/virtualNetworkPeerings/read",),
    "network nsg: list show": (f"{_N}/networkSecurityGroups/read",),
    "network nsg rule: list show": (f"{_N}/networkSecurityGroups/securityRules/read",),
    "network route-table: list show": (f"{_N}/routeTables/read",),
    "network route-table route: list show": (f"{_N}/routeTables/routes/read",),
    "network nic: list show": (f"{_N}/networkInterfaces/read",),
    "network nic: show-effective-route-table": (
        f"{_N}/networkInterfaces/effectiveRouteTable/action",),
    "network nic: list-effective-nsg": (
        f"{_N}/networkInterfaces/effectiveNetworkSecurityGroups/action",),
    "network nic ip-config: list show": (f"{_N}/networkInterfaces/ipconfigurations/read",),
    "network public-ip: list show": (f"{_N}/publicIPAddresses/read",),
    "network public-ip prefix: list show": (f"{_N}/publicIPPrefixes/read",),
    # the CLI reads a load balancer's parts from the load balancer itself
    "network lb: list show": (f"{_N}/loadBalancers/read",),
    "network lb probe: list show": (f"{_N}/loadBalancers/read",),
    "network lb rule: list show": (f"{_N}/loadBalancers/read",),
    "network lb frontend-ip: list show": (f"{_N}/loadBalancers/read",),
    "network lb address-pool: list show": (f"{_N}/loadBalancers/read",),
    "network lb inbound-nat-rule: list show": (f"{_N}/loadBalancers/read",),
    "network lb outbound-rule: list show": (f"{_N}/loadBalancers/read",),
    "network application-gateway: list show": (f"{_N}/applicationGateways/read",),
    "network application-gateway: show-backend-health": (
        f"{_N}/applicationGateways/backendhealth/action",),
    # a WAF policy that blocks requests is a network cause of 403s at the gateway
    "network application-gateway waf-policy: list show": (
        f"{_N}/ApplicationGatewayWebApplicationFirewallPolicies/read",),
    "network private-endpoint: list show": (f"{_N}/privateEndpoints/read",),
    "network private-endpoint dns-zone-group: list show": (
        f"{_N}/privateEndpoints/privateDnsZoneGroups/read",),
    "network private-link-service: list show": (f"{_N}/privateLinkServices/read",),
    "network private-dns zone: list show": (f"{_PDNS}/read",),
    "network private-dns link vnet: list show": (f"{_PDNS}/virtualNetworkLinks/read",),
    "network private-dns record-set: list": (f"{_PDNS}/ALL/read",),
    "network private-dns record-set a: list show": (f"{_PDNS}/A/read",),
    "network private-dns record-set aaaa: list show": (f"{_PDNS}/AAAA/read",),
    "network private-dns record-set cname: list show": (f"{_PDNS}/CNAME/read",),
    "network private-dns record-set ptr: list show": (f"{_PDNS}/PTR/read",),
    "network private-dns record-set srv: list show": (f"{_PDNS}/SRV/read",),
    "network private-dns record-set soa: show": (f"{_PDNS}/SOA/read",),
    "network dns zone: list show": (f"{_DNS}/read",),
    "network dns record-set: list": (f"{_DNS}/recordsets/read",),
    "network dns record-set a: list show": (f"{_DNS}/A/read",),
    "network dns record-set aaaa: list show": (f"{_DNS}/AAAA/read",),
    "network dns record-set cname: list show": (f"{_DNS}/CNAME/read",),
    "network dns record-set ns: list show": (f"{_DNS}/NS/read",),
    "network dns record-set soa: show": (f"{_DNS}/SOA/read",),
    "network dns-resolver: list show": (f"{_N}/dnsResolvers/read",),
    "network dns-resolver inbound-endpoint: list show": (
        f"{_N}/dnsResolvers/inboundEndpoints/read",),
    "network dns-resolver outbound-endpoint: list show": (
        f"{_N}/dnsResolvers/outboundEndpoints/read",),
    "network dns-resolver forwarding-ruleset: list show": (f"{_N}/dnsForwardingRulesets/read",),
    "network dns-resolver forwarding-rule: list show": (
        f"{_N}/dnsForwardingRulesets/forwardingRules/read",),
    "network nat gateway: list show": (f"{_N}/natGateways/read",),
    "network asg: list show": (f"{_N}/applicationSecurityGroups/read",),
    "network bastion: list show": (f"{_N}/bastionHosts/read",),
    "network firewall: list show": (f"{_N}/azureFirewalls/read",),
    # the CLI reads a classic firewall's IP configurations and rule collections from the firewall
    "network firewall ip-config: list show": (f"{_N}/azureFirewalls/read",),
    "network firewall network-rule: list": (f"{_N}/azureFirewalls/read",),
    "network firewall network-rule collection: list show": (f"{_N}/azureFirewalls/read",),
    "network firewall application-rule: list": (f"{_N}/azureFirewalls/read",),
    "network firewall application-rule collection: list show": (f"{_N}/azureFirewalls/read",),
    "network firewall nat-rule: list": (f"{_N}/azureFirewalls/read",),
    "network firewall nat-rule collection: list show": (f"{_N}/azureFirewalls/read",),
    "network firewall policy: list show": (f"{_N}/firewallPolicies/read",),
    "network firewall policy rule-collection-group: list show": (
        f"{_N}/firewallPolicies/ruleCollectionGroups/read",),
    "network firewall policy rule-collection-group collection: list": (
        f"{_N}/firewallPolicies/ruleCollectionGroups/read",),
    "network vnet-gateway: list show": (f"{_N}/virtualNetworkGateways/read",),
    "network vnet-gateway: list-bgp-peer-status": (
        f"{_N}/virtualNetworkGateways/getBgpPeerStatus/action",),
    "network vnet-gateway: list-learned-routes": (
        f"{_N}/virtualNetworkGateways/getLearnedRoutes/action",),
    "network vnet-gateway: list-advertised-routes": (
        f"{_N}/virtualNetworkGateways/getAdvertisedRoutes/action",),
    "network vnet-gateway vpn-client: show-health": (
        f"{_N}/virtualNetworkGateways/getVpnClientConnectionHealth/action",),
    "network local-gateway: list show": (f"{_N}/localNetworkGateways/read",),
    "network vhub: list show": (f"{_N}/virtualHubs/read",),
    "network vhub: get-effective-routes": (f"{_N}/virtualHubs/effectiveRoutes/action",),
    "network vhub route-table: list show": (f"{_N}/virtualHubs/hubRouteTables/read",),
    "network vwan: list show": (f"{_N}/virtualWans/read",),
    "network routeserver: list show": (f"{_N}/virtualHubs/read",),
    "network routeserver peering: list show": (f"{_N}/virtualHubs/bgpConnections/read",),
    "network routeserver peering: list-learned-routes": (
        f"{_N}/virtualHubs/bgpConnections/learnedRoutes/action",),
    "network routeserver peering: list-advertised-routes": (
        f"{_N}/virtualHubs/bgpConnections/advertisedRoutes/action",),
    "network traffic-manager profile: list show": (f"{_N}/trafficManagerProfiles/read",),
    "network traffic-manager endpoint: list show": (f"{_N}/trafficManagerProfiles/read",),
    "network: list-service-tags": (f"{_N}/locations/serviceTags/read",),
    "vm: list show": (f"{_VM}/read",),
    "vm: get-instance-view": (f"{_VM}/read", f"{_VM}/instanceView/read"),
    "vm: list-ip-addresses": (f"{_VM}/read", f"{_N}/networkInterfaces/read",
                              f"{_N}/publicIPAddresses/read"),
    "vm nic: list show": (f"{_VM}/read", f"{_N}/networkInterfaces/read"),
    "vm extension: list show": (f"{_VM}/read", f"{_VM}/extensions/read"),
    "vmss: list show": ("Microsoft.Compute/virtualMachineScaleSets/read",),
    "vmss: list-instances": ("Microsoft.Compute/virtualMachineScaleSets/virtualMachines/read",),
    "group: list show exists": ("Microsoft.Resources/subscriptions/resourceGroups/read",),
    "aks: list show": ("Microsoft.ContainerService/managedClusters/read",),
    "aks nodepool: list show": ("Microsoft.ContainerService/managedClusters/agentPools/read",),
    # the capture container (the orchestrator's check, shown as this command at the gate)
    "storage container: exists": (
        "Microsoft.Storage/storageAccounts/blobServices/containers/read",),
    # blobs read with --auth-mode login (the gate requires it): flow-log and capture blobs
    "storage blob: list download": (f"data:{_BLOBS}/read",),
    "monitor activity-log: list": ("Microsoft.Insights/eventtypes/values/read",),
    "monitor metrics: list": ("Microsoft.Insights/metrics/read",),
    "monitor metrics: list-definitions": ("Microsoft.Insights/metricDefinitions/read",),
}

#: Clean reads (by path prefix) the role deliberately does not grant, and why. A read here still
#: passes the gate; Azure answers it with AuthorizationFailed and the model moves on.
AZ_DECLINED: dict[str, str] = {
    "account": "reads the local az profile; no RBAC action",
    "role assignment": "who may do what; Microsoft.Authorization/roleAssignments/read if "
                       "investigations need it (docs/deploy.md, Extending the role)",
    "role definition": "what roles allow; Microsoft.Authorization/roleDefinitions/read if "
                       "investigations need it (docs/deploy.md, Extending the role)",
    "network ddos-protection": "DDoS protection plans do not decide reachability; "
                               "Microsoft.Network/ddosProtectionPlans/read if needed",
    "lock": "resource locks; Microsoft.Authorization/locks/read if investigations need it",
    "resource": "any resource type; each type's own read applies (granted above for network "
                "and compute)",
    "provider": "subscription-wide provider registrations; not needed to investigate",
    "graph": "Azure Resource Graph; its answers are filtered by the reads above anyway",
    "monitor activity-log list-categories": "static list; no RBAC action",
    "monitor diagnostic-settings": "where logs are shipped; not needed to investigate",
    "network list-usages": "subscription quotas; not needed to investigate",
    "network vnet list-available-ips": "address planning, not diagnosis",
    "network vnet check-ip-address": "address planning, not diagnosis",
    "network vnet list-endpoint-services": "location catalogue, not diagnosis",
    "network vnet subnet list-available-delegations": "location catalogue, not diagnosis",
    "network vnet subnet list-available-ips": "address planning, not diagnosis",
    "network private-endpoint-connection": "the action depends on the target's resource type",
    "network watcher troubleshooting": "VPN troubleshooting writes to a storage account",
    "vm list-sizes": "location catalogue, not diagnosis",
    "vm list-skus": "location catalogue, not diagnosis",
    "vmss get-instance-view": "scale-set health, not network; add it with its action if needed",
    "vmss nic": "scale-set NICs; add them with their action if needed",
    # the application tier: Ghost sees its network side (NICs, private endpoints, DNS, NSGs);
    # grant a type's read on its resource group if investigations need it (docs/deploy.md)
    "redis": "application tier (see docs/deploy.md, Extending the role)",
    "storage account": "application tier (see docs/deploy.md, Extending the role)",
    "sql": "application tier (see docs/deploy.md, Extending the role)",
    "postgres": "application tier (see docs/deploy.md, Extending the role)",
    "mysql": "application tier (see docs/deploy.md, Extending the role)",
    "cosmosdb": "application tier (see docs/deploy.md, Extending the role)",
    "keyvault": "application tier (see docs/deploy.md, Extending the role)",
    "webapp": "application tier (see docs/deploy.md, Extending the role)",
    "functionapp": "application tier (see docs/deploy.md, Extending the role)",
    "containerapp": "application tier (see docs/deploy.md, Extending the role)",
    "acr": "application tier (see docs/deploy.md, Extending the role)",
}


def _expand(table: dict[str, tuple[str, ...]]) -> dict[tuple[str, ...], tuple[str, ...]]:
    out: dict[tuple[str, ...], tuple[str, ...]] = {}
    for key, actions in table.items():
        group, _, verbs = key.partition(":")
        for verb in verbs.split():
            path = (*group.split(), verb)
            out[path] = out.get(path, ()) + actions
    return out


#: (command path) -> RBAC actions, for the az reads the role grants
AZ_READS: dict[tuple[str, ...], tuple[str, ...]] = _expand(_AZ_TABLE)


def declined(path: tuple[str, ...]) -> str | None:
    """Why the role does not grant this clean read, or None when it has no such entry."""
    words = " ".join(path)
    for prefix, why in AZ_DECLINED.items():
        if words == prefix or words.startswith(prefix + " "):
            return why
    return None


def az_coverage(clean_reads: Iterable[tuple[str, ...]]) -> list[str]:
    """Clean reads with no decision, reads granted that the gate does not allow, both at once."""
    clean = set(clean_reads)
    out = [f"az {' '.join(p)}: the gate calls it SAFE but tests/deploy/rbac.py neither grants "
           "it (AZ_READS) nor declines it (AZ_DECLINED)"
           for p in sorted(clean) if p not in AZ_READS and declined(p) is None]
    out += [f"az {' '.join(p)}: granted in AZ_READS but not a clean read at the gate"
            for p in sorted(AZ_READS) if p not in clean]
    out += [f"az {' '.join(p)}: both granted and declined" for p in sorted(AZ_READS)
            if declined(p) is not None]
    return out


#: Operation groups of the management SDKs (a call ``<x>.<group>.<method>(…)`` is an SDK call).
EXTRA_GROUPS = frozenset({"virtual_machines", "virtual_machine_extensions",
                          "virtual_machine_scale_sets", "managed_clusters", "resources",
                          "resource_groups", "storage_accounts", "blob_containers"})


def sdk_groups() -> frozenset[str]:
    """Operation-group attribute names: azure-mgmt-network's (``packet_captures`` …) and
    ``EXTRA_GROUPS`` of the SDKs Ghost does not install yet."""
    import re

    from azure.mgmt.network import operations

    names = set()
    for cls_name, _cls in inspect.getmembers(operations, inspect.isclass):
        if cls_name.endswith("Operations"):
            stem = cls_name[: -len("Operations")]
            names.add(re.sub(r"(?<!^)(?=[A-Z])", "_", stem).lower())
    return frozenset(names) | EXTRA_GROUPS


def blob_methods() -> frozenset[str]:
    """Public methods of the azure-storage-blob clients and the download stream."""
    from azure.storage.blob import (
        BlobClient,
        BlobServiceClient,
        ContainerClient,
        StorageStreamDownloader,
    )

    names = set()
    for cls in (BlobServiceClient, ContainerClient, BlobClient, StorageStreamDownloader):
        names |= {n for n, _ in inspect.getmembers(cls, callable) if not n.startswith("_")}
    return frozenset(names - {"close", "from_connection_string", "from_blob_url",
                              "from_container_url"})


@dataclass(frozen=True)
class SdkCall:
    path: str
    line: int
    key: str


def _chain(node: ast.expr) -> list[str]:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return list(reversed(parts))


def sdk_calls(paths: Iterable[Path], groups: frozenset[str],
              blob: frozenset[str]) -> list[SdkCall]:
    """Every Azure SDK call in ``paths``: operation-group calls, blob client calls, ARM GETs."""
    found: list[SdkCall] = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(func):
                if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
                    continue
                method = node.func.attr
                owner = node.func.value
                if isinstance(owner, ast.Attribute) and owner.attr in groups:
                    key = f"{owner.attr}.{method}"
                elif method == "_arm_get":
                    key = f"arm:{func.name}"
                elif method == "send_request":
                    if func.name == "_arm_get":
                        continue  # mapped by its callers, above
                    key = f"send_request in {func.name}"  # a raw ARM call nobody mapped
                elif method in blob:
                    key = f"blob.{method}"
                else:
                    continue
                found.append(SdkCall(path.name, node.lineno, key))
    return found


@dataclass(frozen=True)
class Role:
    name: str
    actions: frozenset[str]
    data_actions: frozenset[str]

    @property
    def all(self) -> frozenset[str]:
        return self.actions | {f"data:{a}" for a in self.data_actions}


def load_role(path: Path) -> Role:
    import json

    doc = json.loads(path.read_text(encoding="utf-8"))
    return Role(doc["Name"], frozenset(doc["Actions"]), frozenset(doc["DataActions"]))


def problems(calls: list[SdkCall], az_reads: dict[tuple[str, ...], tuple[str, ...]],
             roles: list[Role]) -> list[str]:
    """Why the roles are not exactly what Ghost uses; empty when they are."""
    out: list[str] = []
    needed: dict[str, str] = {}
    for call in calls:
        if call.key not in SDK_ACTIONS:
            out.append(f"{call.path}:{call.line}: SDK call {call.key} has no RBAC mapping in "
                       "tests/deploy/rbac.py SDK_ACTIONS")
            continue
        for action in SDK_ACTIONS[call.key]:
            needed.setdefault(action.lower(), f"{call.key} ({call.path}:{call.line})")
    for path, actions in az_reads.items():
        for action in actions:
            needed.setdefault(action.lower(), "az " + " ".join(path))
    granted: dict[str, str] = {}
    for role in roles:
        for action in role.all:
            if "*" in action:
                out.append(f"{role.name}: {action} is a wildcard; list the actions instead")
            granted[action.lower()] = role.name
    for action, why in sorted(needed.items()):
        if action not in granted:
            out.append(f"missing {action} (needed by {why})")
    for action, role_name in sorted(granted.items()):
        if action not in needed:
            out.append(f"{role_name} grants {action}, which nothing in Ghost uses")
    return out
