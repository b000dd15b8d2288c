"""Azure stand-ins: the fake ARM server and Azurite (installed by ``npm install`` at the root)."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from azure.core.credentials import AccessToken

from tests.cloud.fake_arm import TOKEN, FakeArm

ROOT = Path(__file__).resolve().parents[2]
AZURITE_ACCOUNT = "devstoreaccount1"
# Azurite's published, well-known development key (not a secret)
AZURITE_KEY = ("Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/"
               "KBHBeksoGMGw==")


class StaticToken:
    """A TokenCredential for the fake ARM server."""

    def get_token(self, *scopes: str, **kwargs: object) -> AccessToken:
        expires = int((datetime.now(UTC) + timedelta(hours=1)).timestamp())
        return AccessToken(TOKEN, expires)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _azurite_bin() -> Path:
    """Azurite from `package.json`, installed once: xdist workers take turns on a lock file
    (two `npm ci` in one folder at once fail with ENOTEMPTY), and the later ones find it."""
    binary = ROOT / "node_modules" / ".bin" / "azurite-blob"
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: Azurite (the blob emulator) cannot be installed; "
                    "install Node.js 20 + npm, then run `npm ci` in the repo root")
    key = hashlib.sha256(str(ROOT).encode()).hexdigest()[:16]
    with open(Path(tempfile.gettempdir()) / f"ghost-npm-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            command = [npm, "ci"] if (ROOT / "package-lock.json").exists() else [npm, "install"]
            subprocess.run([*command, "--no-audit", "--no-fund"], cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL, timeout=600)
    return binary


@pytest.fixture(scope="session")
def azurite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Azurite's blob service on 127.0.0.1; yields the account URL."""
    binary = _azurite_bin()
    port = _free_port()
    workdir = tmp_path_factory.mktemp("azurite")  # its debug log and lock files, if any
    proc = subprocess.Popen(
        [str(binary), "--blobHost", "127.0.0.1", "--blobPort", str(port),
         "--disableTelemetry", "--inMemoryPersistence", "--skipApiVersionCheck", "--silent"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=workdir,
        env={k: v for k, v in os.environ.items() if k != "AZURITE_ACCOUNTS"})
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                err = proc.stderr.read().decode() if proc.stderr else ""
                raise RuntimeError(f"Azurite did not start on port {port}: {err[-2000:]}") \
                    from None
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def arm() -> Iterator[FakeArm]:
    with FakeArm() as fake:
        yield fake


@pytest.fixture(autouse=True)
def forensics_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep
                       + os.environ.get("PATH", ""))
