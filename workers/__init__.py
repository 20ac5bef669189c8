"""What runs on worker machines: the engine, the Celery tasks and the ``forksync`` command line."""
