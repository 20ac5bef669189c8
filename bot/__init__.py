"""The GitHub-facing half of forksync: webhooks in, tasks out, one adapter to GitHub."""
