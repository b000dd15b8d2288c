"""Lab sessions: the scenario an investigation ran against, or NULL for real Azure.

A lab investigation (``ghost demo``, ``GHOST_LAB``) lives in the same tables as real ones, with
real audit and RCA; the marker keeps the two apart where it matters: a worker only claims its
own kind, the orphan scans of one kind never see the other's tasks, and a lab session's commands
always go to the lab, whichever process resumes it.

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("investigations") as batch:
        batch.add_column(sa.Column("lab", sa.String(length=512), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("investigations") as batch:
        batch.drop_column("lab")
