"""Task ids reserved atomically: the first investigation to insert an id owns it.

Two worker processes capturing the same VM in the same second used to build the same id
(``ghost_{target}_{YYYYMMDDTHHMMSS}``), both see it free, and both write a CREATED record for
it: one investigation ran the capture, the other's was refused as "another investigation's
task" after its create had been approved. Now the id is inserted into ``task_ids`` (primary
key) before the task exists; the loser of the insert takes ``_2``, ``_3``… The Azure capture
name and the blob follow the id, so they are unique too.

Existing task ids are copied in (owner: the session of the first record), so a new task never
reuses the id of an old one.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "task_ids",
        sa.Column("task_id", sa.String(length=255), nullable=False),
        sa.Column("session_id", sa.String(length=128), nullable=False),
        sa.Column("reserved_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("task_id"),
    )
    op.execute(
        "INSERT INTO task_ids (task_id, session_id, reserved_at) "
        "SELECT e.task_id, e.session_id, e.created_at FROM task_events e "
        "WHERE e.id IN (SELECT MIN(f.id) FROM task_events f GROUP BY f.task_id)"
    )


def downgrade() -> None:
    op.drop_table("task_ids")
