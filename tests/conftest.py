"""Shared fixtures: a fresh, migrated database per test on SQLite, and also on PostgreSQL when
``GHOST_TEST_DATABASE_URL`` is set (CI sets it, so both engines are tested in one run)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DIR = REPO_ROOT.parent / "shared"

PG_URL = os.environ.get("GHOST_TEST_DATABASE_URL")
pytest_plugins = ["tests.fakes.gemini_fixture", "tests.fakes.stand_in"]


def _with_search_path(url: str, schema: str) -> str:
    sep = "&" if "?" in url else "?"
    return f"{url}{sep}options={quote(f'-csearch_path={schema}')}"


# Every test that uses the database runs on SQLite and, when GHOST_TEST_DATABASE_URL is set, again
# on PostgreSQL; the rest of the suite does not depend on the engine and runs once.
ENGINES = ["sqlite", "postgresql"] if PG_URL else ["sqlite"]


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: twice the usable cores, at least 4 (most tests wait on processes and sockets)."""
    return max(4, 2 * len(os.sched_getaffinity(0)))


@pytest.fixture(params=ENGINES)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database: a SQLite file, or a private schema on the PostgreSQL server."""
    if request.param == "sqlite" or not PG_URL:
        yield f"sqlite:///{tmp_path / 'ghost.db'}"
        return
    from sqlalchemy import text

    from storage.db import make_engine

    schema = f"ghost_t_{uuid.uuid4().hex[:12]}"
    admin = make_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        yield _with_search_path(PG_URL, schema)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


@pytest.fixture
def migrated_url(database_url: str) -> str:
    from storage import migrate
    from storage.db import make_engine

    engine = make_engine(database_url)
    migrate.upgrade(engine)
    engine.dispose()
    return database_url


@pytest.fixture
def store(migrated_url: str) -> Iterator[Store]:  # noqa: F821
    from storage.store import Store

    s = Store.from_url(migrated_url)
    yield s
    s.db.dispose()


@pytest.fixture
def cli_env(migrated_url: str, tmp_path: Path) -> dict[str, str]:
    """Environment for running `ghost` as a subprocess against the test database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GHOST_")}
    env["GHOST_DATABASE_URL"] = migrated_url
    env["GHOST_DATA_DIR"] = str(tmp_path / "data")
    return env
