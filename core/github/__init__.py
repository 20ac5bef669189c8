"""The one GitHub interface of forksync, in modules by what they hold:

* ``errors``: how a request can fail (retryable or not, with the remedy); pure;
* ``records``: the typed records read from and written to GitHub; pure;
* ``roles``: narrow role protocols (checks, pulls, issues, comments, contents, collaborators,
  refs), ``GitHubPort`` (all of them) and the ingestion loop's ``IngestGitHub``; pure;
* ``adapter``: ``GitHubAdapter``, the one PyGithub implementation, and status classification;
* ``app``: App auth (JWT, installation tokens, installations and their repositories);
* ``ingest``: the ingestion loop's view, live over the adapter or dry (in memory);
* ``oauth``: the dashboard's GitHub login (code exchange, the user, what they can read).

No raw HTTP to GitHub beside PyGithub: every call goes through PyGithub's requester (pushes and
fetches go through the git funnel with the installation token). The only other HTTP clients are
not GitHub's: the outgoing webhook (``workers/adapters/notify.py``, ``requests``) and the
conflict agent's OpenAI-compatible endpoint (``workers/engine/resolve/agent.py``, ``urllib``). Importing this package, ``errors``, ``records``
or ``roles`` does not import PyGithub, so the engine may use the records and roles.
"""
