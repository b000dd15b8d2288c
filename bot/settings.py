"""Settings from the environment (and an optional ``.env``), documented in ``.env.example``."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Everything Ghost reads from its environment. Names are ``GHOST_*`` unless noted."""

    model_config = SettingsConfigDict(
        env_prefix="GHOST_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    data_dir: Path = Field(
        default=Path("./ghost-data"),
        description="Where Ghost keeps its SQLite database, audit exports, captures and reports.",
    )
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL. Unset: a SQLite file ghost.db in the data dir, created and "
        "migrated on first use. PostgreSQL: postgresql://user@host:5432/db.",
    )
    model: str = Field(default="gemini-2.5-flash", description="The Gemini model.")

    @property
    def resolved_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite:///{(self.data_dir / 'ghost.db').resolve()}"

    @property
    def uses_default_database(self) -> bool:
        """The default SQLite file is migrated on first use; any other URL needs `db upgrade`."""
        return not self.database_url

    @property
    def audit_dir(self) -> Path:
        return self.data_dir / "audit"


def load_settings() -> Settings:
    return Settings()
