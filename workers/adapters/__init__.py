"""Worker-side adapters to outside state: bare git caches of upstream and fork, locks and metric
series (Redis or on-disk). The GitHub adapter is ``core.github``."""
