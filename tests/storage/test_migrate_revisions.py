"""The schema's revisions read from the migration files (without alembic, for fast reads)
agree with alembic's own script directory, whatever migrations are added."""

from __future__ import annotations

from pathlib import Path

import pytest

from storage import migrate


def test_the_cheap_reading_agrees_with_alembic() -> None:
    scripts = migrate._scripts()
    assert migrate.head_revision() == scripts.get_current_head()  # type: ignore[attr-defined]
    assert migrate.known_revisions() == {
        str(r.revision) for r in scripts.walk_revisions()}  # type: ignore[attr-defined]


def test_a_new_migration_moves_the_head(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    versions = tmp_path / "versions"
    versions.mkdir()
    for name in sorted((migrate.MIGRATIONS_DIR / "versions").glob("*.py")):
        (versions / name.name).write_text(name.read_text())
    head = migrate.head_revision()
    (versions / "9999_next.py").write_text(
        f'"""next"""\nrevision: str = "9999"\ndown_revision = "{head}"\nbranch_labels = None\n')
    monkeypatch.setattr(migrate, "MIGRATIONS_DIR", tmp_path)
    assert migrate.head_revision() == "9999"
    assert {"9999", head} <= migrate.known_revisions()
