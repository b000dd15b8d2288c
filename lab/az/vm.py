"""`az vm list|show|get-instance-view|list-ip-addresses` and `az vm run-command invoke`.

run-command runs the script in the VM's guest through the lab's probes and answers in az's
shape (``value[0].message`` = "Enable succeeded: \\n[stdout]\\n…\\n[stderr]\\n…"); on a VM that
is not running Azure refuses with OperationNotAllowed. Only ``RunShellScript`` is modelled
(the VMs are Linux).
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import jmespath

from lab.az import resources as res
from lab.az.args import NAME, RG, RG_OPTIONAL, Command, Parsed, opt
from lab.az.catalog import Catalog, same
from lab.az.errors import cloud_error
from lab.model import Vm
from lab.network import NotModelled
from lab.probes.common import Vantage
from lab.probes.script import run_script

ID_RG_NAME = (("resource_group", "resource_group"), ("name", "name"))
VM_NAME = opt("--vm-name", dest="vm_name", required=True)
DETAILS = opt("--show-details", "-d", dest="details", flag=True)


def _vm_row(vm: dict[str, Any]) -> OrderedDict[str, Any]:
    row = OrderedDict([("name", vm["name"]), ("resourceGroup", vm["resourceGroup"]),
                       ("powerState", vm.get("powerState")), ("publicIps", vm.get("publicIps")),
                       ("fqdns", vm.get("fqdns")), ("location", vm["location"])])
    if "zones" in vm:
        row["zones"] = ",".join(vm["zones"]) if vm["zones"] else ""
    return row


def _vm_table(result: Any) -> Any:
    return [_vm_row(v) for v in result] if isinstance(result, list) else _vm_row(result)


def _ip_table(result: Any) -> Any:
    rows = []
    for r in result:
        network = r["virtualMachine"]["network"]
        public = network.get("publicIpAddresses")
        private = network.get("privateIpAddresses")
        rows.append(OrderedDict([
            ("virtualMachine", r["virtualMachine"]["name"]),
            ("publicIPAddresses",
             ",".join(p["ipAddress"] for p in public if p["ipAddress"]) if public else None),
            ("privateIPAddresses", ",".join(private) if private else None),
        ]))
    return rows


def vm_list(cat: Catalog, a: Parsed) -> Any:
    vms = cat.in_rg(cat.scenario.vms, a.text("resource_group"))
    return [res.vm_json(cat, vm, bool(a.get("details"))) for vm in vms]


def vm_show(cat: Catalog, a: Parsed) -> Any:
    vm = cat.vm(a.require("resource_group"), a.require("name"))
    return res.vm_json(cat, vm, bool(a.get("details")))


def vm_instance_view(cat: Catalog, a: Parsed) -> Any:
    return res.instance_view_json(cat, cat.vm(a.require("resource_group"), a.require("name")))


def vm_ip_addresses(cat: Catalog, a: Parsed) -> Any:
    vms = cat.in_rg(cat.scenario.vms, a.text("resource_group"))
    name = a.text("name")
    if name:
        vms = [vm for vm in vms if same(vm.name, name)]
    return [{"virtualMachine": {"name": vm.name, "resourceGroup": vm.resource_group,
                                "network": {"privateIpAddresses": [str(vm.ip)],
                                            "publicIpAddresses": []}}} for vm in vms]


def _extension_json(cat: Catalog, vm: Vm) -> dict[str, Any]:
    vid = cat.scenario.vm_id(vm)
    return {"autoUpgradeMinorVersion": True, "id": f"{vid}/extensions/{res.EXTENSION_NAME}",
            "location": cat.scenario.location, "name": res.EXTENSION_NAME,
            "provisioningState": "Succeeded", "publisher": "Microsoft.Azure.NetworkWatcher",
            "type": "Microsoft.Compute/virtualMachines/extensions",
            "typeHandlerVersion": "1.4", "typePropertiesType": res.EXTENSION_NAME}


_EXTENSION_ROW = ("{Name:name, ProvisioningState:provisioningState, Publisher:publisher, "
                  "Version:typeHandlerVersion, AutoUpgradeMinorVersion:autoUpgradeMinorVersion}")


def _extension_table(result: Any) -> Any:
    expression = ("[]." if isinstance(result, list) else "") + _EXTENSION_ROW
    return jmespath.search(expression, result, jmespath.Options(dict_cls=OrderedDict))


def extension_list(cat: Catalog, a: Parsed) -> Any:
    vm = cat.vm(a.require("resource_group"), a.require("vm_name"))
    return [_extension_json(cat, vm)] if vm.network_watcher_extension else []


def extension_show(cat: Catalog, a: Parsed) -> Any:
    vm = cat.vm(a.require("resource_group"), a.require("vm_name"))
    name = a.require("name")
    if vm.network_watcher_extension and same(name, res.EXTENSION_NAME):
        return _extension_json(cat, vm)
    raise cloud_error("ResourceNotFound", f"The Resource 'Microsoft.Compute/virtualMachines/"
                      f"{vm.name}/extensions/{name}' under resource group '{vm.resource_group}' "
                      "was not found. For more details please go to "
                      "https://aka.ms/ARMResourceNotFoundFix", 3)


def vm_nic_list(cat: Catalog, a: Parsed) -> Any:
    vm = cat.vm(a.require("resource_group"), a.require("vm_name"))
    return [{"id": cat.scenario.nic_id(vm), "primary": True}]


def run_command(cat: Catalog, a: Parsed) -> Any:
    vm = cat.vm(a.require("resource_group"), a.require("name"))
    command_id = a.require("command_id")
    if not same(command_id, "RunShellScript"):
        raise NotModelled(f"run-command --command-id {command_id} (the lab's VMs are Linux and "
                          "run RunShellScript)")
    scripts = a.get("scripts") or []
    if a.get("parameters"):
        raise NotModelled("run-command --parameters")
    if vm.power_state != "running":
        raise cloud_error("OperationNotAllowed",
                          "The operation requires the VM to be running (or set to run).")
    result = run_script(Vantage(cat, vm), "\n".join(scripts))
    message = f"Enable succeeded: \n[stdout]\n{result.stdout}\n[stderr]\n{result.stderr}"
    return {"value": [{"code": "ProvisioningState/succeeded",
                       "displayStatus": "Provisioning succeeded", "level": "Info",
                       "message": message, "time": None}]}


COMMANDS: list[Command] = [
    Command(("vm", "list"), (RG_OPTIONAL, DETAILS), vm_list, _vm_table),
    Command(("vm", "show"), (RG, NAME, DETAILS), vm_show, _vm_table, ID_RG_NAME),
    Command(("vm", "get-instance-view"), (RG, NAME), vm_instance_view, None, ID_RG_NAME),
    Command(("vm", "list-ip-addresses"), (RG_OPTIONAL, opt("--name", "-n", dest="name")),
            vm_ip_addresses, _ip_table, ID_RG_NAME),
    Command(("vm", "extension", "list"), (RG, VM_NAME), extension_list, _extension_table),
    Command(("vm", "extension", "show"), (RG, VM_NAME, NAME), extension_show, _extension_table),
    Command(("vm", "nic", "list"), (RG, VM_NAME), vm_nic_list),
    Command(("vm", "run-command", "invoke"), (
        RG, NAME, opt("--command-id", dest="command_id", required=True),
        opt("--scripts", dest="scripts", multi=True),
        opt("--parameters", dest="parameters", multi=True)), run_command, None, ID_RG_NAME),
]
