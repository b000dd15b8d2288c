"""The image's recipe without a container engine (none runs on our CI machines): the entrypoint
run for real with stand-in `az` and `ghost`, the Dockerfile's stages read as text, the pins
checked against pyproject.toml, and the compose file's services.

The install steps themselves (deploy/container/build-venvs.sh) need PyPI, so they are run by
hand into a fresh directory (docs/deploy.md, "Checking the image without Docker").
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
CONTAINER = ROOT / "deploy/container"

RECORDER = """#!/bin/sh
echo "$(basename "$0") $*" >> "$CALLS"
if [ "$(basename "$0")" = az ] && [ "$1" = login ] && [ -n "${AZ_FAILS:-}" ]; then
    echo "ERROR: ManagedIdentityCredential: no identity endpoint" >&2
    exit 1
fi
"""


def _entrypoint(tmp_path: Path, args: list[str], **env: str) -> tuple[int, list[str], str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    for name in ("az", "ghost"):
        (bin_dir / name).write_text(RECORDER)
        (bin_dir / name).chmod(0o755)
    calls = tmp_path / "calls"
    calls.write_text("")
    full_env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "CALLS": str(calls), "TMPDIR": str(tmp_path),
                **env}
    proc = subprocess.run(["sh", str(CONTAINER / "entrypoint.sh"), *args], env=full_env,
                          capture_output=True, text=True, timeout=30, check=False)
    return proc.returncode, calls.read_text().splitlines(), proc.stderr


def test_entrypoint_signs_az_in_with_the_managed_identity_then_serves(tmp_path: Path) -> None:
    code, calls, _ = _entrypoint(tmp_path, [], AZURE_CLIENT_ID="client-1",
                                 GHOST_AZURE_SUBSCRIPTION_ID="sub-1")
    assert code == 0
    assert calls == [
        "az login --identity --client-id client-1 --allow-no-subscriptions --output none",
        "az account set --subscription sub-1 --output none",
        "ghost serve"]


def test_entrypoint_runs_the_command_it_is_given(tmp_path: Path) -> None:
    code, calls, _ = _entrypoint(tmp_path, ["worker"])
    assert (code, calls) == (0, ["ghost worker"])  # no identity: az is left alone
    code, calls, _ = _entrypoint(tmp_path, ["db", "upgrade"], AZURE_CLIENT_ID="c",
                                 GHOST_AZ_LOGIN="false")
    assert (code, calls) == (0, ["ghost db upgrade"])


def test_entrypoint_starts_ghost_even_when_az_login_fails(tmp_path: Path) -> None:
    code, calls, err = _entrypoint(tmp_path, ["worker"], AZURE_CLIENT_ID="c", AZ_FAILS="1")
    assert code == 0 and calls[-1] == "ghost worker"
    assert "az login --identity failed (ERROR: ManagedIdentityCredential" in err
    assert "ghost doctor" in err


def _stages() -> list[list[str]]:
    stages: list[list[str]] = []
    for line in (CONTAINER / "Dockerfile").read_text().splitlines():
        if line.startswith("FROM "):
            stages.append([])
        if stages and line.strip() and not line.lstrip().startswith("#"):
            stages[-1].append(line)
    return stages


def test_dockerfile_is_multi_stage_pinned_and_non_root() -> None:
    build, final = _stages()
    base = re.compile(r"^FROM python:3\.11\.\d+-slim-\w+( AS build)?$")
    assert base.match(build[0]) and base.match(final[0])
    assert build[0].split()[1] == final[0].split()[1]  # same Python in both stages
    text = "\n".join(final)
    assert re.search(r"^USER ghost:ghost$", text, re.M)
    for tool in ("gcc", "g++", "build-essential", "make ", "-dev ", "pip install"):
        assert tool not in text, tool  # nothing is built, no Python package installed here
    for program in ("dnsutils", "iputils-ping", "traceroute", "iproute2", "curl"):
        assert program in text, program  # the local diagnostics the model starts with
    assert "COPY --from=build /opt/ghost /opt/ghost" in text
    assert "COPY --from=build /opt/az /opt/az" in text
    assert 'ENTRYPOINT ["/usr/local/bin/ghost-entrypoint"]' in text


def test_dockerfile_copies_every_package_it_installs() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    packages = [p.rstrip("*") for p in project["tool"]["setuptools"]["packages"]["find"]["include"]]
    build = "\n".join(_stages()[0])
    for package in packages:
        assert f"COPY {package} ./{package}" in build, package


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep and version, f"{path.name}: {line!r} is not pinned with =="
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def test_every_runtime_dependency_is_pinned_to_a_version_pyproject_accepts() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    pins = _pins(CONTAINER / "ghost-requirements.txt")
    for spec in project["project"]["dependencies"]:
        req = Requirement(spec)
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        assert name in pins, f"{req.name} is not in ghost-requirements.txt; regenerate it"
        assert req.specifier.contains(pins[name]), (req.name, pins[name], str(req.specifier))


def test_the_azure_cli_is_pinned_in_its_own_environment() -> None:
    az = _pins(CONTAINER / "az-requirements.txt")
    assert re.fullmatch(r"2\.\d+\.\d+", az["azure-cli"])
    assert "ghost" not in az and "slack-bolt" not in az


def test_compose_runs_postgres_azurite_serve_and_two_workers() -> None:
    doc = yaml.safe_load((ROOT / "deploy/compose.yaml").read_text())
    services = doc["services"]
    assert set(services) == {"postgres", "azurite", "migrate", "web", "worker"}
    assert services["web"]["command"][0] == "serve"
    assert services["worker"]["command"] == ["worker"]
    assert services["worker"]["deploy"]["replicas"] == 2
    assert services["migrate"]["command"] == ["db", "upgrade"]
    for name in ("web", "worker"):
        assert services[name]["depends_on"]["migrate"]["condition"] == \
            "service_completed_successfully"
    assert services["migrate"]["build"]["dockerfile"] == "deploy/container/Dockerfile"
    for service in services.values():
        image = service["image"]
        assert image == "ghost:local" or re.search(r":\d+\.\d+(\.\d+)?(-\w+)?$", image), image
    assert "--disableTelemetry" in services["azurite"]["command"]
