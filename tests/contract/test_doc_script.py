"""The worked example's shell script, copied from docs/agent-contract.md as it stands, runs
against a real `ghost worker` process (no chat configured) and the fake Gemini: the doc cannot
drift from what Ghost does."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.contract.helpers import REPO, base_env
from tests.contract.test_worked_example import SUMMARY, _script


def _doc_script() -> str:
    text = (REPO / "docs" / "agent-contract.md").read_text()
    section = text.split("## Worked example", 1)[1]
    match = re.search(r"```bash\n(.*?)```", section, flags=re.S)
    assert match is not None, "the worked example has no bash block"
    return match.group(1)


@pytest.mark.skipif(shutil.which("jq") is None, reason="the documented script uses jq")
def test_the_documented_script_runs_end_to_end(fake_gemini: Any, migrated_url: str,
                                                tmp_path: Path) -> None:
    _script(fake_gemini)
    env = base_env(migrated_url, tmp_path / "data")
    env["GOOGLE_GEMINI_BASE_URL"] = os.environ["GOOGLE_GEMINI_BASE_URL"]
    env["GEMINI_API_KEY"] = os.environ["GEMINI_API_KEY"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "ghost"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m bot.cli "$@"\n')
    shim.chmod(0o755)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    script = tmp_path / "on_alert.sh"
    script.write_text(_doc_script())
    worker = subprocess.Popen([str(shim), "worker"], env=env, cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        run = subprocess.run(["bash", str(script)], env=env, cwd=tmp_path, capture_output=True,
                             text=True, timeout=180, check=False)
    finally:
        worker.terminate()
        _out, worker_log = worker.communicate(timeout=30)
    assert run.returncode == 0, run.stdout + run.stderr + worker_log
    (rca,) = tmp_path.glob("rca-ghost_*.md")
    assert SUMMARY in rca.read_text()
    assert '"result":"approved"' in run.stdout and '"decided_by":"oncall-ana"' in run.stdout
    assert "Traceback" not in run.stdout + run.stderr + worker_log
    fake_gemini.assert_drained()
