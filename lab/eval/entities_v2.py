"""What format 2 adds to a scenario's vocabulary (lab/eval/entities.py): load balancers and
their parts, private endpoints and their targets, firewalls and their rules, NAT gateways,
public IPs, Internet hosts and clients, storage accounts and flow logs.

A part implies its whole (a probe its load balancer, a rule collection its firewall), an
address the resource that holds it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lab.scenario import Scenario

Add = Callable[..., None]


def add_format2(add: Add, table: dict[str, set[str]], scenario: Scenario) -> None:
    s = scenario
    for b in s.load_balancers:
        key = f"lb:{b.name}"
        # a load balancer stands for its backends, as a rule stands for its NSG
        add(table, b.name, key, *(f"vm:{vm}" for p in b.pools for vm in p.vms))
        add(table, b.frontend.ip, key)
        add(table, b.frontend.name, key)
        if b.frontend.public_ip is not None:
            add(table, b.frontend.public_ip.name, key)
        for name in (*(p.name for p in b.pools), *(p.name for p in b.probes),
                     *(r.name for r in b.rules)):
            add(table, name, f"{key}/{name}", key)
    for pe in s.private_endpoints:
        key = f"pe:{pe.name}"
        for alias in (pe.name, pe.ip, s.pe_nic_name(pe), pe.target.fqdn,
                      pe.target.privatelink_fqdn):
            add(table, alias, key)
        add(table, pe.target.name, key, f"target:{pe.target.name}")
        add(table, pe.target.public_ip, f"target:{pe.target.name}")
    for fw in s.firewalls:
        key = f"fw:{fw.name}"
        add(table, fw.name, key)
        add(table, fw.private_ip, key)
        for pip in fw.public_ips:
            add(table, pip.name, key)
            add(table, pip.ip, key)
        groups = fw.policy.groups if fw.policy is not None else ()
        if fw.policy is not None:
            add(table, fw.policy.name, key)
        for c in (*fw.collections, *(c for g in groups for c in g.collections)):
            add(table, c.name, f"{key}/{c.name}", key)
            for r in c.rules:
                add(table, r.name, f"{key}/{c.name}/{r.name}", f"{key}/{c.name}", key)
        for g in groups:
            add(table, g.name, f"{key}/{g.name}", key)
    for ngw in s.nat_gateways:
        key = f"ngw:{ngw.name}"
        add(table, ngw.name, key)
        for pip in ngw.public_ips:
            add(table, pip.name, key)
            add(table, pip.ip, key)
    for ip in s.internet_hosts:
        add(table, ip, f"ip:{ip}")
    for flow in s.traffic:
        if flow.source[:1].isdigit():
            add(table, flow.source, f"ip:{flow.source}")
        if flow.fqdn:
            add(table, flow.fqdn, f"dns:{flow.fqdn}")
    for account in s.storage_accounts:
        add(table, account.name, f"storage:{account.name}")
    for fl in s.flow_logs:
        add(table, fl.name, f"flowlog:{fl.name}")
