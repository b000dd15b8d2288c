"""Alembic migrations run programmatically: ``ghost db upgrade`` and first-use creation."""

from __future__ import annotations

import re
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


#: ``revision = "0005"`` / ``down_revision: str | None = "0004"`` at the start of a line
_ASSIGNED = re.compile(r"""^(revision|down_revision)\s*(?::[^=]*)?=\s*(?:["']([^"']+)["']|None)""",
                       re.MULTILINE)


def _revisions() -> dict[str, str | None]:
    """revision -> down_revision, read from the migration files without importing alembic
    (which, with mako and pygments, costs a read-only command about half a second).
    ``tests/storage/test_migrate_revisions.py`` checks that this agrees with alembic."""
    found: dict[str, str | None] = {}
    for path in sorted((MIGRATIONS_DIR / "versions").glob("*.py")):
        values = {m.group(1): m.group(2) for m in
                  _ASSIGNED.finditer(path.read_text(encoding="utf-8"))}
        if values.get("revision"):
            found[str(values["revision"])] = values.get("down_revision")
    return found


def head_revision() -> str:
    """The newest revision this code knows (the one no other revision follows)."""
    revisions = _revisions()
    heads = set(revisions) - {down for down in revisions.values() if down}
    if len(heads) != 1:  # a branch in the history: let alembic say what is wrong
        head = _scripts().get_current_head()  # type: ignore[attr-defined]
        assert head is not None
        return str(head)
    return heads.pop()


def known_revisions() -> set[str]:
    """Every revision this code can migrate from; others come from a newer Ghost."""
    return set(_revisions())


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
