"""The drill's own PostgreSQL database on the local server: created, counted, restarted, dropped.

Only a database named ``ghost_chaos_<pid>`` is ever created or dropped; the server restart
(``pg_ctlcluster … restart``) is the benchmark's fault and is never used by the tests.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import Engine

ADMIN_URL = "postgresql+psycopg://root@127.0.0.1:5432/postgres"


def _admin() -> Engine:
    return create_engine(ADMIN_URL, isolation_level="AUTOCOMMIT", pool_pre_ping=True)


def create_database(name: str) -> str:
    """Create ``name`` (dropping a leftover of the same name) and return Ghost's URL for it."""
    if not name.startswith("ghost_chaos_"):
        raise ValueError("the drill only creates databases named ghost_chaos_*")
    engine = _admin()
    with engine.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return f"postgresql://root@127.0.0.1:5432/{name}"


def drop_database(name: str) -> None:
    if not name.startswith("ghost_chaos_"):
        raise ValueError("the drill only drops databases named ghost_chaos_*")
    engine = _admin()
    try:
        with engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        engine.dispose()


def connections(name: str) -> int:
    """Open connections to database ``name`` (pg_stat_activity), -1 if the server is down."""
    engine = _admin()
    try:
        with engine.connect() as conn:
            return int(conn.execute(text("SELECT count(*) FROM pg_stat_activity "
                                         "WHERE datname = :n"), {"n": name}).scalar_one())
    except Exception:  # noqa: BLE001 - the server may be restarting
        return -1
    finally:
        engine.dispose()


def cluster() -> tuple[str, str] | None:
    """(version, name) of the local cluster, from /etc/postgresql."""
    root = Path("/etc/postgresql")
    for version in sorted(root.iterdir() if root.exists() else []):
        for name in sorted(version.iterdir()):
            return version.name, name.name
    return None


def restart_server() -> str:
    """Restart the local cluster (every connection is dropped); returns what it printed."""
    found = cluster()
    if found is None:
        raise RuntimeError("no cluster under /etc/postgresql; run with --no-pg-restart")
    version, name = found
    done = subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", version, name,
                           "restart"], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"pg_ctlcluster restart failed: {done.stderr.strip()}")
    return done.stdout.strip()
