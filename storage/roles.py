"""The application's PostgreSQL role: it owns nothing and may do only what Ghost does.

The migration job connects as the owner of the schema (in Azure: the Entra administrator, the
migrate identity), creates or migrates the tables, then grants the apps' role (in Azure: the
apps' managed identity, created here with ``pgaadauth_create_principal`` when it is missing):
- ``audit_events``, ``task_events``, ``conversation_turns``: SELECT and INSERT only. With no
  UPDATE, DELETE or TRUNCATE privilege, and not the owner, the apps can neither rewrite the
  logs nor drop or disable the triggers that keep them append-only;
- ``investigations``, ``approvals``, ``leases``, ``task_ids``: SELECT, INSERT, UPDATE;
- ``chat_events``: SELECT, INSERT, DELETE (the inbox is purged once handled);
- ``alembic_version``: SELECT (readiness compares the revision); the sequences: USAGE, SELECT.
Nothing else: no CREATE on the schema, no ownership, no TRUNCATE, REFERENCES or TRIGGER.
"""

from __future__ import annotations

from sqlalchemy import Connection, Engine, text

from core.errors import GhostError

#: table → the privileges the apps' role gets on it (docs/storage.md, "Roles")
APP_PRIVILEGES: dict[str, tuple[str, ...]] = {
    "audit_events": ("SELECT", "INSERT"),
    "task_events": ("SELECT", "INSERT"),
    "conversation_turns": ("SELECT", "INSERT"),
    "investigations": ("SELECT", "INSERT", "UPDATE"),
    "approvals": ("SELECT", "INSERT", "UPDATE"),
    "leases": ("SELECT", "INSERT", "UPDATE"),
    "task_ids": ("SELECT", "INSERT", "UPDATE"),
    "chat_events": ("SELECT", "INSERT", "DELETE"),
    "alembic_version": ("SELECT",),
}


class AppRoleMissing(GhostError):
    exit_code = 2


def _quote(conn: Connection, name: str) -> str:
    return str(conn.dialect.identifier_preparer.quote(name))


def _ensure_role(conn: Connection, role: str) -> str:
    """Create the role when it is missing: an Entra principal on Azure, else refuse."""
    if conn.execute(text("SELECT 1 FROM pg_roles WHERE rolname = :r"), {"r": role}).first():
        return "exists"
    has_entra = conn.execute(text(
        "SELECT 1 FROM pg_proc WHERE proname = 'pgaadauth_create_principal'")).first()
    if not has_entra:
        raise AppRoleMissing(
            f"The database role {role!r} (GHOST_DATABASE_APP_ROLE) does not exist.",
            f"Create it (CREATE ROLE {_quote(conn, role)} LOGIN) or, on Azure, make sure "
            "Entra authentication is on; then run `ghost db upgrade` again.")
    # the apps' managed identity: a login role mapped to the Entra principal of that name,
    # neither an administrator nor MFA-bound
    conn.execute(text("SELECT * FROM pgaadauth_create_principal(:r, false, false)"),
                 {"r": role})
    return "created (Entra principal)"


def grant_app_role(engine: Engine, role: str) -> list[str]:
    """Grant ``role`` exactly what Ghost needs on the current schema; what was done, per line.

    Idempotent: every run grants the same. PostgreSQL only (SQLite has no roles)."""
    if engine.dialect.name != "postgresql":
        raise AppRoleMissing("GHOST_DATABASE_APP_ROLE is set, but the database is not "
                             "PostgreSQL: SQLite has no roles.", "Unset it.")
    with engine.begin() as conn:
        state = _ensure_role(conn, role)
        who = _quote(conn, role)
        schema = str(conn.execute(text("SELECT current_schema()")).scalar_one())
        database = str(conn.execute(text("SELECT current_database()")).scalar_one())
        where = _quote(conn, schema)
        conn.execute(text(f"GRANT CONNECT ON DATABASE {_quote(conn, database)} TO {who}"))
        conn.execute(text(f"GRANT USAGE ON SCHEMA {where} TO {who}"))
        conn.execute(text(f"REVOKE ALL ON ALL TABLES IN SCHEMA {where} FROM {who}"))
        tables = {str(r[0]) for r in conn.execute(text(
            "SELECT tablename FROM pg_tables WHERE schemaname = :s"), {"s": schema})}
        for table, privileges in APP_PRIVILEGES.items():
            if table in tables:
                conn.execute(text(f"GRANT {', '.join(privileges)} ON {where}."
                                  f"{_quote(conn, table)} TO {who}"))
        conn.execute(text(f"GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA {where} TO {who}"))
    return [f"role {role}: {state}",
            f"role {role}: CONNECT on {database}, USAGE on schema {schema}, "
            f"{len(APP_PRIVILEGES)} tables granted (append-only logs: SELECT, INSERT)"]
