"""az's output layer and error behaviour in the lab: -o, --query, usage errors, not modelled."""

from __future__ import annotations

import json
import shlex
from collections import OrderedDict

import pytest
import yaml

from lab.az.output import render, simple_table
from lab.runner import LabRunner
from lab.scenario import parse_scenario
from tests.lab.conftest import SUBSCRIPTION, base_scenario


@pytest.fixture
def runner() -> LabRunner:
    return LabRunner(parse_scenario(base_scenario(), "output.yaml"))


def run(runner: LabRunner, command: str) -> tuple[int, str, str]:
    answer = runner.run(shlex.split(command))
    return answer.exit_code, answer.stdout, answer.stderr


def test_simple_table_matches_tabulate_layout() -> None:
    # tabulate(rows, headers="keys", tablefmt="simple", disable_numparse=True) for these rows
    rows = [OrderedDict([("Name", "vnet-prod"), ("Num", 2), ("Flag", False), ("Empty", " ")]),
            OrderedDict([("Name", "x"), ("Num", 10), ("Flag", True), ("Empty", "a"),
                         ("Extra", "z")])]
    assert simple_table(rows) == (
        "Name       Num    Flag    Empty    Extra\n"
        "---------  -----  ------  -------  -------\n"
        "vnet-prod  2      False\n"
        "x          10     True    a        z\n")


def test_json_sorts_keys_and_tsv_sorts_plain_objects_but_keeps_query_order() -> None:
    data = [{"b": 1, "a": "x", "c": [1, 2], "d": {"k": 1}, "e": True}]
    assert render(data, "json").index('"a"') < render(data, "json").index('"b"')
    assert render(data, "tsv") == "x\t1\t2\t\tTrue\n"
    assert render(data, "tsv", "[].{B:b, A:a}") == "1\tx\n"
    assert render(True, "tsv") == "true\n"
    assert render(data, "none") == ""
    assert yaml.safe_load(render(data, "yaml")) == data


@pytest.mark.parametrize(("command", "stdout"), [
    ("az vm list --query [].name -o tsv", "web-vm-01\nredis-vm-01\n"),
    ("az vm list --query \"[?name=='redis-vm-01'].resourceGroup\" -o tsv", "rg-prod-data\n"),
    ("az network vnet show -g rg-prod-net -n vnet-prod --query addressSpace.addressPrefixes[0] "
     "-o tsv", "10.1.0.0/16\n"),
    ("az vm show -g rg-prod-app -n web-vm-01 --query nonexistent", ""),
    ("az vm list --query \"[].{Name:name, Rg:resourceGroup}\" -o table",
     "Name         Rg\n-----------  ------------\nweb-vm-01    rg-prod-app\n"
     "redis-vm-01  rg-prod-data\n"),
    ("az vm list --query length(@)", "2\n"),
    ("az vm list -o table", "Name         ResourceGroup    Location\n"
     "-----------  ---------------  ----------\nweb-vm-01    rg-prod-app      westeurope\n"
     "redis-vm-01  rg-prod-data     westeurope\n"),
    ("az network vnet list -o none", ""),
])
def test_query_and_output_formats(runner: LabRunner, command: str, stdout: str) -> None:
    code, out, err = run(runner, command)
    assert (code, err) == (0, "")
    assert out == stdout


def test_json_output_sorts_keys_even_after_a_query(runner: LabRunner) -> None:
    code, out, _ = run(runner, "az vm show -g rg-prod-app -n web-vm-01 --query "
                               "'{z:name, a:location}'")
    assert code == 0
    assert json.loads(out) == {"z": "web-vm-01", "a": "westeurope"}
    assert out.index('"a"') < out.index('"z"')


@pytest.mark.parametrize(("command", "code", "stderr_start"), [
    ("az vm show -g rg-prod-app", 2, "ERROR: the following arguments are required: --name/-n"),
    ("az network watcher test-ip-flow --vm web-vm-01", 2,
     "ERROR: the following arguments are required: --direction, --protocol, --local, --remote"),
    ("az vm list --bogus 1", 2, "ERROR: unrecognized arguments: --bogus 1"),
    ("az vm show -g", 2, "ERROR: argument --resource-group/-g: expected one argument"),
    ("az vm list -o xml", 2, "ERROR: az vm list: 'xml' is not a valid value for '--output'."),
    ("az network watcher test-ip-flow --vm web-vm-01 -g rg-prod-app --direction sideways "
     "--protocol TCP --local 10.1.1.4:1 --remote 10.1.2.4:2", 2,
     "ERROR: az network watcher test-ip-flow: 'sideways' is not a valid value for '--direction'."),
    ("az vm list --query [[", 2, "ERROR: argument --query: invalid jmespath_type value: '[['"),
    ("az vmm list", 2, "ERROR: 'vmm' is misspelled or not recognized by the system."),
    ("az network vnet lsit", 2, "ERROR: 'lsit' is misspelled or not recognized by the system.\n"
     "Did you mean 'list' ?"),
    ("az vm show -g rg-prod-app -n nope", 3, "ERROR: (ResourceNotFound) The Resource "
     "'Microsoft.Compute/virtualMachines/nope' under resource group 'rg-prod-app' was not found."),
    ("az vm list -g rg-nope", 3, "ERROR: (ResourceGroupNotFound) Resource group 'rg-nope' could "
     "not be found.\nCode: ResourceGroupNotFound"),
    ("az network nsg rule show -g rg-prod-net --nsg-name nsg-data -n nope", 3,
     "ERROR: (NotFound) Resource /subscriptions/"),
    ("az vm list --subscription other-sub", 1, "ERROR: Subscription 'other-sub' not found."),
])
def test_errors_read_as_az_writes_them(runner: LabRunner, command: str, code: int,
                                       stderr_start: str) -> None:
    got_code, out, err = run(runner, command)
    assert (got_code, out) == (code, "")
    assert err.startswith(stderr_start), err


@pytest.mark.parametrize("command", [
    "az network nsg rule delete -g rg-prod-net --nsg-name nsg-data -n allow-web-to-redis",
    "az vm start -g rg-prod-app -n web-vm-01",
    "az storage account list",
    "az network vnet",
    "az vm list --help",
    "kubectl get pods",
    "ssh web-vm-01",
    "az vm run-command invoke -g rg-prod-app -n web-vm-01 --command-id RunShellScript "
    "--scripts 'systemctl status redis'",
    "az vm run-command invoke -g rg-prod-app -n web-vm-01 --command-id RunPowerShellScript "
    "--scripts 'Get-Process'",
])
def test_what_the_lab_does_not_model_is_said_plainly(runner: LabRunner, command: str) -> None:
    code, out, err = run(runner, command)
    assert (code, out) == (2, "")
    assert err.startswith("not modelled by the lab: ")
    assert err.count("\n") == 1


def test_global_options_are_accepted_anywhere(runner: LabRunner) -> None:
    code, out, _ = run(runner, f"az --only-show-errors vm list --subscription {SUBSCRIPTION} "
                               "--debug -o tsv --query [0].name")
    assert (code, out) == (2, "")  # az breaks on options before the command words
    code, out, _ = run(runner, f"az vm list --only-show-errors --subscription {SUBSCRIPTION} "
                               "--debug -o tsv --query [0].name")
    assert (code, out) == (0, "web-vm-01\n")


def test_runner_never_raises_on_odd_input(runner: LabRunner) -> None:
    for argv in ([], ["az"], ["az", ""], ["ping"], ["dig"], ["curl"], ["nc", "-zv"],
                 ["az", "vm", "run-command", "invoke", "-g", "rg-prod-app", "-n", "web-vm-01",
                  "--command-id", "RunShellScript", "--scripts", "echo 'unterminated"]):
        answer = runner.run(argv)
        assert answer.exit_code != 0 or answer.stdout


def test_yaml_and_attached_short_option_values(runner: LabRunner) -> None:
    code, out, _ = run(runner, "az vm show -grg-prod-app -n web-vm-01 -o yaml")
    assert code == 0
    body = yaml.safe_load(out)
    assert (body["name"], body["resourceGroup"]) == ("web-vm-01", "rg-prod-app")
    code, out, err = run(runner, "az network vnet show --ids /subscriptions/x/oops")
    assert (code, out) == (2, "")
    assert err.startswith("ERROR: invalid resource ID")
