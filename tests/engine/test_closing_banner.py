"""The closing banner says only what is true (issue 13): no "RCA REPORT WRITTEN" when the write
failed or when a finished session is merely resumed, and one duration, the RCA's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from storage.store import Store
from tests.engine.test_investigate_cli import env_for, ghost, session_id_of
from tests.fakes.gemini_server import call, function_call_turn

DONE = function_call_turn(call("complete_investigation", {
    "confidence": "medium", "root_cause_summary": "NSG rule deny-6379 blocks redis."}))


def test_a_failed_write_is_not_announced_as_written(fake_gemini: Any, cli_env: dict[str, str],
                                                    tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the audit directory should be")
    fake_gemini.enqueue(DONE)
    run = ghost(env_for(cli_env), "investigate", "redis unreachable", "--audit-dir",
                str(blocker), cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "RCA REPORT WRITTEN" not in run.stdout
    assert "RCA REPORT NOT WRITTEN" in run.stdout and "printed above" in run.stdout
    assert "# Root Cause Analysis" in run.stdout  # the report itself is printed


def test_resuming_a_finished_session_writes_and_announces_nothing_new(
        fake_gemini: Any, cli_env: dict[str, str], store: Store, tmp_path: Path) -> None:
    env = env_for(cli_env)
    fake_gemini.enqueue(DONE)
    first = ghost(env, "investigate", "redis unreachable", cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    sid = session_id_of(first.stdout)
    path = Path(re.search(r"RCA REPORT WRITTEN: (\S+)", first.stdout).group(1))  # type: ignore
    # one duration: the banner shows exactly the RCA header's figure
    header = re.search(r"_Duration: (\S+ \S+)_", path.read_text()).group(1)  # type: ignore
    assert f"Duration: {header}\n" in first.stdout
    written = path.stat().st_mtime_ns
    again = ghost(env, "investigate", "--resume", sid, cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "RCA REPORT WRITTEN" not in again.stdout
    assert f"INVESTIGATION ALREADY FINISHED — RCA: {path}" in again.stdout
    assert path.stat().st_mtime_ns == written
    assert len(fake_gemini.requests) == 1  # the model was not asked again
