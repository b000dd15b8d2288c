"""Checks across sections: references resolve, address plans hold as Azure would enforce them."""

from __future__ import annotations

from ipaddress import IPv4Address, ip_address
from typing import TYPE_CHECKING, Any

from lab.model import Fault, Nsg, PrivateDnsZone, RouteTable, Traffic, Vm, VNet

if TYPE_CHECKING:
    from lab.validate_ctx import Ctx


def _fmt(nets: Any) -> str:
    return ", ".join(str(n) for n in nets)


def check_references(ctx: Ctx, vnets: list[tuple[str, VNet]], nsgs: list[tuple[str, Nsg]],
                     rts: list[tuple[str, RouteTable]], zones: list[tuple[str, PrivateDnsZone]],
                     vms: list[tuple[str, Vm]], traffic: list[tuple[str, Traffic]],
                     faults: list[tuple[str, Fault]], vm_facts: dict[str, dict[str, Any]]) -> None:
    declared = ctx.declared
    vnet_by_name = {v.name: (p, v) for p, v in vnets}
    vm_names = declared["vm"]
    _check_vnets(ctx, vnets, declared["nsg"], declared["route_table"])
    _check_peerings(ctx, vnets, vnet_by_name)
    _check_vms(ctx, vms, vnet_by_name, declared["nsg"])
    for path, zone in zones:
        seen: set[str] = set()
        links = [*zone.linked_vnets, *(v for v, _ in zone.link_windows)]
        for i, link in enumerate(links):
            if link not in ctx.declared["vnet"]:
                ctx.err(f"{path}.linked_vnets[{i}]", f"no VNet named {link!r} in vnets")
            elif link in seen:
                ctx.err(f"{path}.linked_vnets[{i}]", f"{link} is linked twice")
            seen.add(link)
    held = {v.ip: v.name for _, v in vms}
    for path, t in traffic:
        if t.source not in vm_names and ctx.fmt < 2:  # format 2: lab/validate_refs_v2.py
            ctx.err(f"{path}.from", f"no VM named {t.source!r} in vms")
        if t.to not in vm_names:
            try:
                addr = ip_address(t.to)
            except ValueError:
                ctx.err(f"{path}.to", f"{t.to!r} is neither a VM in vms nor an IPv4 address")
                continue
            if not isinstance(addr, IPv4Address):
                ctx.err(f"{path}.to", f"{t.to!r} is not an IPv4 address")
            elif addr in held:
                ctx.err(f"{path}.to", f"{addr} is held by VM {held[addr]}: name the VM instead")
    for path, f in faults:
        key = "vm" if f.kind == "no_listener" else "at"
        if ctx.fmt >= 2 and f.kind in ("latency", "snat_exhaustion"):
            continue  # may sit on a firewall or NAT gateway: lab/validate_refs_v2.py
        if f.at not in vm_names:
            ctx.err(f"{path}.{key}", f"no VM named {f.at!r} in vms")
    for key in vm_facts:
        if key not in vm_names:
            ctx.err(f"vm_facts.{key}", f"no VM named {key!r} in vms")


def _check_vnets(ctx: Ctx, vnets: list[tuple[str, VNet]], nsg_names: set[str],
                 rt_names: set[str]) -> None:
    for path, vnet in vnets:
        for i, net in enumerate(vnet.address_space):
            for j in range(i):
                if net.overlaps(vnet.address_space[j]):
                    ctx.err(f"{path}.address_space[{i}]",
                            f"{net} overlaps {path}.address_space[{j}] ({vnet.address_space[j]})")
        for i, sub in enumerate(vnet.subnets):
            spath = f"{path}.subnets[{i}]"
            if vnet.address_space and not any(sub.prefix.subnet_of(s) for s in vnet.address_space):
                ctx.err(f"{spath}.prefix", f"{sub.prefix} is outside the address space of "
                        f"{vnet.name} ({_fmt(vnet.address_space)})")
            for j in range(i):
                other = vnet.subnets[j]
                if sub.prefix.overlaps(other.prefix):
                    ctx.err(f"{spath}.prefix",
                            f"{sub.prefix} overlaps {path}.subnets[{j}] ({other.prefix})")
            if sub.nsg is not None and sub.nsg not in nsg_names:
                ctx.err(f"{spath}.nsg", f"no NSG named {sub.nsg!r} in nsgs")
            if sub.route_table is not None and sub.route_table not in rt_names:
                ctx.err(f"{spath}.route_table",
                        f"no route table named {sub.route_table!r} in route_tables")


def _check_peerings(ctx: Ctx, vnets: list[tuple[str, VNet]],
                    by_name: dict[str, tuple[str, VNet]]) -> None:
    for path, vnet in vnets:
        remotes: dict[str, int] = {}
        for i, peer in enumerate(vnet.peerings):
            ppath = f"{path}.peerings[{i}]"
            found = by_name.get(peer.remote_vnet)
            if found is None:
                if peer.remote_vnet not in ctx.declared["vnet"]:
                    ctx.err(f"{ppath}.remote_vnet",
                            f"no VNet named {peer.remote_vnet!r} in vnets")
                continue
            remote = found[1]
            if remote.name == vnet.name:
                ctx.err(f"{ppath}.remote_vnet", f"{vnet.name} cannot peer with itself")
                continue
            if remote.name in remotes:
                ctx.err(f"{ppath}.remote_vnet", f"{vnet.name} already peers with {remote.name} "
                        f"({path}.peerings[{remotes[remote.name]}])")
                continue
            remotes[remote.name] = i
            clash = [(a, b) for a in vnet.address_space for b in remote.address_space
                     if a.overlaps(b)]
            if clash:
                a, b = clash[0]
                ctx.err(f"{ppath}.remote_vnet", f"address space of {vnet.name} ({a}) overlaps "
                        f"{remote.name} ({b}): Azure refuses to peer overlapping VNets")
            back = [p for p in remote.peerings if p.remote_vnet == vnet.name]
            if peer.state == "Connected" and not any(p.state == "Connected" for p in back):
                ctx.err(f"{ppath}.state", f"Connected needs a Connected peering from "
                        f"{remote.name} back to {vnet.name} (Azure shows Initiated until both "
                        "sides exist)")
            elif peer.state in ("Initiated", "Disconnected") and back:
                side = ("the only side created so far" if peer.state == "Initiated"
                        else "the side left after the other was deleted")
                ctx.err(f"{ppath}.state", f"{peer.state} means {side}, but {remote.name} has "
                        f"peering {back[0].name} back to {vnet.name} (both sides: Connected)")


def _check_vms(ctx: Ctx, vms: list[tuple[str, Vm]], by_name: dict[str, tuple[str, VNet]],
               nsg_names: set[str]) -> None:
    taken: dict[IPv4Address, tuple[str, str]] = {}
    for path, vm in vms:
        found = by_name.get(vm.vnet)
        subnet = next((s for s in found[1].subnets if s.name == vm.subnet), None) if found else None
        if found is None:
            if vm.vnet not in ctx.declared["vnet"]:
                ctx.err(f"{path}.subnet", f"no VNet named {vm.vnet!r} in vnets")
        elif subnet is None:
            if f"{vm.vnet}/{vm.subnet}" not in ctx.declared["subnet"]:
                ctx.err(f"{path}.subnet", f"VNet {vm.vnet} has no subnet named {vm.subnet!r}")
        else:
            net = subnet.prefix
            if vm.ip not in net:
                ctx.err(f"{path}.ip", f"{vm.ip} is outside subnet {vm.vnet}/{vm.subnet} ({net})")
            elif int(vm.ip) - int(net.network_address) < 4 or vm.ip == net.broadcast_address:
                ctx.err(f"{path}.ip", f"{vm.ip} is reserved by Azure in {net} (the first four "
                        "and the last address of every subnet)")
        if vm.ip in taken:
            other_path, other = taken[vm.ip]
            ctx.err(f"{path}.ip", f"{vm.ip} is already used by {other_path} ({other})")
        else:
            taken[vm.ip] = (path, vm.name)
        if vm.nic_nsg is not None and vm.nic_nsg not in nsg_names:
            ctx.err(f"{path}.nic_nsg", f"no NSG named {vm.nic_nsg!r} in nsgs")
