"""The Teams endpoint refuses unauthenticated requests; settings are checked; the RCA splits;
the app package (manifest and icons) is valid."""

from __future__ import annotations

import base64
import json
import struct
import urllib.error
import urllib.request
import zlib
from pathlib import Path
from typing import Any

import pytest

from bot.teams import cards
from tests.conftest import REPO_ROOT


def _settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **env: str) -> Any:
    from bot.settings import Settings

    for key in ("MicrosoftAppId", "MicrosoftAppPassword", "MicrosoftAppType",
                "MicrosoftAppTenantId", "GHOST_TEAMS_ALLOWED_TENANTS"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GHOST_DATA_DIR", str(tmp_path / "data"))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return Settings(_env_file=None)  # type: ignore[call-arg]


def test_unauthenticated_requests_are_refused(store: Any, tmp_path: Path, loop: Any,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.teams.app import build_teams, start_server, stop_server

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    settings = _settings(monkeypatch, tmp_path, MicrosoftAppId="app-id",
                         MicrosoftAppPassword="secret", GEMINI_API_KEY="unused",
                         GHOST_TEAMS_ALLOWED_TENANTS="tenant-1")
    services = build_teams(settings, store, loop=loop)      # the real CloudAdapter
    runner = start_server(services, "127.0.0.1", 0)
    port = runner.addresses[0][1]
    body = json.dumps({"type": "message", "text": "investigate x", "channelId": "msteams",
                       "serviceUrl": "https://evil.example/", "conversation": {"id": "c"},
                       "from": {"id": "u"}, "recipient": {"id": "b"}}).encode()
    no_issuer = _jwt({"aud": "app-id"})
    cases = [  # (headers, body, status): each is refused before anything reaches the bot
        ({"Content-Type": "application/json"}, body, 401),                    # no token
        ({"Content-Type": "application/json", "Authorization": "Bearer x.y.z"}, body, 401),
        ({"Content-Type": "application/json", "Authorization": f"Bearer {no_issuer}"},
         body, 401),                                # a JWT without an issuer (was a 500)
        ({"Content-Type": "application/json", "Authorization": no_issuer}, body, 401),
        ({"Authorization": f"Bearer {no_issuer}"}, body, 415),              # no content type
        ({"Content-Type": "application/json",
          "Authorization": f"Bearer {_jwt({'iss': 'https://api.botframework.com'})}"},
         b"{not json", 400),
        # issue 27: another tenant's activity is answered 403 before the adapter sees it
        ({"Content-Type": "application/json",
          "Authorization": f"Bearer {_jwt({'iss': 'https://api.botframework.com'})}"},
         json.dumps({"type": "message", "conversation": {"id": "c", "tenantId": "other"},
                     "channelData": {"tenant": {"id": "other"}}}).encode(), 403),
        # the allowed tenant still needs a real token (the adapter's check)
        ({"Content-Type": "application/json",
          "Authorization": f"Bearer {_jwt({'iss': 'https://api.botframework.com'})}"},
         json.dumps({"type": "message", "serviceUrl": "https://evil.example/",
                     "conversation": {"id": "c", "tenantId": "tenant-1"}}).encode(), 401),
        # over the edge's 1 MiB limit: refused from Content-Length, before reading
        ({"Content-Type": "application/json",
          "Authorization": f"Bearer {_jwt({'iss': 'https://api.botframework.com'})}"},
         b" " * ((1 << 20) + 1), 413),
    ]
    try:
        for headers, data, status in cases:
            request = urllib.request.Request(f"http://127.0.0.1:{port}/api/messages",
                                             data=data, headers=headers)
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(request, timeout=10)
            assert refused.value.code == status, headers
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as ok:
            assert ok.read() == b"ok"
    finally:
        stop_server(services, runner)
    assert not store.list_investigations()


def _jwt(claims: dict[str, Any]) -> str:
    """An unsigned token with ``claims``, the shape a probe from the internet sends."""
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")
    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


@pytest.mark.parametrize("env, missing", [
    ({}, "MicrosoftAppId"),
    ({"MicrosoftAppId": "a"}, "MicrosoftAppPassword"),
    ({"MicrosoftAppId": "a", "MicrosoftAppType": "UserAssignedMSI"}, "MicrosoftAppTenantId"),
    ({"MicrosoftAppId": "a", "MicrosoftAppType": "Anonymous"}, "not known"),
    ({"MicrosoftAppId": "a", "MicrosoftAppPassword": "p"}, "GHOST_TEAMS_ALLOWED_TENANTS"),
])
def test_settings_are_checked(env: dict[str, str], missing: str, tmp_path: Path,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.teams.app import TeamsSettingMissing, check_settings

    with pytest.raises(TeamsSettingMissing, match=missing):
        check_settings(_settings(monkeypatch, tmp_path, **env))


def test_managed_identity_needs_no_password(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.teams.app import check_settings

    check_settings(_settings(monkeypatch, tmp_path, MicrosoftAppId="mi-client-id",
                             MicrosoftAppType="UserAssignedMSI", MicrosoftAppTenantId="t"))


def test_the_report_becomes_cards_with_tables_split_under_the_limit() -> None:
    report = ("# RCA\n\nIntro line\nsecond line\n\n## Hypotheses Log\n\n"
              "| ID | State |\n|---|:---:|\n| h1 | CONFIRMED |\n| h2 |\n\n"
              "```\nss -tln\n```\n" + "".join(f"- finding {i} " + "x" * 80 + "\n"
                                            for i in range(600)))
    parts = cards.report_cards(report, limit=10_000)
    assert len(parts) > 1 and all(len(json.dumps(p)) <= 10_000 + 2_000 for p in parts)
    assert all(p["version"] == "1.5" for p in parts)
    assert parts[0]["body"][0]["text"] == f"(part 1/{len(parts)})"
    elements = [e for p in parts for e in p["body"][1:]]
    assert elements[0]["text"] == "RCA" and elements[0]["weight"] == "Bolder"
    assert elements[1]["text"] == "Intro line\nsecond line"
    (table,) = [e for e in elements if e["type"] == "Table"]
    rows = [[c["items"][0]["text"] for c in r["cells"]] for r in table["rows"]]
    assert rows == [["ID", "State"], ["h1", "CONFIRMED"], ["h2", ""]]
    assert any(e.get("fontType") == "Monospace" and e["text"] == "ss -tln" for e in elements)
    assert "|" not in json.dumps(parts)
    assert "finding 599" in json.dumps(parts[-1])
    text = "".join(e.get("text", "") for e in elements)
    assert all(f"finding {i} " in text for i in range(600))  # nothing dropped
    assert len(cards.report_cards("short\n")) == 1
    long_table = "| a | b |\n|---|---|\n" + "".join(f"| r{i} | {'y' * 100} |\n" for i in range(300))
    split = cards.tables(long_table.splitlines())
    assert len(split) > 1 and all(t["rows"][0]["cells"][0]["items"][0]["text"] == "a"
                                  for t in split)
    assert sum(len(t["rows"]) - 1 for t in split) == 300


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    assert zlib.crc32(data[12:16 + length]) == struct.unpack(">I", data[16 + length:20 + length])[0]
    return width, height


def test_app_package_manifest_and_icons() -> None:
    folder = REPO_ROOT / "deploy" / "teams"
    manifest = json.loads((folder / "manifest.template.json").read_text())
    (bot,) = manifest["bots"]
    assert bot["botId"] == "${MICROSOFT_APP_ID}" and manifest["id"] == "${MICROSOFT_APP_ID}"
    assert set(bot["scopes"]) == {"team", "groupChat", "personal"}
    titles = [c["title"] for c in bot["commandLists"][0]["commands"]]
    assert titles == ["investigate", "status", "list", "cancel", "resume", "help"]
    assert _png_size(folder / manifest["icons"]["color"]) == (192, 192)
    assert _png_size(folder / manifest["icons"]["outline"]) == (32, 32)
