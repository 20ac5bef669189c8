"""The ledger: every upstream commit after the base → disposition and the fork commits carrying it.

Entry points, each in the module that owns it (this ``__init__`` is not the package's public
face: it exports nothing; import each name from its module):

* :mod:`workers.engine.ledger.cache` -- ``load_ledger(pair, config) -> Ledger``, cached by
  (upstream tip, fork tip, notes tip, config digest): a warm call reads one JSON file; and
  ``load_status(pair, config) -> StatusView``, what ``forksync status`` prints (metrics,
  warnings, and the pins the fork states itself: ``UPSTREAM_HASH``,
  ``UPSTREAM_FRONTIER_HASH``) from a small file of its own;
* :mod:`workers.engine.ledger.build` -- ``build_ledger(pair, config) -> Ledger``, always
  recomputed from git history (and the upstream file listing it keeps between runs);
  ``rules_for`` the recognition rules of a pair;
* :mod:`workers.engine.ledger.compute` -- ``compute_ledger(...)``, the pure core, for tests and
  for callers that already hold history;
* :mod:`workers.engine.ledger.records` -- what they return: ``Ledger`` (its ``LedgerEntry``
  entries and ``Pick`` records, ``LEDGER_VERSION``) and ``matching``, the entries a REF names.

Imports go one way: ``cache`` → ``build`` → ``compute`` → ``records``.
"""
