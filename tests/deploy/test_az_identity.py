"""`az` gets the managed identity, and only `az` (docs/deploy.md, "az and the managed identity").

On Container Apps and App Service the identity endpoint reaches a process through
``IDENTITY_ENDPOINT`` + ``IDENTITY_HEADER`` (older platforms: ``MSI_ENDPOINT`` + ``MSI_SECRET``)
and the user-assigned identity through ``AZURE_CLIENT_ID``. The executor passes them to a child
whose program is ``az`` by name and to nothing else; the gate refuses every way the model could
read them back. ``ghost doctor`` runs the real Azure CLI against a stand-in identity endpoint.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from core.safety.classify import classify
from core.safety.executor import AZ_IDENTITY_NAMES, child_env, run_argv
from tests.fakes.identity_endpoint import TENANT, IdentityEndpoint

ROOT = Path(__file__).resolve().parents[2]
CLOUD = "GhostStandIn"
IDENTITY = {"IDENTITY_ENDPOINT": "http://localhost:42356/msi/token",
            "IDENTITY_HEADER": "hdr-8d1f0c", "MSI_ENDPOINT": "http://127.0.0.1:41741/msi/token",
            "MSI_SECRET": "msi-7a2e", "AZURE_CLIENT_ID": "0000aaaa-1111-2222-3333-444455556666"}
DUMP_ENV = "#!{python}\nimport json, os\nprint(json.dumps(dict(os.environ)))\n"


@pytest.fixture
def programs(tmp_path: Path) -> Path:
    """A PATH whose `az`, `printenv` and `not-az` each print the environment they got."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("az", "printenv", "not-az", "azure"):
        (bin_dir / name).write_text(DUMP_ENV.format(python=sys.executable))
        (bin_dir / name).chmod(0o755)
    return bin_dir


def _env_of(argv: list[str], bin_dir: Path, cwd: Path | None = None) -> dict[str, str]:
    environ = {"PATH": str(bin_dir), "HOME": "/nonexistent", **IDENTITY,
               "GHOST_DATABASE_URL": "postgresql://x:pw@h/db"}
    result = run_argv(argv, timeout_s=30, max_output_bytes=1 << 20, environ=environ, cwd=cwd)
    assert result.exit_code == 0, result.stderr
    return dict(json.loads(result.stdout))


def test_az_gets_the_identity_variables(programs: Path) -> None:
    env = _env_of(["az", "group", "list"], programs)
    assert {k: env[k] for k in AZ_IDENTITY_NAMES} == IDENTITY
    assert "GHOST_DATABASE_URL" not in env  # still scrubbed of everything else


@pytest.mark.parametrize("argv", [
    ["printenv"], ["not-az"], ["azure"],
    ["env"],                                   # /usr/bin/env, the real one
    ["./az", "group", "list"],                 # az by path is not az
    [sys.executable, "-c", "import json, os; print(json.dumps(dict(os.environ)))"],
], ids=["printenv", "not-az", "azure", "env", "./az", "python"])
def test_no_other_program_gets_any_of_them(programs: Path, argv: list[str]) -> None:
    if argv == ["env"]:
        found = run_argv(["env"], timeout_s=30, max_output_bytes=1 << 20,
                         environ={"PATH": "/usr/bin:/bin", **IDENTITY}).stdout
        env = dict(line.split("=", 1) for line in found.splitlines() if "=" in line)
    else:
        env = _env_of(argv, programs, cwd=programs)
    assert not set(AZ_IDENTITY_NAMES) & set(env), env
    assert not any(value in json.dumps(env) for value in IDENTITY.values())


def test_child_env_is_the_only_door() -> None:
    """The allowlist still refuses them for every program (a configuration bug is loud)."""
    assert child_env(["az"], environ={"PATH": "/bin", "MSI_SECRET": ""}) == {"PATH": "/bin"}
    for name in AZ_IDENTITY_NAMES[:4]:
        with pytest.raises(ValueError, match="looks like a credential"):
            child_env(["printenv"], [name], environ=IDENTITY)


#: every way of reading a child's environment or the identity endpoint: FORBIDDEN in the gate
FORBIDDEN = [
    "cat /proc/self/environ", "cat /proc/1/environ", "cat /proc/*/environ",
    "strings /proc/self/environ", "tr '\\0' '\\n' < /proc/self/environ",
    "xargs -0 -n1 < /proc/self/environ", "grep -a IDENTITY /proc/thread-self/environ",
    "bash -c 'cat /proc/self/environ'", "ps eww", "ps auxe",
    "printenv IDENTITY_HEADER", "echo $IDENTITY_HEADER", "echo ${MSI_SECRET}",
    "az account get-access-token", "az account get-access-token --query accessToken -o tsv",
    "az  account get-access-token --resource https://ossrdbms-aad.database.windows.net",
    "curl http://localhost:42356/msi/token?api-version=2019-08-01",
    "curl -s 'http://127.0.0.1:42356/msi/token?resource=x' -H 'X-IDENTITY-HEADER: h'",
    "curl http://[::1]:42356/msi/token", "curl http://0x7f000001:42356/msi/token",
    'curl "$IDENTITY_ENDPOINT?resource=x" -H "X-IDENTITY-HEADER: $IDENTITY_HEADER"',
    "wget -qO- http://localhost:42356/msi/token",
    "python3 -c 'import urllib.request as u; u.urlopen(\"http://localhost:42356/msi/token\")'",
    "az rest --url http://localhost:42356/msi/token",
    "curl http://169.254.169.254/metadata/identity/oauth2/token",
]
#: Programs and builtins that print the environment: FORBIDDEN since issue 28's second round
#: (whatever an engineer approves, these programs are not `az`, so they get no identity
#: variable either: the tests above).
ENVIRONMENT_DUMPS = ["env", "printenv", "/usr/bin/env", "sh -c env", "env | grep IDENT",
                     "python3 -c 'import os; print(os.environ)'", "ps -E", "export",
                     "declare -x", "printenv IDENTITY_HEADER", "export -p", "set", "env -0",
                     "typeset -x", "compgen -e", "docker inspect web",
                     "systemctl show-environment", "kubectl set env deploy/web --list"]


@pytest.mark.parametrize("command", ENVIRONMENT_DUMPS)
def test_dumping_the_environment_is_forbidden(command: str) -> None:
    verdict = classify(command)
    assert verdict.classification == "FORBIDDEN", (command, verdict)
    assert verdict.reason.startswith("Ghost will not offer this for approval: ")
    assert "ask the engineer to run it themselves" in verdict.reason


# ------------------------------------------------------------------ the real Azure CLI
def _real_az() -> str | None:
    for candidate in (os.environ.get("GHOST_TEST_AZ"), str(ROOT / ".ci-tools/az/bin/az"),
                      shutil.which("az")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


@pytest.fixture
def real_az(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The Azure CLI (`.ci/run` installs the image's pinned one into .ci-tools/az) on the PATH
    Ghost gives its commands, with an AZURE_CONFIG_DIR of its own."""
    az = _real_az()
    if az is None:
        pytest.skip("no Azure CLI: .ci/run installs it into .ci-tools/az (or set GHOST_TEST_AZ)")
    bin_dir = tmp_path / "azbin"
    bin_dir.mkdir()
    (bin_dir / "az").symlink_to(az)
    config = tmp_path / "azure"
    config.mkdir()
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}")
    monkeypatch.setenv("AZURE_CONFIG_DIR", str(config))
    # a cloud whose every endpoint is on loopback (ARM on port 9: nothing listens), so no
    # request of this test leaves the machine
    (config / "config").write_text(f"[cloud]\nname = {CLOUD}\n[core]\ncollect_telemetry = "
                                   "false\n[output]\nshow_survey_link = false\n")
    (config / "clouds.config").write_text(
        f"[{CLOUD}]\nendpoint_resource_manager = https://127.0.0.1:9/\n"
        "endpoint_active_directory = https://127.0.0.1:9\n"
        "endpoint_active_directory_resource_id = https://management.core.windows.net/\n"
        "endpoint_management = https://management.core.windows.net/\n"
        "endpoint_active_directory_graph_resource_id = https://127.0.0.1:9/\n"
        "endpoint_microsoft_graph_resource_id = https://127.0.0.1:9/\n"
        "endpoint_gallery = https://127.0.0.1:9/\nendpoint_portal = https://127.0.0.1:9/\n"
        "suffix_keyvault_dns = .vault.azure.net\nsuffix_storage_endpoint = core.windows.net\n")
    return config


def _signed_in_with_identity(config: Path, client_id: str, subscription: str) -> None:
    """What `az login --identity --client-id …` (the entrypoint) leaves in AZURE_CONFIG_DIR.
    Run here it would stop at listing subscriptions from Azure Resource Manager, which these
    machines cannot reach; the token it fetched first comes from the same endpoint as below."""
    (config / "azureProfile.json").write_text(json.dumps({"subscriptions": [{
        "id": subscription, "name": "ghost", "state": "Enabled", "isDefault": True,
        "tenantId": TENANT, "homeTenantId": TENANT, "environmentName": CLOUD,
        "managedByTenants": [],
        "user": {"name": "userAssignedIdentity", "type": "servicePrincipal",
                 "assignedIdentityInfo": f"MSIClient-{client_id}"}}]}))


@pytest.mark.parametrize("msi", [False, True], ids=["IDENTITY_*", "MSI_*"])
def test_doctor_shows_az_token_ok_with_the_identity_endpoint(
        ghost_env: Path, real_az: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], msi: bool) -> None:
    from bot.cli import main

    sub = "11111111-2222-3333-4444-555555555555"
    endpoint = IdentityEndpoint(client_id="0000aaaa-1111-2222-3333-444455556666").start()
    try:
        for name, value in endpoint.environ(msi=msi).items():
            monkeypatch.setenv(name, value)
        monkeypatch.setenv("GHOST_AZURE_SUBSCRIPTION_ID", sub)
        _signed_in_with_identity(real_az, endpoint.client_id, sub)
        main(["doctor"])
        lines = capsys.readouterr().out.splitlines()
    finally:
        endpoint.stop()
    token = [ln for ln in lines if ln.split()[1:3] == ["az", "token"]]
    assert token and token[0].startswith("ok    az token   az gets a token for servicePrincipal "
                                         "userAssignedIdentity (valid until "), lines
    # az asked the stand-in with the platform's header, for the user-assigned identity
    assert endpoint.requests and all(r["authorized"] for r in endpoint.requests)
    query = endpoint.requests[0]["query"]
    assert query["api-version"] == ("2017-09-01" if msi else "2019-08-01")
    assert query["clientid" if msi else "client_id"] == endpoint.client_id
    # the read goes to the stand-in cloud's ARM on 127.0.0.1:9, where nothing answers
    read = [ln for ln in lines if ln.split()[1:3] == ["az", "read"]]
    assert read and read[0].startswith("FAIL  az read    az cannot read: "), lines
