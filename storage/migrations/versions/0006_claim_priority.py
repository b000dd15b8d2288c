"""A claim priority: work a person just unblocked goes ahead of model turns.

With twenty investigations running, an investigation an engineer had just approved (or
answered) was requeued at the back of the line, behind every investigation busy with model
turns, and its approved command started up to 18 s later. ``priority`` is set when a person's
decision or answer makes an investigation runnable again (1), and workers claim the highest
priority first (and keep threads for it: the decision lane, ``bot/worker.py``); a claim resets
it to 0. Rows that exist get 0.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("investigations") as batch:
        batch.add_column(sa.Column("priority", sa.Integer(), nullable=False,
                                   server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("investigations") as batch:
        batch.drop_column("priority")
