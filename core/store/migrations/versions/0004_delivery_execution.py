"""Accepted deliveries carry their task and its state (replayed when lost, never run again once
finished), and the index of answered comments ("already answered" without reading the thread);
issue 14, findings 4 and 8. (Numbered 0004: 0003 is the dashboard feeds and L2 regressions.)

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
    with op.batch_alter_table("accepted_deliveries") as table:
        table.add_column(sa.Column("task", sa.String(100), nullable=False, server_default=""))
        table.add_column(sa.Column("kwargs", sa.Text, nullable=False, server_default=""))
        table.add_column(sa.Column("touched_at", sa.Float, nullable=True))
        table.add_column(sa.Column("started_at", sa.Float, nullable=True))
        table.add_column(sa.Column("started_by", sa.String(300), nullable=False, server_default=""))
        table.add_column(sa.Column("finished_at", sa.Float, nullable=True))
        table.add_column(sa.Column("outcome", sa.String(16), nullable=False, server_default=""))
        table.add_column(sa.Column("replays", sa.Integer, nullable=False, server_default="0"))
    op.create_index("accepted_deliveries_unfinished", "accepted_deliveries", ["finished_at", "touched_at"])
    op.create_table(
        "comment_answers",
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("comment_id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("issue_number", sa.Integer, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("reactions", sa.String(200), nullable=False),
        sa.Column("reply_id", sa.BigInteger, nullable=True),
        sa.Column("updated_at", sa.Float, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("comment_answers")
    op.drop_index("accepted_deliveries_unfinished", "accepted_deliveries")
    with op.batch_alter_table("accepted_deliveries") as table:
        for name in (
            "replays",
            "outcome",
            "finished_at",
            "started_by",
            "started_at",
            "touched_at",
            "kwargs",
            "task",
        ):
            table.drop_column(name)
