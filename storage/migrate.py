"""Alembic migrations run programmatically: ``ghost db upgrade`` and first-use creation."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, inspect

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"


def _config(connection: object) -> object:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["connection"] = connection
    return config


def _scripts() -> object:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    return ScriptDirectory.from_config(config)


def head_revision() -> str:
    """The newest revision this code knows."""
    head = _scripts().get_current_head()  # type: ignore[attr-defined]
    assert head is not None
    return str(head)


def known_revisions() -> set[str]:
    """Every revision this code can migrate from; others come from a newer Ghost."""
    return {str(r.revision) for r in _scripts().walk_revisions()}  # type: ignore[attr-defined]


def current_revision(engine: Engine) -> str | None:
    """The revision the database is at, or None when it was never migrated."""
    with engine.connect() as conn:
        if not inspect(conn).has_table("alembic_version"):
            return None
        from sqlalchemy import text

        row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
        return None if row is None else str(row[0])


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the schema to ``revision`` inside one transaction."""
    from alembic import command

    with engine.begin() as conn:
        command.upgrade(_config(conn), revision)  # type: ignore[arg-type]
