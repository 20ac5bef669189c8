"""The first schema: trunk L1 results and baselines, L2 runs and metrics, series, pending checks.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "l1_suite_runs",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("commit_sha", sa.String(64), nullable=False),
        sa.Column("suite", sa.String(200), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("total", sa.Integer, nullable=False),
        sa.Column("executed", sa.Integer, nullable=False),
        sa.Column("pool", sa.String(64), nullable=False),
        sa.Column("recorded_at", sa.Float, nullable=False),
    )
    op.create_index("l1_suite_runs_by_suite", "l1_suite_runs", ["repo", "suite", "seq"])
    op.create_index("l1_suite_runs_by_commit", "l1_suite_runs", ["repo", "commit_sha", "suite"])
    op.create_table(
        "l1_test_results",
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("commit_sha", sa.String(64), primary_key=True),
        sa.Column("suite", sa.String(200), primary_key=True),
        sa.Column("test_id", sa.String(1000), primary_key=True),
        sa.Column("outcome", sa.String(32), nullable=False),
    )
    op.create_table(
        "l2_runs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("repo", sa.String(200), nullable=False),
        sa.Column("benchmark", sa.String(200), nullable=False),
        sa.Column("sha", sa.String(64), nullable=False),
        sa.Column("status", sa.String(32), nullable=False),
        sa.Column("verdict", sa.String(32), nullable=False),
        sa.Column("exit_code", sa.Integer, nullable=True),
        sa.Column("duration_s", sa.Float, nullable=False),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("output_tail", sa.Text, nullable=False),
        sa.Column("failures", sa.Text, nullable=False),
        sa.Column("recorded_at", sa.String(40), nullable=False),
    )
    op.create_index("l2_runs_by_benchmark", "l2_runs", ["repo", "benchmark", "id"])
    op.create_index("l2_runs_by_sha", "l2_runs", ["repo", "sha"])
    op.create_table(
        "l2_metrics",
        sa.Column("run_id", sa.Integer, sa.ForeignKey("l2_runs.id", ondelete="CASCADE"), primary_key=True),
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("value", sa.Float, nullable=False),
    )
    op.create_table(
        "series_points",
        sa.Column("seq", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(300), nullable=False),
        sa.Column("point", sa.Text, nullable=False),
    )
    op.create_index("series_points_by_name", "series_points", ["name", "seq"])
    op.create_table(
        "l1_pending_checks",
        sa.Column("repo", sa.String(200), primary_key=True),
        sa.Column("check_run_id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("head_sha", sa.String(64), nullable=False),
        sa.Column("installation_id", sa.BigInteger, nullable=False),
        sa.Column("queue", sa.String(64), nullable=False),
        sa.Column("started_at", sa.Float, nullable=False),
        sa.Column("deadline", sa.Float, nullable=False),
    )


def downgrade() -> None:
    for table in (
        "l1_pending_checks",
        "series_points",
        "l2_metrics",
        "l2_runs",
        "l1_test_results",
        "l1_suite_runs",
    ):
        op.drop_table(table)
