"""What a task does, end to end, once it has its GitHub view and git caches: ingestion, L1, L2.

Each job is called by a thin Celery shell in ``workers/tasks/`` and is testable without Celery."""
