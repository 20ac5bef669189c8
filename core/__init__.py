"""Neutral code shared by the web process (``bot/``) and the workers (``workers/``): nothing here
imports either of them."""
