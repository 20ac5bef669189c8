"""``forksync demo``: the sample upstream/fork generator (and its fast-import writer) and the
ingestion loop run through the embedded worker. Not used by the bot."""
