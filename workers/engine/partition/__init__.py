"""The partition: pending upstream commits → large low-risk bundles and ordered risky chains.

Pure: it decides from plain data (the commits to place in upstream order with their paths,
hunk dependencies, definitions and size; the config; the open chains recorded by earlier runs)
and one narrow interface, :class:`~workers.engine.partition.trials.Trial`, that answers "does
this commit pick cleanly onto the fork tip plus everything bundled before it?". Each commit, in
upstream order, joins an open chain it depends on, seeds a chain of its own when it is risky,
or is bundled (:mod:`.walk` has the rules); a bundle that dependencies carried past its bound is
cut into bounded parts, stacked on the parts they depend on (:mod:`.stacks`).

This ``__init__`` is not the package's public face: it exports nothing. Import each name from
the module that owns it:

* :mod:`workers.engine.partition.records` -- what the partition reads and returns: ``Change``
  (a commit as it sees it), ``ChainRecord`` (a chain as recorded), ``Reason`` and
  ``REASON_KINDS``, and the plan (``Plan``, ``Bundle``, ``Chain``, ``Urgent``) with its
  ``plan --json`` form;
* :mod:`workers.engine.partition.trials` -- the trial-pick protocols the walk asks
  (``Trial``, ``ChainTrial``, ``BundleTrial``);
* :mod:`workers.engine.partition.walk` -- ``partition()``: the walk placing each commit in a
  chain or a bundle, and ``risk_seed``;
* :mod:`workers.engine.partition.stacks` -- the walk's over-bound bundles cut into bounded,
  stacked bundles (and nothing stacked on a declined one).

Imports go one way: ``walk`` → ``stacks`` → ``records``, and ``walk`` → ``trials``.
"""
