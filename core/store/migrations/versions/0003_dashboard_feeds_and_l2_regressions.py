"""The dashboard's feeds and facts per fork, and L2 regressions stored with the run that found them.

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
        "l2_regressions",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer, sa.ForeignKey("l2_runs.id", ondelete="CASCADE"), nullable=False),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("benchmark", sa.String(200), nullable=False),
        sa.Column("metric", sa.String(200), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("first_bad", sa.String(64), nullable=False),
        sa.Column("delta_pct", sa.Float, nullable=True),
        sa.Column("good", sa.String(64), nullable=True),
        sa.Column("culprit", sa.String(64), nullable=True),
        sa.Column("culprit_subject", sa.Text, nullable=False),
        sa.Column("bisect_status", sa.String(32), nullable=False),
        sa.Column("bisect_steps", sa.Integer, nullable=False),
        sa.Column("candidates", sa.Integer, nullable=False),
        sa.Column("note", sa.Text, nullable=False),
        sa.Column("tracking_issue", sa.Integer, nullable=True),
        sa.Column("recorded_at", sa.Float, nullable=False),
    )
    op.create_index("l2_regressions_by_benchmark", "l2_regressions", ["repo", "benchmark", "id"])
    op.create_table(
        "dashboard_feeds",
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("version", sa.String(64), nullable=False),
        sa.Column("doc", sa.Text, nullable=False),
        sa.Column("updated_at", sa.Float, nullable=False),
    )
    op.create_table(
        "dashboard_facts",
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("doc", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("dashboard_facts")
    op.drop_table("dashboard_feeds")
    op.drop_index("l2_regressions_by_benchmark", "l2_regressions")
    op.drop_table("l2_regressions")
