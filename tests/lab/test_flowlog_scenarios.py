"""Flow logs decide two shipped scenarios (issue 33): `ghost demo NAME --yes` downloads the
window's blobs into the data directory, the real analyser reads them, and the RCA's Flow-Log
Evidence names the finding, its deciding rule and its window, the downloads it read, and the
hypothesis it resolves; the audit records hold the key line the row was read from."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

CASES = [
    ("lb-probe-blocked", "flow_denied of 168.63.129.16 → 10.1.3.4:8080/TCP and others by "
     "UserRule_deny-all-inbound, 2026-11-22T13:02Z to 2026-11-22T13:40Z", 3),
    ("firewall-rule-deny", "flow_one_way of 10.2.1.4 → 203.0.113.60:5432/TCP by "
     "UserRule_allow-out-partner, 2026-11-29T13:50Z to 2026-11-29T14:19Z", 2),
]


@pytest.mark.parametrize(("name", "finding", "blobs"), CASES, ids=[c[0] for c in CASES])
def test_the_rca_shows_the_flow_log_finding_rule_window_and_downloads(
        name: str, finding: str, blobs: int, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.bootstrap import build_store
    from bot.commands.demo import run
    from bot.settings import Settings

    monkeypatch.chdir(tmp_path)
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GHOST_LAB", "GHOST_DATA_DIR",
                "GHOST_DATABASE_URL"):
        monkeypatch.delenv(var, raising=False)
    settings = Settings(data_dir=tmp_path / "ghost-data")
    out = io.StringIO()
    assert run(settings, scenario=name, yes=True, stdin=io.StringIO(), stdout=out) == 0, \
        out.getvalue()[-2000:]
    store = build_store(settings)
    inv = store.list_investigations(limit=1)[0]
    rca = inv.rca_markdown or ""
    section = rca[rca.index("## Flow-Log Evidence"):rca.index("## Capture Evidence")]
    row = next(line for line in section.splitlines() if line.startswith("| ghost_"))
    assert finding in row and "h1 CONFIRMED" in row
    records = {r["audit_id"]: r for r in store.audit_records(inv.session_id)
               if r.get("kind") == "command"}
    downloads = [a for a, r in records.items()
                 if str(r.get("command")).startswith("az storage blob download")]
    assert len(downloads) == blobs and all(a in row for a in downloads)
    assert all(str(settings.data_dir.resolve()) in str(records[a]["command"]) for a in downloads)
    analysis = records[row.split("|")[1].strip()]
    assert "id flow_" in str(analysis.get("output")) and analysis.get("classification") == "SAFE"
