"""The table of comment commands: each command's name to the action that runs it.

Composed here, above the modules that implement the actions, so that no action module
imports another to register it (the resolver's actions load the engine's resolver; the
rest do not need it).
"""

from __future__ import annotations

from core.commands import Command
from core.render import commands as render
from workers.commands.actions import approve, bisect, bundle, chain, decide, digest, help_, l3, retest, status
from workers.commands.handler import Action, Context


def default_actions() -> dict[str, Action]:
    """Every command this deployment can run; a missing name answers "not available yet"."""
    return {
        "help": help_,
        "status": status,
        "skip": decide,
        "defer": decide,
        "urgent": decide,
        "approve": approve,
        "chain": chain,
        "unchain": chain,
        "bundle": bundle,
        "retest": retest,
        "bisect": bisect,
        "l3": l3,
        "signoff": l3,
        "resolve": _resolve_action,
        "digest": digest,
    }


def _resolve_action(ctx: Context, command: Command) -> render.Outcome:
    from workers.commands.resolution import resolve_action  # the engine's resolver loads on first use

    return resolve_action(ctx, command)
