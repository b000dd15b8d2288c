"""The `az` reads known to return no secrets, and the options they may carry.

An allowlist, not a list of bad words: the red teams kept finding reads whose output carries keys
although no word in the command says so (`show-cd-url`, `--with-secure-properties`, `-u`, an old
`--api-version`). So an `az` read is SAFE only when its command path is written here *and* every
option is one of the selectors below; anything else is RISKY until an engineer approves it. The
table is deliberately network-shaped: it is what an investigation of connectivity needs.
"""

from __future__ import annotations

import re
from typing import Final

#: "group words: verb verb ..." -- every (group, verb) pair is a clean read.
_TABLE: Final = """
network vnet: list show list-available-ips check-ip-address list-endpoint-services
network vnet subnet: list show list-available-delegations list-available-ips
network vnet peering: list show
network nsg: list show
network nsg rule: list show
network route-table: list show
network route-table route: list show
network nic: list show show-effective-route-table list-effective-nsg
network nic ip-config: list show
network public-ip: list show
network public-ip prefix: list show
network lb: list show
network lb probe: list show
network lb rule: list show
network lb frontend-ip: list show
network lb address-pool: list show
network lb inbound-nat-rule: list show
network lb outbound-rule: list show
network application-gateway: list show show-backend-health
network application-gateway waf-policy: list show
network ddos-protection: list show
network private-endpoint: list show
network private-endpoint dns-zone-group: list show
network private-endpoint-connection: list show
network private-link-service: list show
network private-dns zone: list show
network private-dns link vnet: list show
network private-dns record-set: list
network private-dns record-set a: list show
network private-dns record-set aaaa: list show
network private-dns record-set cname: list show
network private-dns record-set ptr: list show
network private-dns record-set srv: list show
network private-dns record-set soa: show
network dns zone: list show
network dns record-set: list
network dns record-set a: list show
network dns record-set aaaa: list show
network dns record-set cname: list show
network dns record-set ns: list show
network dns record-set soa: show
network dns-resolver: list show
network dns-resolver inbound-endpoint: list show
network dns-resolver outbound-endpoint: list show
network dns-resolver forwarding-ruleset: list show
network dns-resolver forwarding-rule: list show
network nat gateway: list show
network asg: list show
network bastion: list show
network firewall: list show
network firewall ip-config: list show
network firewall network-rule: list
network firewall network-rule collection: list show
network firewall application-rule: list
network firewall application-rule collection: list show
network firewall nat-rule: list
network firewall nat-rule collection: list show
network firewall policy: list show
network firewall policy rule-collection-group: list show
network firewall policy rule-collection-group collection: list
network vnet-gateway: list show list-bgp-peer-status list-learned-routes list-advertised-routes
network vnet-gateway vpn-client: show-health
network local-gateway: list show
network vhub: list show get-effective-routes
network vhub route-table: list show
network vwan: list show
network routeserver: list show
network routeserver peering: list show list-learned-routes list-advertised-routes
network traffic-manager profile: list show
network traffic-manager endpoint: list show
network watcher: list test-ip-flow show-next-hop test-connectivity show-topology
network watcher: run-configuration-diagnostic show-security-group-view
network watcher flow-log: list show
network watcher connection-monitor: list show
network watcher packet-capture: list show show-status
network watcher troubleshooting: show
network: list-usages list-service-tags
vm: list show get-instance-view list-ip-addresses list-sizes list-skus
vm nic: list show
vm extension: list show
vmss: list show list-instances get-instance-view
vmss nic: list list-vm-nics
group: list show exists
account: show list list-locations
resource: list show
provider: list show
monitor activity-log: list list-categories
monitor metrics: list list-definitions
monitor diagnostic-settings: list show
graph: query
aks: list show
aks nodepool: list show
redis: list show
storage account: list show
storage account network-rule: list
sql server: list show
sql server firewall-rule: list show
sql db: list show
postgres flexible-server: list show
mysql flexible-server: list show
cosmosdb: list show
keyvault: list show
keyvault network-rule: list
keyvault certificate: list show
storage container: exists
storage blob: list download
role assignment: list
role definition: list
lock: list show
webapp: list show
webapp config: show
webapp config access-restriction: show
webapp vnet-integration: list
functionapp: list show
acr: list show
"""


#: The changes an engineer may approve: network resources, VM power, packet captures and their
#: blobs, flow logs (under `network`), and the blob download of a capture. Anything else that
#: changes state is never offered (T0.az_not_approvable); the run-command probes have their own
#: rule (vm_probe.py).
_WRITES: Final = """
vm: start stop deallocate restart redeploy reapply
vmss: start stop deallocate restart
vm nic: add remove set
storage blob: delete download
"""
NETWORK_WRITE_VERBS: Final = frozenset({
    "create", "update", "delete", "set", "add", "remove", "add-record", "remove-record",
    "start", "stop", "configure", "reset", "add-ip-config", "remove-ip-config",
})
#: Network groups whose writes set or hand out secrets (a VPN pre-shared key, VPN client
#: packages) or open sessions (Bastion): not approvable.
NETWORK_WRITE_EXCLUDED: Final = frozenset({"shared-key", "vpn-client", "bastion",
                                           "vpn-server-config", "p2s-vpn-gateway"})


def _parse(table: str) -> frozenset[tuple[str, ...]]:
    paths: set[tuple[str, ...]] = set()
    for line in table.strip().splitlines():
        group, _, verbs = line.partition(":")
        for verb in verbs.split():
            paths.add((*group.split(), verb))
    return frozenset(paths)


CLEAN_READS: Final = _parse(_TABLE)
APPROVABLE_WRITES: Final = _parse(_WRITES)


def approvable_write(path: tuple[str, ...]) -> bool:
    """Is `az PATH` a change an engineer may approve?"""
    if path in APPROVABLE_WRITES:
        return True
    verb = path[-1] if path else ""
    return (len(path) >= 3 and path[0] == "network" and (
        verb in NETWORK_WRITE_VERBS or verb.split("-", 1)[0] in _RECORD_VERB_HEADS)
            and not NETWORK_WRITE_EXCLUDED & set(path))


#: `add-record`, `set-record`, `remove-record`, `update-record`, `add-ip-config` ...: the verbs
#: of DNS record sets (public and private zones) and NIC configurations are one change each.
_RECORD_VERB_HEADS: Final = frozenset({"add", "remove", "set", "update", "create", "delete"})

#: Options that only select what to read or how to print it, for every clean read.
FLAG_OPTIONS: Final = frozenset({"--only-show-errors", "--all", "--show-details",
                                 "--include-default", "--include-inherited", "--include-groups",
                                 "--no-progress", "--overwrite", "--show-next-marker"})
VALUE_OPTIONS: Final = frozenset({
    "--resource-group", "--name", "--ids", "--subscription", "--output", "--query", "--location",
    "--vnet-name", "--nsg-name", "--route-table-name", "--zone-name", "--lb-name",
    "--gateway-name", "--vm", "--nic", "--direction", "--protocol", "--local", "--remote",
    "--source-ip", "--dest-ip", "--source-resource", "--dest-resource", "--dest-address",
    "--dest-port", "--source-port", "--subnet", "--vnet", "--ip-address", "--start-time",
    "--end-time", "--offset", "--max-events", "--caller", "--correlation-id", "--resource-id",
    "--namespace", "--resource-type", "--status", "--select", "--graph-query", "--first",
    "--skip", "--subscriptions", "--management-groups", "--skip-token", "--instance-id",
    "--cluster-name", "--nodepool-name", "--server", "--server-name", "--policy-name",
    "--hub-name", "--routeserver", "--peering-name", "--profile-name", "--type", "--watcher",
    "--resource", "--parent", "--source", "--destination", "--port", "--metric", "--metrics",
    "--interval", "--aggregation", "--dimension", "--top", "--orderby", "--filter",
    "--dns-resolver-name", "--ruleset-name", "--rcg-name", "--collection-group-name",
    "--ip-config-name", "--gateway", "--peer", "--preferred-ip-version", "--protocol-type",
    "--vm-name", "--nic-name", "--dns-resolver", "--forwarding-ruleset-name", "--workspace",
    "--vault-name", "--account-name", "--auth-mode", "--id", "--slot", "--firewall-name",
    "--collection-name", "--endpoint-name", "--container-name", "--prefix", "--num-results",
    "--marker", "--include", "--delimiter", "--file", "--assignee", "--scope", "--role",
    "--filter-string", "--lock-name", "--resource-name", "--resource-namespace",
    "--parent-resource-path", "--assignee-object-id", "--start-range", "--end-range",
    "--max-connections", "--vm-extension-name",
})
#: Options a clean read takes only on some paths (elsewhere they are not selectors).
PATH_ONLY_OPTIONS: Final = {"--file": ("storage", "blob", "download"),
                            "--start-range": ("storage", "blob", "download"),
                            "--end-range": ("storage", "blob", "download"),
                            "--overwrite": ("storage", "blob", "download"),
                            "--max-connections": ("storage", "blob", "download")}
#: Reads that are clean only with an option set to a value: blob reads with `--auth-mode key`
#: (the default with no login) fetch the account key first.
REQUIRED_VALUES: Final[dict[tuple[str, ...], tuple[str, str]]] = {
    ("storage", "blob", "list"): ("--auth-mode", "login"),
    ("storage", "blob", "download"): ("--auth-mode", "login"),
}
#: Long spellings that azure-cli documents as aliases of the names above.
ALIASES: Final = {"--out": "--output", "--resource-group-name": "--resource-group",
                  "--ip": "--ip-address", "--vnet-gateway": "--gateway-name"}
#: Short options, per command group word (the same letter means different things elsewhere).
SHORT_OPTIONS: Final = {"-g": "--resource-group", "-n": "--name", "-o": "--output",
                        "-l": "--location"}
GROUP_SHORT_OPTIONS: Final = {
    ("vm", "-d"): "--show-details",
    ("firewall", "-f"): "--firewall-name",
    ("storage", "-c"): "--container-name",
    ("storage", "-f"): "--file",
    ("private-dns", "-z"): "--zone-name",
    ("dns", "-z"): "--zone-name",
    ("graph", "-q"): "--graph-query",
}
OUTPUT_FORMATS: Final = frozenset({"json", "jsonc", "tsv", "table", "yaml", "yamlc", "none"})

#: `az resource show` reads any ARM resource at any API version; it is clean only for these
#: resource types (lowercase namespace/type/child-type chains) and without --api-version.
CLEAN_RESOURCE_TYPES: Final = frozenset({
    "microsoft.network/virtualnetworks", "microsoft.network/virtualnetworks/subnets",
    "microsoft.network/virtualnetworks/virtualnetworkpeerings",
    "microsoft.network/networksecuritygroups",
    "microsoft.network/networksecuritygroups/securityrules", "microsoft.network/routetables",
    "microsoft.network/routetables/routes", "microsoft.network/networkinterfaces",
    "microsoft.network/publicipaddresses", "microsoft.network/loadbalancers",
    "microsoft.network/privateendpoints", "microsoft.network/privatednszones",
    "microsoft.network/privatednszones/virtualnetworklinks", "microsoft.network/natgateways",
    "microsoft.network/networkwatchers", "microsoft.network/applicationsecuritygroups",
    "microsoft.network/bastionhosts", "microsoft.network/azurefirewalls",
    "microsoft.network/dnszones", "microsoft.compute/virtualmachines",
    "microsoft.compute/virtualmachinescalesets", "microsoft.compute/disks",
})
_ID_RE: Final = re.compile(r"^/subscriptions/[0-9a-fA-F-]{1,64}/resourcegroups/[A-Za-z0-9._()-]"
                           r"{1,90}/providers/(?P<rest>[A-Za-z0-9._()/-]{1,600})$", re.IGNORECASE)


def resource_type_of(resource_id: str) -> str | None:
    """The lowercase type chain of an ARM id (`ns/type/child`), or None when it is not one.

    An id with a trailing segment after a child name (`.../connections/c/sharedkey`) is an
    action or sub-resource, not a resource: no type is returned for it.
    """
    match = _ID_RE.match(resource_id)
    if match is None:
        return None
    parts = match.group("rest").split("/")
    if len(parts) < 3 or len(parts) % 2 == 0 or "" in parts:
        return None
    namespace, pairs = parts[0], parts[1:]
    types = pairs[0::2]
    return "/".join([namespace, *types]).lower()
