"""The worker process's wiring: the Celery app (queues, routes, beat), the embedded broker, the
per-event handler registry, and the runtime seams the demo and tests replace."""
