"""Initial schema: investigations, turns, approvals, append-only audit and task events.

The triggers make ``audit_events`` and ``task_events`` append-only in the database itself: an
UPDATE or DELETE (and on PostgreSQL a TRUNCATE) fails on both engines, whatever the caller.

Revision ID: 0001
Revises:
Create Date: 2026-11-22 03:21:03.899388
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('investigations',
    sa.Column('session_id', sa.String(length=128), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('updated_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('status', sa.String(length=32), nullable=False),
    sa.Column('symptom', sa.Text(), nullable=False),
    sa.Column('requested_by', sa.String(length=255), nullable=True),
    sa.Column('platform', sa.String(length=16), nullable=False),
    sa.Column('channel_ref', sa.String(length=255), nullable=True),
    sa.Column('thread_ref', sa.String(length=255), nullable=True),
    sa.Column('conversation_ref', sa.JSON(), nullable=True),
    sa.Column('state', sa.JSON(), nullable=False),
    sa.Column('checksum', sa.String(length=64), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('lease_owner', sa.String(length=255), nullable=True),
    sa.Column('lease_expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('audit_count', sa.Integer(), nullable=False),
    sa.Column('audit_head', sa.String(length=64), nullable=True),
    sa.PrimaryKeyConstraint('session_id')
    )
    with op.batch_alter_table('investigations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_investigations_status'), ['status'], unique=False)

    op.create_table('leases',
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('owner', sa.String(length=255), nullable=True),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('name')
    )
    op.create_table('task_events',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('session_id', sa.String(length=128), nullable=False),
    sa.Column('task_id', sa.String(length=255), nullable=False),
    sa.Column('state', sa.String(length=32), nullable=False),
    sa.Column('record', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('task_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_task_events_session_id'), ['session_id'], unique=False)
        batch_op.create_index('ix_task_events_task', ['task_id', 'id'], unique=False)

    op.create_table('approvals',
    sa.Column('approval_id', sa.String(length=64), nullable=False),
    sa.Column('session_id', sa.String(length=128), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('version', sa.Integer(), nullable=False),
    sa.Column('command', sa.Text(), nullable=False),
    sa.Column('command_hash', sa.String(length=64), nullable=False),
    sa.Column('classifier_version', sa.String(length=32), nullable=False),
    sa.Column('classification', sa.String(length=16), nullable=False),
    sa.Column('tier', sa.Integer(), nullable=True),
    sa.Column('rule', sa.String(length=128), nullable=True),
    sa.Column('reasoning', sa.Text(), nullable=False),
    sa.Column('environment', sa.String(length=16), nullable=False),
    sa.Column('requested_by', sa.String(length=255), nullable=True),
    sa.Column('requested_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('decided_by', sa.String(length=255), nullable=True),
    sa.Column('decided_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('denial_reason', sa.Text(), nullable=True),
    sa.Column('replaces_approval_id', sa.String(length=64), nullable=True),
    sa.Column('modified_by', sa.String(length=255), nullable=True),
    sa.Column('message_ref', sa.JSON(), nullable=True),
    sa.Column('context', sa.JSON(), nullable=True),
    sa.ForeignKeyConstraint(['session_id'], ['investigations.session_id'], ),
    sa.PrimaryKeyConstraint('approval_id')
    )
    with op.batch_alter_table('approvals', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_approvals_session_id'), ['session_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_approvals_status'), ['status'], unique=False)

    op.create_table('audit_events',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('session_id', sa.String(length=128), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('audit_id', sa.String(length=160), nullable=False),
    sa.Column('timestamp', sa.String(length=40), nullable=False),
    sa.Column('kind', sa.String(length=32), nullable=False),
    sa.Column('command', sa.Text(), nullable=True),
    sa.Column('reasoning', sa.Text(), nullable=True),
    sa.Column('classification', sa.String(length=16), nullable=True),
    sa.Column('tier', sa.Integer(), nullable=True),
    sa.Column('rule', sa.String(length=128), nullable=True),
    sa.Column('classifier_version', sa.String(length=32), nullable=True),
    sa.Column('action', sa.String(length=32), nullable=True),
    sa.Column('actor', sa.String(length=255), nullable=True),
    sa.Column('status', sa.String(length=32), nullable=True),
    sa.Column('denial_reason', sa.Text(), nullable=True),
    sa.Column('exit_code', sa.Integer(), nullable=True),
    sa.Column('output', sa.Text(), nullable=True),
    sa.Column('stderr', sa.Text(), nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('environment', sa.String(length=16), nullable=True),
    sa.Column('started_at', sa.String(length=40), nullable=True),
    sa.Column('finished_at', sa.String(length=40), nullable=True),
    sa.Column('duration_ms', sa.Integer(), nullable=True),
    sa.Column('output_metadata', sa.JSON(), nullable=True),
    sa.Column('ref_audit_id', sa.String(length=160), nullable=True),
    sa.Column('details', sa.JSON(), nullable=True),
    sa.Column('prev_hash', sa.String(length=64), nullable=False),
    sa.Column('hash', sa.String(length=64), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['investigations.session_id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('audit_id'),
    sa.UniqueConstraint('session_id', 'seq')
    )
    with op.batch_alter_table('audit_events', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_audit_events_session_id'), ['session_id'], unique=False)

    op.create_table('conversation_turns',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), autoincrement=True, nullable=False),
    sa.Column('session_id', sa.String(length=128), nullable=False),
    sa.Column('seq', sa.Integer(), nullable=False),
    sa.Column('role', sa.String(length=16), nullable=False),
    sa.Column('content', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['session_id'], ['investigations.session_id'], ),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('session_id', 'seq')
    )
    with op.batch_alter_table('conversation_turns', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_conversation_turns_session_id'), ['session_id'], unique=False)

    _append_only_triggers()


def downgrade() -> None:
    _drop_append_only_triggers()
    with op.batch_alter_table('conversation_turns', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_conversation_turns_session_id'))

    op.drop_table('conversation_turns')
    with op.batch_alter_table('audit_events', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_audit_events_session_id'))

    op.drop_table('audit_events')
    with op.batch_alter_table('approvals', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_approvals_status'))
        batch_op.drop_index(batch_op.f('ix_approvals_session_id'))

    op.drop_table('approvals')
    with op.batch_alter_table('task_events', schema=None) as batch_op:
        batch_op.drop_index('ix_task_events_task')
        batch_op.drop_index(batch_op.f('ix_task_events_session_id'))

    op.drop_table('task_events')
    op.drop_table('leases')
    with op.batch_alter_table('investigations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_investigations_status'))

    op.drop_table('investigations')


APPEND_ONLY_TABLES = ("audit_events", "task_events")


def _append_only_triggers() -> None:
    dialect = op.get_bind().dialect.name
    for table in APPEND_ONLY_TABLES:
        if dialect == "sqlite":
            for verb in ("UPDATE", "DELETE"):
                op.execute(
                    f"CREATE TRIGGER {table}_no_{verb.lower()} BEFORE {verb} ON {table} "
                    f"BEGIN SELECT RAISE(ABORT, '{table} is append-only'); END"
                )
        elif dialect == "postgresql":
            op.execute(
                "CREATE OR REPLACE FUNCTION ghost_append_only() RETURNS trigger "
                "LANGUAGE plpgsql AS $$ BEGIN "
                "RAISE EXCEPTION '% is append-only', TG_TABLE_NAME "
                "USING ERRCODE = 'insufficient_privilege'; END $$"
            )
            op.execute(
                f"CREATE TRIGGER {table}_append_only BEFORE UPDATE OR DELETE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION ghost_append_only()"
            )
            op.execute(
                f"CREATE TRIGGER {table}_no_truncate BEFORE TRUNCATE ON {table} "
                "FOR EACH STATEMENT EXECUTE FUNCTION ghost_append_only()"
            )
        else:  # pragma: no cover - only SQLite and PostgreSQL are supported
            raise RuntimeError(f"append-only triggers are not written for {dialect}")


def _drop_append_only_triggers() -> None:
    dialect = op.get_bind().dialect.name
    for table in APPEND_ONLY_TABLES:
        if dialect == "sqlite":
            for verb in ("update", "delete"):
                op.execute(f"DROP TRIGGER IF EXISTS {table}_no_{verb}")
        elif dialect == "postgresql":
            op.execute(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}")
            op.execute(f"DROP TRIGGER IF EXISTS {table}_no_truncate ON {table}")
    if dialect == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS ghost_append_only()")
