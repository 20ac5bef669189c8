"""The dashboard's data, shared by both halves: the per-fork feed the workers write
(``feed``) and the store it is kept in (``store``). The pages are in ``bot/dashboard``."""
