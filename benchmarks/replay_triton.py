"""Real-history replay: forksync's partition on Triton's own upstream history, beside a line-level oracle.

The history is facebookexperimental/triton's pre-fork upstream first-parent history (the
triton-lang commits before the fork's first own commit, ``[TLX-rebase][1/2]``; its parent
``2ac060b8b`` is the pre-fork tip). Bring it with the search tool's ``fetch`` (a bare mirror)
and pass ``--mirror``. The replay itself is :mod:`benchmarks.replay_history`'s, with Triton's
values (:data:`benchmarks.replay_history.TRITON`): the fork cut 1,000 commits before the tip, the
first 600 ingested with holes (a sha's first 8 hex digits divisible by 25) and conflicts left
behind, diverged zones and the LLVM pin as risky path in the style of fbtriton's config, and the
fork's own ``[TLX-rebase]`` commits as its divergence (weekly model B).

    python -m benchmarks.replay_triton --mirror /work/.mirror/facebookexperimental+triton/repo --work /tmp/replay
"""

from __future__ import annotations

from benchmarks.replay_history import TRITON, main

if __name__ == "__main__":
    main(TRITON.name)
