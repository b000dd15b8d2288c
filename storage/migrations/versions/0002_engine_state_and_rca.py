"""Engine bookkeeping and the RCA on the investigation.

``engine_state``: where the tool-use loop stands (phase, the model turn being dispatched, which
call waits for which approval, turn limit) — kept beside the §8 document so that document stays
exactly the spec's. ``rca_markdown``: the report itself, so it survives the audit directory.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("investigations") as batch:
        batch.add_column(sa.Column("engine_state", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("rca_markdown", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("investigations") as batch:
        batch.drop_column("rca_markdown")
        batch.drop_column("engine_state")
