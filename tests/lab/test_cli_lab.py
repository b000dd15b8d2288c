"""`ghost lab list | check | exec` as a scenario author runs them (the real `ghost` process)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.scenario import load_scenario, shipped_scenarios

from .wiring_fixtures import scenario_data, write_scenario


def ghost(env: dict[str, str], *args: str, cwd: Path | None = None,
          stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, cwd=cwd,
                          input=stdin, capture_output=True, text=True, timeout=120)


def test_list_names_every_shipped_scenario_with_its_title(cli_env: dict[str, str]) -> None:
    result = ghost(cli_env, "lab", "list")
    assert result.returncode == 0, result.stderr
    for path in shipped_scenarios():
        scenario = load_scenario(path)
        line = next(x for x in result.stdout.splitlines() if x.startswith(scenario.name + " "))
        assert scenario.title in line


def _broken(tmp_path: Path, name: str, change: Any) -> Path:
    data = copy.deepcopy(scenario_data())
    data["name"] = name
    change(data)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


BROKEN = {
    "unknown-key": (lambda d: d["vms"][0].update(colour="blue"), "vms[0]"),
    "overlapping-subnet": (lambda d: d["vnets"][0]["subnets"][3].update(prefix="10.20.2.0/23"),
                           "vnets[0].subnets[3].prefix"),
    "dangling-reference": (lambda d: d["vnets"][0]["subnets"][2].update(nsg="nsg-nowhere"),
                           "vnets[0].subnets[2].nsg"),
    "bad-cidr": (lambda d: d["vnets"][0].update(address_space=["10.20.0.0/33"]),
                 "vnets[0].address_space"),
}


def test_check_reports_each_broken_file_on_one_line_and_exits_1(
        cli_env: dict[str, str], tmp_path: Path) -> None:
    files = {name: _broken(tmp_path, name, change) for name, (change, _) in BROKEN.items()}
    good = write_scenario(tmp_path / "good")
    result = ghost(cli_env, "lab", "check", str(good), *map(str, files.values()))
    assert result.returncode == 1
    assert "Traceback" not in result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert f"{good}: ok" in lines
    for name, (_, field) in BROKEN.items():
        mine = [x for x in lines if x.startswith(f"{name}.yaml:")]
        assert len(mine) == 1, (name, mine)
        assert f"{name}.yaml: {field}" in mine[0], (name, mine)
    assert "4 of 5 scenario file(s) have errors" in result.stderr


def test_check_of_a_file_that_is_not_there_is_one_line(cli_env: dict[str, str],
                                                       tmp_path: Path) -> None:
    result = ghost(cli_env, "lab", "check", str(tmp_path / "nope.yaml"))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert len([x for x in result.stdout.splitlines() if "nope.yaml" in x]) == 1


@pytest.fixture
def scenario_file(tmp_path: Path) -> Path:
    return write_scenario(tmp_path / "scn")


def test_exec_prints_the_verdict_then_the_labs_answer_and_exit_code(
        cli_env: dict[str, str], scenario_file: Path) -> None:
    result = ghost(cli_env, "lab", "exec", str(scenario_file), "--", "az", "network",
                   "watcher", "test-ip-flow", "-g", "rg-data", "--vm", "db-1", "--direction",
                   "Inbound", "--protocol", "TCP", "--local", "10.20.2.4:6380", "--remote",
                   "10.20.1.4:50000")
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("gate: SAFE")
    assert '"access": "Deny"' in result.stdout
    assert "securityRules/deny-app-6380" in result.stdout
    assert lines[-1] == "exit: 0"


def test_exec_agrees_with_the_model_on_a_stopped_vm(cli_env: dict[str, str],
                                                    scenario_file: Path) -> None:
    result = ghost(cli_env, "lab", "exec", str(scenario_file), "--",
                   "az vm get-instance-view -g rg-data -n stopped-1 "
                   "--query 'instanceView.statuses[1].displayStatus' -o tsv")
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1] == "VM deallocated"


def test_exec_agrees_with_the_model_on_a_route_to_none(cli_env: dict[str, str],
                                                       tmp_path: Path) -> None:
    data = scenario_data()
    data["route_tables"][0]["routes"][0].update(next_hop="None", next_hop_ip=None)
    del data["route_tables"][0]["routes"][0]["next_hop_ip"]
    path = write_scenario(tmp_path / "none", data)
    result = ghost(cli_env, "lab", "exec", str(path), "--", "az", "network", "watcher",
                   "show-next-hop", "-g", "rg-app", "--vm", "app-1", "--source-ip",
                   "10.20.1.4", "--dest-ip", "10.20.3.4")
    assert result.returncode == 0, result.stdout + result.stderr
    assert '"nextHopType": "None"' in result.stdout and "rt-app" in result.stdout


def test_exec_of_an_in_vm_probe_shows_the_verdict_then_what_the_lab_answers(
        cli_env: dict[str, str], scenario_file: Path) -> None:
    result = ghost(cli_env, "lab", "exec", str(scenario_file), "--",
                   'az vm run-command invoke -g rg-app -n app-1 --command-id RunShellScript '
                   '--scripts "nslookup pg-1.postgres.database.azure.com"')
    assert result.stdout.startswith("gate: RISKY (tier 2, T2.az_vm_probe)")
    assert "ask for approval first" in result.stdout
    assert "20.61.14.5" in result.stdout, "no zone link: the VM gets the public address"
    assert "10.20.2.8" not in result.stdout


def test_exec_of_a_forbidden_command_shows_the_verdict_then_what_the_lab_would_answer(
        cli_env: dict[str, str], scenario_file: Path) -> None:
    result = ghost(cli_env, "lab", "exec", str(scenario_file), "--",
                   'az vm run-command invoke -g rg-app -n app-1 --command-id RunShellScript '
                   '--scripts "nslookup pg-1.postgres.database.azure.com; hostname"')
    assert result.stdout.startswith("gate: FORBIDDEN")
    assert "would never run this" in result.stdout
    assert "20.61.14.5" in result.stdout, "no zone link: the VM gets the public address"


def test_exec_never_runs_a_real_program_the_gate_does_not_allow(
        cli_env: dict[str, str], scenario_file: Path, tmp_path: Path) -> None:
    secret = tmp_path / "outside.txt"
    secret.write_text("must not be printed", encoding="utf-8")
    result = ghost(cli_env, "lab", "exec", str(scenario_file), "--", "cat", str(secret))
    assert result.returncode == 1 and "not run" in result.stdout
    assert "must not be printed" not in result.stdout + result.stderr


def test_exec_of_an_unknown_scenario_is_one_line(cli_env: dict[str, str]) -> None:
    result = ghost(cli_env, "lab", "exec", "no-such-scenario", "--", "az", "vm", "list")
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "no-such-scenario" in result.stderr and "ghost lab list" in result.stderr
