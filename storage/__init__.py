"""SQL storage: SQLAlchemy 2.0 models, repositories and Alembic migrations.

Imports ``core`` (ports, errors, audit chain); never imported by ``core``.
"""
