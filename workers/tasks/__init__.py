"""Celery tasks, one module per feature; ``create_celery`` imports every module here."""
