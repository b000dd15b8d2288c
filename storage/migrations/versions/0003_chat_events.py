"""Chat events already handled, so that Slack's retries (``X-Slack-Retry-Num``) run once.

Slack re-sends an event it thinks was not acknowledged in time, and bolt does not deduplicate
them; several replicas may each receive a copy. The first process to insert the event's key
handles it; the others see the primary key taken. Old rows are swept by a periodic job.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "chat_events",
        sa.Column("event_key", sa.String(length=255), nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("event_key"),
    )
    with op.batch_alter_table("chat_events") as batch:
        batch.create_index("ix_chat_events_received_at", ["received_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("chat_events") as batch:
        batch.drop_index("ix_chat_events_received_at")
    op.drop_table("chat_events")
