"""PostgreSQL with two roles, as in Azure: the owner (the migration job) creates the schema and
grants the apps' role what Ghost needs; the apps' role runs a whole investigation and
`ghost audit verify` passes, yet it can neither drop nor disable the triggers nor rewrite the
append-only logs (storage/roles.py). Runs on the real server (GHOST_TEST_DATABASE_URL); the
roles get unique names and are dropped after."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from tests.conftest import PG_URL

pytestmark = pytest.mark.skipif(not PG_URL, reason="needs GHOST_TEST_DATABASE_URL (PostgreSQL)")


@dataclass(frozen=True)
class Roles:
    owner: str
    app: str
    schema: str
    owner_url: str
    app_url: str


def _as(role: str, schema: str) -> str:
    assert PG_URL
    parts = urlsplit(PG_URL)
    host = parts.netloc.rsplit("@", 1)[-1]
    query = f"options={quote(f'-csearch_path={schema}')}"
    return urlunsplit((parts.scheme, f"{role}@{host}", parts.path, query, ""))


@pytest.fixture
def roles() -> Iterator[Roles]:
    from storage.db import make_engine

    tag = uuid.uuid4().hex[:10]
    made = Roles(f"ghost_owner_{tag}", f"ghost_app_{tag}", f"ghost_roles_{tag}", "", "")
    made = Roles(made.owner, made.app, made.schema, _as(made.owner, made.schema),
                 _as(made.app, made.schema))
    admin = make_engine(str(PG_URL))
    with admin.begin() as conn:
        conn.execute(text(f'CREATE ROLE "{made.owner}" LOGIN'))
        conn.execute(text(f'CREATE ROLE "{made.app}" LOGIN'))
        conn.execute(text(f'CREATE SCHEMA "{made.schema}" AUTHORIZATION "{made.owner}"'))
    try:
        yield made
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{made.schema}" CASCADE'))
            for role in (made.app, made.owner):
                conn.execute(text(f'DROP OWNED BY "{role}"'))
                conn.execute(text(f'DROP ROLE "{role}"'))
        admin.dispose()


def _ghost(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot.cli", *args], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=600, check=False,
                          input="")


def test_the_apps_role_runs_ghost_but_cannot_touch_the_log(
        roles: Roles, cli_env: dict[str, str], tmp_path: Path) -> None:
    from storage.db import make_engine

    owner_env = cli_env | {"GHOST_DATABASE_URL": roles.owner_url,
                           "GHOST_DATABASE_APP_ROLE": roles.app}
    upgraded = _ghost(["db", "upgrade"], owner_env, tmp_path)
    assert upgraded.returncode == 0, upgraded.stderr
    assert f"role {roles.app}: exists" in upgraded.stdout
    again = _ghost(["db", "upgrade"], owner_env, tmp_path)  # every release re-grants
    assert again.returncode == 0 and "already at revision" in again.stdout, again.stderr

    app_env = {k: v for k, v in cli_env.items() if k != "GEMINI_API_KEY"} | {
        "GHOST_DATABASE_URL": roles.app_url}
    demo = _ghost(["demo", "nsg-deny-redis", "--yes"], app_env, tmp_path)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]

    app = make_engine(roles.app_url)
    try:
        with app.connect() as conn:
            [sid] = [r[0] for r in conn.execute(text("SELECT session_id FROM investigations"))]
            events = conn.execute(text("SELECT count(*) FROM audit_events")).scalar_one()
        assert events > 5
        verified = _ghost(["audit", "verify", sid], app_env, tmp_path)
        assert verified.returncode == 0, verified.stdout + verified.stderr

        for statement in (
            "DROP TRIGGER audit_events_append_only ON audit_events",
            "ALTER TABLE audit_events DISABLE TRIGGER ALL",
            "UPDATE audit_events SET command = 'rewritten'",
            "DELETE FROM audit_events",
            "TRUNCATE audit_events",
            "DROP TRIGGER task_events_append_only ON task_events",
            "UPDATE task_events SET record = record",
            "DELETE FROM task_events",
            "DROP FUNCTION ghost_append_only() CASCADE",
            "DROP TABLE audit_events",
            "CREATE TABLE audit_events_copy (id int)",
        ):
            with app.connect() as conn, pytest.raises(DBAPIError) as refused:
                conn.execute(text(statement))
                pytest.fail(f"the apps' role could run: {statement}")
            assert refused.value.orig is not None
            sqlstate = getattr(refused.value.orig, "sqlstate", None)
            assert sqlstate == "42501", (statement, sqlstate, refused.value.orig)  # no privilege
        with app.connect() as conn:
            # granting itself more is a no-op (PostgreSQL warns), and it owns nothing
            conn.execute(text("GRANT UPDATE, DELETE ON audit_events TO PUBLIC"))
            assert conn.execute(text(
                "SELECT has_table_privilege(current_user, 'audit_events', 'UPDATE') "
                "OR has_table_privilege(current_user, 'audit_events', 'DELETE') "
                "OR has_table_privilege(current_user, 'audit_events', 'TRUNCATE')")).scalar_one() \
                is False
            assert conn.execute(text(
                "SELECT count(*) FROM pg_class c JOIN pg_roles r ON r.oid = c.relowner "
                "WHERE r.rolname = current_user")).scalar_one() == 0
            assert conn.execute(text("SELECT count(*) FROM audit_events")).scalar_one() == events
        assert _ghost(["audit", "verify", sid], app_env, tmp_path).returncode == 0
    finally:
        app.dispose()


def test_a_missing_role_is_refused_with_the_fix(roles: Roles, cli_env: dict[str, str],
                                                tmp_path: Path) -> None:
    env = cli_env | {"GHOST_DATABASE_URL": roles.owner_url,
                     "GHOST_DATABASE_APP_ROLE": f"{roles.app}_missing"}
    upgraded = _ghost(["db", "upgrade"], env, tmp_path)
    assert upgraded.returncode == 2
    assert "does not exist" in upgraded.stderr and "CREATE ROLE" in upgraded.stderr
