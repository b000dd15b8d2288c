"""The custom roles grant exactly what Ghost uses in Azure (least privilege, proven).

The SDK calls are found by AST over ``cloud/*.py``; the ``az`` reads are the gate's allowlist
(``CLEAN_READS``): each is granted in ``rbac.AZ_READS`` or declined with a reason in
``rbac.AZ_DECLINED``, and each granted one is SAFE at the real gate.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.safety.classify import classify
from core.safety.rules.az_reads import CLEAN_READS, REQUIRED_VALUES
from tests.deploy import rbac

ROOT = Path(__file__).resolve().parents[2]
ROLE_FILES = [ROOT / "deploy/azure/ghost-role.json", ROOT / "deploy/azure/ghost-storage-role.json",
              ROOT / "deploy/azure/ghost-flowlog-role.json"]


def _calls(paths: list[Path] | None = None) -> list[rbac.SdkCall]:
    return rbac.sdk_calls(paths or sorted((ROOT / "cloud").glob("*.py")),
                          rbac.sdk_groups(), rbac.blob_methods())


def _roles() -> list[rbac.Role]:
    return [rbac.load_role(p) for p in ROLE_FILES]


def test_the_roles_grant_exactly_what_ghost_uses() -> None:
    assert rbac.problems(_calls(), rbac.AZ_READS, _roles()) == []


def test_the_scan_finds_the_capture_and_blob_calls() -> None:
    keys = {c.key for c in _calls()}
    assert {"packet_captures.begin_create", "packet_captures.begin_get_status",
            "packet_captures.begin_delete", "packet_captures.list",
            "network_watchers.list_all", "arm:detect_target", "arm:_require_extension",
            "blob.exists", "blob.download_blob", "blob.delete_blob"} <= keys


def test_every_clean_az_read_is_granted_or_declined() -> None:
    assert rbac.az_coverage(CLEAN_READS) == []


def test_a_new_clean_read_without_a_decision_fails() -> None:
    found = rbac.az_coverage({*CLEAN_READS, ("network", "watcher", "show-magic")})
    assert found == ["az network watcher show-magic: the gate calls it SAFE but "
                     "tests/deploy/rbac.py neither grants it (AZ_READS) nor declines it "
                     "(AZ_DECLINED)"]


@pytest.mark.parametrize("path", sorted(rbac.AZ_READS), ids=" ".join)
def test_each_granted_az_read_is_safe_at_the_gate(path: tuple[str, ...]) -> None:
    required = " ".join(REQUIRED_VALUES.get(path, ()))  # blob reads: --auth-mode login
    command = f"az {' '.join(path)} --resource-group prod --output json {required}".strip()
    verdict = classify(command)
    assert verdict.classification == "SAFE", (command, verdict.rule, verdict.reason)


def test_a_role_missing_an_action_fails() -> None:
    roles = _roles()
    main = roles[0]
    cut = rbac.Role(main.name, main.actions - {"Microsoft.Network/networkWatchers/nextHop/action"},
                    main.data_actions)
    found = rbac.problems(_calls(), rbac.AZ_READS, [cut, *roles[1:]])
    assert found == ["missing microsoft.network/networkwatchers/nexthop/action (needed by "
                     "az network watcher show-next-hop)"]


def test_an_unused_or_wildcard_action_fails() -> None:
    roles = _roles()
    main = roles[0]
    wide = rbac.Role(main.name, main.actions | {"Microsoft.Network/networkWatchers/*"},
                     main.data_actions)
    found = rbac.problems(_calls(), rbac.AZ_READS, [wide, *roles[1:]])
    assert any("wildcard" in p for p in found)
    assert any("which nothing in Ghost uses" in p for p in found)
    store = roles[1]
    write = rbac.Role(store.name, store.actions, store.data_actions | {
        "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write"})
    assert rbac.problems(_calls(), rbac.AZ_READS, [main, write, roles[2]]) == [
        "Ghost Capture Storage grants data:microsoft.storage/storageaccounts/blobservices/"
        "containers/blobs/write, which nothing in Ghost uses"]


def test_a_new_sdk_call_without_a_mapping_fails(tmp_path: Path) -> None:
    extra = tmp_path / "stop.py"
    extra.write_text(
        "class B:\n"
        "    def stop_capture(self, rg, watcher, name):\n"
        "        self.network.packet_captures.begin_stop(rg, watcher, name).result()\n"
        "    def vm(self, rg, name):\n"
        "        return self.compute.virtual_machines.get(rg, name)\n"
        "    def raw(self, url):\n"
        "        return self.network.send_request(url)\n")
    found = rbac.problems(_calls([*sorted((ROOT / "cloud").glob("*.py")), extra]),
                          rbac.AZ_READS, _roles())
    assert sorted(p.split(": ", 1)[1] for p in found) == [
        "SDK call packet_captures.begin_stop has no RBAC mapping in tests/deploy/rbac.py "
        "SDK_ACTIONS",
        "SDK call send_request in raw has no RBAC mapping in tests/deploy/rbac.py SDK_ACTIONS",
        "SDK call virtual_machines.get has no RBAC mapping in tests/deploy/rbac.py SDK_ACTIONS"]


def test_storage_actions_only_in_the_storage_role() -> None:
    """The investigator role is assigned on whole resource groups: no storage access, no data
    actions there; the storage role is assigned on the capture account only."""
    main, store, flow = _roles()
    assert not [a for a in main.all if "microsoft.storage" in a.lower()]
    assert not main.data_actions
    assert all("Microsoft.Storage/" in a for a in store.all)
    assert all("Microsoft.Storage/" in a for a in flow.all)


#: what reading flow logs takes (issue 33): finding the flow log on the investigator role,
#: blob read (list and download, --auth-mode login) on the flow-log container, and nothing else
FLOW_LOG_READS = {("network", "watcher", "flow-log", "list"): "investigator",
                  ("network", "watcher", "flow-log", "show"): "investigator",
                  ("storage", "blob", "list"): "flow",
                  ("storage", "blob", "download"): "flow"}


def test_the_flow_log_reader_grants_exactly_blob_read_and_the_investigator_finds_flow_logs(
        ) -> None:
    main, _, flow = _roles()
    assert not flow.actions
    assert {a.lower() for a in flow.data_actions} == {
        "microsoft.storage/storageaccounts/blobservices/containers/blobs/read"}
    for path, role in FLOW_LOG_READS.items():
        granted = main if role == "investigator" else flow
        needed = {a.lower() for a in rbac.AZ_READS[path]}
        have = {a.lower() for a in granted.actions} | {
            f"data:{a.lower()}" for a in granted.data_actions}
        assert needed <= have, (path, needed - have)


def test_the_flow_log_reader_is_assigned_on_flow_log_containers_only() -> None:
    module = (ROOT / "deploy/azure/modules/flowlog-reader.bicep").read_text(encoding="utf-8")
    assert "scope: container" in module and "insights-logs-flowlogflowevent" in module
    main = (ROOT / "deploy/azure/main.bicep").read_text(encoding="utf-8")
    assert "loadJsonContent('ghost-flowlog-role.json')" in main
    assert "modules/flowlog-reader.bicep' = [for fl in flowLogStorage" in main


def test_role_files_are_az_role_definitions() -> None:
    for path in ROLE_FILES:
        doc = json.loads(path.read_text(encoding="utf-8"))
        assert set(doc) == {"Name", "IsCustom", "Description", "Actions", "NotActions",
                            "DataActions", "NotDataActions", "AssignableScopes"}
        assert doc["IsCustom"] is True
        assert doc["Actions"] == sorted(doc["Actions"], key=str.lower)
