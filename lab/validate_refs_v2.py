"""Format 2's checks across sections: references resolve and address plans hold as Azure enforces.

Frontend, private endpoint and firewall IPs obey the VM ``ip`` rules (in their subnet, none of
its five reserved addresses, held once); a public IP belongs to one resource and lies in the
``Internet`` set; Internet hosts, Internet clients and the engineer's address are public and
held by nothing; a firewall needs ``AzureFirewallSubnet`` (/26 or larger, no NSG); a subnet has
at most one NAT gateway, whose subnets share one VNet; private endpoint zone groups name the
kind's zone, which then gets the A record.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, ip_address
from typing import Any

from lab.model import Fault, PrivateDnsZone, Traffic, Vm, VNet
from lab.model_v2 import (
    FIREWALL_SUBNET,
    Firewall,
    FlowLog,
    LoadBalancer,
    NatGateway,
    PrivateEndpoint,
)
from lab.network.tags import is_internet
from lab.validate_ctx import Ctx


@dataclass
class Parts:
    """The parsed sections, as (path, object) pairs."""

    vnets: list[tuple[str, VNet]]
    zones: list[tuple[str, PrivateDnsZone]]
    vms: list[tuple[str, Vm]]
    traffic: list[tuple[str, Traffic]]
    faults: list[tuple[str, Fault]]
    lbs: list[tuple[str, LoadBalancer]]
    pes: list[tuple[str, PrivateEndpoint]]
    fws: list[tuple[str, Firewall]]
    ngws: list[tuple[str, NatGateway]]
    flow_logs: list[tuple[str, FlowLog]]
    storage: set[str]
    internet_hosts: dict[IPv4Address, tuple[int, ...]]
    engineer_ip: IPv4Address | None
    public_dns: dict[str, IPv4Address]


def _subnet(parts: Parts, vnet: str, name: str) -> Any:
    net = next((v for _, v in parts.vnets if v.name == vnet), None)
    return next((s for s in net.subnets if s.name == name), None) if net else None


def _in_subnet(ctx: Ctx, parts: Parts, path: str, vnet: str, subnet: str,
               ip: IPv4Address) -> None:
    """``ip`` obeys the VM rules in ``vnet/subnet`` (which must exist)."""
    sub = _subnet(parts, vnet, subnet)
    if sub is None:
        if f"{vnet}/{subnet}" not in ctx.declared["subnet"]:
            ctx.err(path.rsplit(".", 1)[0] + ".subnet", f"no subnet {vnet}/{subnet} in vnets")
        return
    if ip not in sub.prefix:
        ctx.err(path, f"{ip} is outside subnet {vnet}/{subnet} ({sub.prefix})")
    elif int(ip) - int(sub.prefix.network_address) < 4 or ip == sub.prefix.broadcast_address:
        ctx.err(path, f"{ip} is reserved by Azure in {sub.prefix} (the first four and the last "
                "address of every subnet)")


def check_format2(ctx: Ctx, parts: Parts) -> None:
    held = _private_addresses(ctx, parts)
    public = _public_addresses(ctx, parts)
    _check_lbs(ctx, parts)
    _check_pes(ctx, parts)
    _check_firewalls(ctx, parts)
    _check_nat_gateways(ctx, parts)
    _check_flow_logs(ctx, parts)
    _check_traffic_and_faults(ctx, parts, held, public)


def _private_addresses(ctx: Ctx, parts: Parts) -> dict[IPv4Address, str]:
    """Every private address a resource holds (VMs, internal frontends, PEs, firewalls)."""
    held: dict[IPv4Address, str] = {vm.ip: path for path, vm in parts.vms}
    claims: list[tuple[str, IPv4Address, str, str]] = []
    for path, lb in parts.lbs:
        f = lb.frontend
        if f.internal and f.vnet and f.subnet:
            claims.append((f"{path}.frontend.ip", f.ip, f.vnet, f.subnet))
    claims += [(f"{path}.ip", pe.ip, pe.vnet, pe.subnet) for path, pe in parts.pes]
    claims += [(f"{path}.private_ip", fw.private_ip, fw.vnet, FIREWALL_SUBNET)
               for path, fw in parts.fws]
    for path, ip, vnet, subnet in claims:
        if subnet != FIREWALL_SUBNET or _subnet(parts, vnet, subnet) is not None:
            _in_subnet(ctx, parts, path, vnet, subnet, ip)
        if ip in held:
            ctx.err(path, f"{ip} is already used by {held[ip]}")
        else:
            held[ip] = path
    for path, vm in parts.vms:
        if vm.subnet == FIREWALL_SUBNET:
            ctx.err(f"{path}.subnet", f"{FIREWALL_SUBNET} holds only the firewall")
    for path, lb in parts.lbs:
        if lb.frontend.subnet == FIREWALL_SUBNET:
            ctx.err(f"{path}.frontend.subnet", f"{FIREWALL_SUBNET} holds only the firewall")
    for path, pe in parts.pes:
        if pe.subnet == FIREWALL_SUBNET:
            ctx.err(f"{path}.subnet", f"{FIREWALL_SUBNET} holds only the firewall")
    return held


def _public_addresses(ctx: Ctx, parts: Parts) -> dict[IPv4Address, str]:
    """Every public address a resource holds; a public IP belongs to one resource."""
    owned: dict[IPv4Address, str] = {}
    names: dict[str, str] = {}
    claims: list[tuple[str, str | None, IPv4Address]] = []
    for path, lb in parts.lbs:
        pip = lb.frontend.public_ip
        if pip is not None:
            claims.append((f"{path}.frontend.public_ip", pip.name, pip.ip))
    for key, items in (("public_ips", parts.fws), ("public_ips", parts.ngws)):
        for path, res in items:
            claims += [(f"{path}.{key}[{i}]", p.name, p.ip)
                       for i, p in enumerate(res.public_ips)]
    claims += [(f"{path}.target.public_ip", None, pe.target.public_ip) for path, pe in parts.pes]
    for path, name, ip in claims:
        if not is_internet(ip):
            ctx.err(path, f"{ip} is not a public address (it lies outside the Internet tag)")
        if ip in owned and not (path.endswith("target.public_ip")
                                and owned[ip].endswith("target.public_ip")):
            ctx.err(path, f"{ip} already belongs to {owned[ip]}")
        owned.setdefault(ip, path)
        if name is not None:
            if name in names:
                ctx.err(f"{path}.name", f"duplicate public IP name {name!r} (also "
                        f"{names[name]})")
            names.setdefault(name, path)
    for ip in parts.internet_hosts:
        _unheld_public(ctx, f"internet_hosts.{ip}", ip, owned)
    if parts.engineer_ip is not None:
        _unheld_public(ctx, "engineer_ip", parts.engineer_ip, owned)
    return owned


def _unheld_public(ctx: Ctx, path: str, ip: IPv4Address, owned: dict[IPv4Address, str]) -> None:
    if not is_internet(ip):
        ctx.err(path, f"{ip} is not a public address (it lies outside the Internet tag)")
    elif ip in owned:
        ctx.err(path, f"{ip} belongs to {owned[ip]}")


def _check_lbs(ctx: Ctx, parts: Parts) -> None:
    vms = {vm.name: vm for _, vm in parts.vms}
    for path, lb in parts.lbs:
        vnets: dict[str, str] = {}
        for i, pool in enumerate(lb.pools):
            for j, name in enumerate(pool.vms):
                vpath = f"{path}.pools[{i}].vms[{j}]"
                vm = vms.get(name)
                if vm is None:
                    if name not in ctx.declared["vm"]:
                        ctx.err(vpath, f"no VM named {name!r} in vms")
                    continue
                vnets.setdefault(vm.vnet, vpath)
        front = lb.frontend
        if front.internal and front.vnet:
            vnets.setdefault(front.vnet, f"{path}.frontend")
        if len(vnets) > 1:
            listed = ", ".join(f"{v} ({p})" for v, p in vnets.items())
            ctx.err(f"{path}.pools", f"the pool VMs and an internal frontend share one VNet; "
                    f"here: {listed}")


def _check_pes(ctx: Ctx, parts: Parts) -> None:
    zones = {z.name.lower().rstrip("."): (p, z) for p, z in parts.zones}
    for path, pe in parts.pes:
        t = pe.target
        for name in (t.fqdn, t.privatelink_fqdn):
            if name in parts.public_dns:
                ctx.err(f"{path}.target", f"{name} must not be in public_dns: the lab derives "
                        f"its public answer (CNAME to {t.privatelink_fqdn}, then "
                        f"{t.public_ip})")
        for i, zone in enumerate(pe.zone_group or ()):
            zpath = f"{path}.zone_group[{i}]"
            if zone != t.zone:
                ctx.err(zpath, f"{zone} is not the {t.kind} zone ({t.zone})")
            elif zone not in zones:
                if zone not in {z.lower() for z in ctx.declared["zone"]}:
                    ctx.err(zpath, f"no private DNS zone named {zone!r} in private_dns_zones")
            elif t.name.lower() in zones[zone][1].records:
                ctx.err(f"{zones[zone][0]}.records.{t.name}", f"the zone group of {pe.name} "
                        f"supplies this A record ({t.name} -> {pe.ip}): remove it here")


def _check_firewalls(ctx: Ctx, parts: Parts) -> None:
    for path, fw in parts.fws:
        if not any(v.name == fw.vnet for _, v in parts.vnets):
            if fw.vnet not in ctx.declared["vnet"]:
                ctx.err(f"{path}.vnet", f"no VNet named {fw.vnet!r} in vnets")
            continue
        sub = _subnet(parts, fw.vnet, FIREWALL_SUBNET)
        if sub is None:
            ctx.err(f"{path}.vnet", f"{fw.vnet} has no subnet {FIREWALL_SUBNET} (a firewall "
                    "needs it, /26 or larger)")
            continue
        if sub.prefix.prefixlen > 26:
            ctx.err(f"{path}.vnet", f"{FIREWALL_SUBNET} of {fw.vnet} is {sub.prefix}: Azure "
                    "needs /26 or larger")
        if sub.nsg is not None:
            ctx.err(f"{path}.vnet", f"{FIREWALL_SUBNET} of {fw.vnet} has NSG {sub.nsg}: Azure "
                    "refuses an NSG there")
    for path, fw in parts.fws:
        others = [p for p, other in parts.fws if other.vnet == fw.vnet and p < path]
        if others:
            ctx.err(f"{path}.vnet", f"{fw.vnet} already has a firewall ({others[0]})")


def _check_nat_gateways(ctx: Ctx, parts: Parts) -> None:
    taken: dict[tuple[str, str], str] = {}
    for path, ngw in parts.ngws:
        vnets = {v for v, _ in ngw.subnets}
        if len(vnets) > 1:
            ctx.err(f"{path}.subnets", f"a NAT gateway serves subnets of one VNet, not "
                    f"{', '.join(sorted(vnets))}")
        for i, (vnet, subnet) in enumerate(ngw.subnets):
            spath = f"{path}.subnets[{i}]"
            if _subnet(parts, vnet, subnet) is None:
                if f"{vnet}/{subnet}" not in ctx.declared["subnet"]:
                    ctx.err(spath, f"no subnet {vnet}/{subnet} in vnets")
            elif (vnet, subnet) in taken:
                ctx.err(spath, f"{vnet}/{subnet} already has NAT gateway {taken[(vnet, subnet)]}"
                        " (a subnet has at most one)")
            taken.setdefault((vnet, subnet), ngw.name)


def _check_flow_logs(ctx: Ctx, parts: Parts) -> None:
    vms = {vm.name for _, vm in parts.vms} | ctx.declared["vm"]
    vnets = {v.name for _, v in parts.vnets} | ctx.declared["vnet"]
    seen: dict[str, str] = {}
    for path, fl in parts.flow_logs:
        if fl.storage_account not in parts.storage:
            if fl.storage_account not in ctx.declared["storage_account"]:
                ctx.err(f"{path}.storage_account", f"no storage account named "
                        f"{fl.storage_account!r} in storage_accounts")
        if "/" in fl.target:
            vnet, _, subnet = fl.target.partition("/")
            if f"{vnet}/{subnet}" not in ctx.declared["subnet"]:
                ctx.err(f"{path}.target", f"no subnet {fl.target} in vnets")
        elif fl.target not in vms and fl.target not in vnets:
            ctx.err(f"{path}.target", f"{fl.target!r} is neither a VNet, a vnet/subnet nor a "
                    "VM")
        if fl.name in seen:
            ctx.err(f"{path}.name", f"duplicate flow log name {fl.name!r} (also {seen[fl.name]})")
        seen.setdefault(fl.name, path)


def _check_traffic_and_faults(ctx: Ctx, parts: Parts, held: dict[IPv4Address, str],
                              public: dict[IPv4Address, str]) -> None:
    vms = {vm.name for _, vm in parts.vms}
    for path, t in parts.traffic:
        if t.source in vms:
            continue
        try:
            addr = ip_address(t.source)
        except ValueError:
            if t.source not in ctx.declared["vm"]:
                ctx.err(f"{path}.from", f"{t.source!r} is neither a VM in vms nor an Internet "
                        "client's IPv4 address")
            continue
        if not isinstance(addr, IPv4Address) or not is_internet(addr):
            ctx.err(f"{path}.from", f"{t.source} is not a public address: a client inside the "
                    "estate is a VM (name it)")
        elif addr in public or addr in held:
            ctx.err(f"{path}.from", f"{addr} belongs to {public.get(addr) or held.get(addr)}: "
                    "an Internet client is held by nothing")
    fws = {fw.name for _, fw in parts.fws} | ctx.declared["firewall"]
    ngws = {n.name for _, n in parts.ngws} | ctx.declared["nat_gateway"]
    for path, f in parts.faults:
        if f.kind == "latency" and f.at not in vms | fws | ngws:
            if f.at not in ctx.declared["vm"]:
                ctx.err(f"{path}.at", f"no VM, firewall or NAT gateway named {f.at!r}")
        if f.kind == "snat_exhaustion" and f.at not in fws | ngws:
            ctx.err(f"{path}.at", f"no NAT gateway or firewall named {f.at!r} (SNAT happens "
                    "there)")

