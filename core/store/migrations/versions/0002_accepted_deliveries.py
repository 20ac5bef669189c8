"""Accepted webhook deliveries: the durable dedup record and accepted-delivery log (issue 14, finding 4).

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
    op.create_table(
        "accepted_deliveries",
        sa.Column("delivery", sa.String(100), primary_key=True),
        sa.Column("event", sa.String(64), nullable=False),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("installation_id", sa.BigInteger, nullable=True),
        sa.Column("accepted_at", sa.Float, nullable=False),
    )
    op.create_index("accepted_deliveries_by_time", "accepted_deliveries", ["accepted_at"])


def downgrade() -> None:
    op.drop_index("accepted_deliveries_by_time", "accepted_deliveries")
    op.drop_table("accepted_deliveries")
