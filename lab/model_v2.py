"""The resources format 2 adds (specs/lab-scenario-format.md, "Format 2") as frozen dataclasses.

Load balancers, private endpoints, Azure Firewalls (policy or classic collections), NAT gateways,
storage accounts and VNet flow logs, plus the time windows (``active``) that rules, routes,
faults and zone links may carry. Strings are as written in the scenario; addresses are
``ipaddress`` objects. lab/model.py's Scenario holds them; lab/validate_v2.py builds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from ipaddress import IPv4Address

#: the subnet an Azure Firewall lives in (its VNet must have it, /26 or larger, without NSG)
FIREWALL_SUBNET = "AzureFirewallSubnet"
#: the engineer's public address when a format-2 scenario does not give one
DEFAULT_ENGINEER_IP = IPv4Address("198.51.100.10")
#: private endpoint kinds: resource type, FQDN suffix of the target, privatelink zone, TCP ports
PE_KINDS: dict[str, tuple[str, str, str, tuple[int, ...]]] = {
    "sqlServer": ("Microsoft.Sql/servers", "database.windows.net",
                  "privatelink.database.windows.net", (1433,)),
    "blob": ("Microsoft.Storage/storageAccounts", "blob.core.windows.net",
             "privatelink.blob.core.windows.net", (443,)),
    "file": ("Microsoft.Storage/storageAccounts", "file.core.windows.net",
             "privatelink.file.core.windows.net", (443, 445)),
    "queue": ("Microsoft.Storage/storageAccounts", "queue.core.windows.net",
              "privatelink.queue.core.windows.net", (443,)),
    "table": ("Microsoft.Storage/storageAccounts", "table.core.windows.net",
              "privatelink.table.core.windows.net", (443,)),
    "dfs": ("Microsoft.Storage/storageAccounts", "dfs.core.windows.net",
            "privatelink.dfs.core.windows.net", (443,)),
    "vault": ("Microsoft.KeyVault/vaults", "vault.azure.net", "privatelink.vaultcore.azure.net",
              (443,)),
    "redisCache": ("Microsoft.Cache/Redis", "redis.cache.windows.net",
                   "privatelink.redis.cache.windows.net", (6380,)),
}


@dataclass(frozen=True)
class Active:
    """``active: {from: AGO, until: AGO}`` resolved to times; None = open on that side."""

    start: datetime | None = None
    end: datetime | None = None

    def covers(self, t: datetime) -> bool:
        """Active at ``t``: from ``start`` (inclusive) until ``end`` (exclusive)."""
        return (self.start is None or self.start <= t) and (self.end is None or t < self.end)


def active_at(window: Active | None, t: datetime) -> bool:
    return window is None or window.covers(t)


@dataclass(frozen=True)
class PublicIp:
    """A Standard, static public IP address resource (in its owner's resource group)."""

    name: str
    ip: IPv4Address


# -- load balancers ------------------------------------------------------------------------


@dataclass(frozen=True)
class LbFrontend:
    name: str
    ip: IPv4Address  # the private frontend IP, or the public IP's address
    vnet: str | None = None  # internal frontend: its subnet
    subnet: str | None = None
    public_ip: PublicIp | None = None  # public frontend

    @property
    def internal(self) -> bool:
        return self.public_ip is None


@dataclass(frozen=True)
class LbPool:
    name: str
    vms: tuple[str, ...]


@dataclass(frozen=True)
class LbProbe:
    name: str
    protocol: str  # Tcp | Http | Https
    port: int
    interval: int  # seconds, >= 5
    threshold: int  # numberOfProbes
    path: str | None = None  # Http/Https only


@dataclass(frozen=True)
class LbRule:
    name: str
    protocol: str  # Tcp | Udp | All
    frontend_port: int
    backend_port: int
    pool: str
    probe: str | None = None

    @property
    def ha_ports(self) -> bool:
        return self.protocol == "All" and self.frontend_port == 0 and self.backend_port == 0


@dataclass(frozen=True)
class LoadBalancer:
    name: str
    resource_group: str
    frontend: LbFrontend
    pools: tuple[LbPool, ...] = ()
    probes: tuple[LbProbe, ...] = ()
    rules: tuple[LbRule, ...] = ()

    def pool(self, name: str) -> LbPool | None:
        return next((p for p in self.pools if p.name == name), None)

    def probe(self, name: str) -> LbProbe | None:
        return next((p for p in self.probes if p.name == name), None)

    def rule(self, name: str) -> LbRule | None:
        return next((r for r in self.rules if r.name == name), None)


# -- private endpoints ---------------------------------------------------------------------


@dataclass(frozen=True)
class PeTarget:
    kind: str  # a key of PE_KINDS
    name: str
    resource_group: str
    public_ip: IPv4Address
    public_access: str = "Enabled"  # Enabled | Disabled

    @property
    def resource_type(self) -> str:
        return PE_KINDS[self.kind][0]

    @property
    def fqdn(self) -> str:
        return f"{self.name}.{PE_KINDS[self.kind][1]}".lower()

    @property
    def zone(self) -> str:
        return PE_KINDS[self.kind][2]

    @property
    def privatelink_fqdn(self) -> str:
        return f"{self.name}.{self.zone}".lower()

    @property
    def ports(self) -> tuple[int, ...]:
        return PE_KINDS[self.kind][3]


@dataclass(frozen=True)
class PrivateEndpoint:
    name: str
    resource_group: str
    vnet: str
    subnet: str
    ip: IPv4Address
    target: PeTarget
    state: str  # Approved | Pending | Rejected | Disconnected
    zone_group: tuple[str, ...] | None = None  # None: no zone group
    nic_name: str | None = None


# -- Azure Firewall ------------------------------------------------------------------------


@dataclass(frozen=True)
class FwNetworkRule:
    name: str
    protocols: tuple[str, ...]  # TCP | UDP | ICMP | Any
    sources: tuple[str, ...]  # IPv4, CIDR or *
    destinations: tuple[str, ...]
    ports: str  # NSG port syntax


@dataclass(frozen=True)
class FwAppRule:
    name: str
    sources: tuple[str, ...]
    fqdns: tuple[str, ...]  # exact or *.suffix
    protocols: tuple[tuple[str, int], ...]  # (Http|Https|Mssql, port)


@dataclass(frozen=True)
class FwCollection:
    name: str
    type: str  # Network | Application
    priority: int
    action: str  # Allow | Deny
    rules: tuple[FwNetworkRule | FwAppRule, ...]


@dataclass(frozen=True)
class FwGroup:
    name: str
    priority: int
    collections: tuple[FwCollection, ...]


@dataclass(frozen=True)
class FwPolicy:
    name: str
    groups: tuple[FwGroup, ...]


@dataclass(frozen=True)
class Firewall:
    name: str
    resource_group: str
    vnet: str
    private_ip: IPv4Address
    public_ips: tuple[PublicIp, ...]
    tier: str = "Standard"
    policy: FwPolicy | None = None
    collections: tuple[FwCollection, ...] = ()  # classic rules


# -- NAT gateways, storage, flow logs ------------------------------------------------------


@dataclass(frozen=True)
class NatGateway:
    name: str
    resource_group: str
    public_ips: tuple[PublicIp, ...]
    subnets: tuple[tuple[str, str], ...]  # (vnet, subnet)
    idle_timeout: int = 4


@dataclass(frozen=True)
class StorageAccount:
    name: str
    resource_group: str


@dataclass(frozen=True)
class FlowLog:
    name: str
    target: str  # a VNet, vnet/subnet or a VM (its NIC)
    storage_account: str
    since_seconds: int  # logging began at now - since
    retention_days: int = 0
