"""Alembic environment: runs on the connection ``storage.migrate`` hands over."""

from __future__ import annotations

from alembic import context

from storage.models import Base

config = context.config
connection = config.attributes.get("connection")
if connection is None:  # pragma: no cover - only the `alembic` command line gets here
    raise SystemExit("Run migrations with `ghost db upgrade`, not the alembic command line.")

context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
