"""The readable plan: summary first, long file lists summarised, no line over 160 characters."""

from __future__ import annotations

from core.render.plan import WIDTH, fit, plan_text, summarise_paths
from workers.engine.partition.records import Bundle, Chain, Plan, Reason


def test_long_file_lists_are_summarised_by_folder() -> None:
    """More than three files read as a count and the busiest folders."""
    paths = [f"lib/Dialect/F{i}.cpp" for i in range(15)] + [f"test/TritonGPU/t{i}.mlir" for i in range(4)]
    assert summarise_paths(paths) == "19 files in lib/Dialect/…, test/TritonGPU/…"
    assert summarise_paths(["a.py", "b/c.py"]) == "a.py, b/c.py"


def test_plan_summary_comes_first_and_no_line_is_too_long() -> None:
    """The first lines say sizes, blocking conflicts and what to do next; every line fits in WIDTH."""
    files = ", ".join(f"lib/Dialect/TritonGPU/Transforms/Pass{i}.cpp" for i in range(19))
    seed = Reason(
        "a" * 40, "conflict", f"trial pick onto the fork tip + 3 planned commit(s) conflicts in {files}"
    )
    plan = Plan(
        (Bundle("bundle-bbbbbbb", ("b" * 40, "c" * 40), 12),),
        (Chain("chain-aaaaaaa", ("a" * 40, "d" * 40), (seed, Reason("d" * 40, "line", "x" * 300))),),
    )
    text = plan_text(plan, {"a" * 40: "[Backend] A very long subject " * 8}, ["chain-old dissolved: reasons"])
    lines = text.splitlines()
    assert lines[0] == "Plan: 4 commit(s) to place (50% bundled): 1 bundle(s) of 2, 1 risky chain(s) of 2"
    assert any("19 files in lib/Dialect/…" in line for line in lines[:6])
    assert any(line.startswith("Next:") for line in lines) and "Healed: chain-old dissolved" in text
    assert lines.index("Details") > 3
    assert max(len(line) for line in lines) <= WIDTH
    assert len(fit("y" * 500)) == WIDTH


def test_stacked_bundles_are_named_with_their_base_in_the_summary_and_details() -> None:
    """A stacked bundle says what it lands after, in the summary and in its details line."""
    plan = Plan(
        (
            Bundle("bundle-aaaaaaa", ("a" * 40,), 3),
            Bundle("bundle-bbbbbbb", ("b" * 40,), 4, stacked_on="bundle-aaaaaaa"),
        ),
        (),
    )
    text = plan_text(plan, {})
    assert "stacked (each lands after the bundle it needs): 1: bundle-bbbbbbb on bundle-aaaaaaa" in text
    assert "bundle-bbbbbbb  1 commit(s), 4 changed lines, stacked on bundle-aaaaaaa" in text
    assert "bundle-aaaaaaa  1 commit(s), 3 changed lines\n" in text
    assert all(len(line) <= WIDTH for line in text.splitlines())
