"""``copyedit bench edits``: the aggregates and the bound on known rows, and one real run with the tiny model."""

import json
import math

import pytest

from copyedit_lsp.backend import Backend
from copyedit_lsp.bench.datasets import load_items
from copyedit_lsp.bench.edits import BASE_MODES, bound_table, edits_benchmark, kernel_curve, summarize, write_outputs
from copyedit_lsp.decoder import Decoder
from copyedit_lsp.edit import EditOptions

KERNEL = {"rows": [{"span": 1, "speedup": 1.0}, {"span": 16, "speedup": 3.0}, {"span": 256, "speedup": 4.0}]}


def row(item, mode, seconds, **extra):
    base = {
        "id": item,
        "mode": mode,
        "seconds": seconds,
        "exact": False,
        "passed": None,
        "decode_steps": 10,
        "chosen_tokens": 10,
        "output_tokens": 40,
        "spliced_tokens": 0,
        "splice_spans": [],
        "drafted_tokens": 0,
        "accepted_tokens": 0,
        "tokens": [1, 2],
    }
    return base | extra


def test_kernel_curve_interpolates_in_log_span_and_stays_flat_outside():
    s = kernel_curve(KERNEL)
    assert s(1) == 1.0 and s(16) == 3.0 and s(4) == pytest.approx(2.0) and s(64) == pytest.approx(3.5)
    assert s(0) == 1.0 and s(10_000) == 4.0


def test_summary_ratios_are_per_item_over_rewrite():
    rows = [
        row("a", "rewrite", 2.0, passed=True, exact=True),
        row("a", "lookup", 1.0, passed=True, tokens=[1, 2], drafted_tokens=10, accepted_tokens=5),
        row("b", "rewrite", 3.0, passed=False),
        row("b", "lookup", 1.0, passed=False, tokens=[1, 3], drafted_tokens=10, accepted_tokens=10),
    ]
    summary = summarize(rows, ["rewrite", "lookup"])
    assert summary["rewrite"]["speedup_median"] == 1.0
    assert summary["lookup"]["speedup_median"] == 2.5  # median of 2x and 3x
    assert summary["lookup"]["reference"] == "rewrite" and summary["lookup"]["same_tokens"] == 1
    assert summary["lookup"]["accepted_share"] == 0.75 and "accepted_share" not in summary["rewrite"]
    assert (summary["rewrite"]["exact"], summary["rewrite"]["passed"], summary["rewrite"]["tested"]) == (1, 1, 2)


def test_a_remote_mode_is_compared_with_its_local_mode():
    rows = [
        row("a", "rewrite", 2.0, text="x\n", requests=0),
        row("a", "remote-rewrite", 3.0, text="x\n", requests=1),
        row("b", "rewrite", 2.0, text="y\n", requests=0),
        row("b", "remote-rewrite", 5.0, text="z\n", requests=1),
    ]
    entry = summarize(rows, ["rewrite", "remote-rewrite"])["remote-rewrite"]
    assert entry["reference"] == "rewrite" and entry["same_text"] == 1 and "same_program" not in entry
    assert entry["latency_ratio_median"] == 2.0 and entry["requests_per_edit"] == 1  # median of 1.5x and 2.5x


def test_bound_charges_chosen_tokens_and_copies_by_the_kernel_curve():
    forced = row(
        "a",
        "forced",
        1.0,
        decode_steps=3,
        chosen_tokens=10,
        output_tokens=100,
        splice_spans=[16, 16],
        parses=True,
        one_call_per_splice=True,
        constraint_share=0.0,
    )
    rows = [row("a", "rewrite", 2.0), forced]
    result = {"sets": {"set": {"rows": rows, "summary": summarize(rows, ["rewrite", "forced"])}}}
    (entry,) = bound_table(result, KERNEL).values()
    assert entry["bound_median"] == pytest.approx(100 / (10 + 2 * 16 / 3.0))
    assert entry["free_copy_bound_median"] == 10 and entry["measured_median"] == 2.0
    assert entry["copied_share"] == pytest.approx(0.32)


@pytest.mark.model
def test_a_real_run_of_every_mode(tiny_model_path, tmp_path):
    decoder = Decoder(Backend(tiny_model_path, n_ctx=4096, n_threads=2))
    sets = {"py": load_items("humanevalfix-python", limit=2), "quixbugs": load_items("quixbugs", limit=1)}
    modes = [*BASE_MODES, "forced-plain"]
    result = edits_benchmark(decoder, sets, modes=modes, progress=False)
    result["bounds"] = bound_table(result, KERNEL)
    for name, items in sets.items():
        rows = result["sets"][name]["rows"]
        assert [(r["id"], r["mode"]) for r in rows] == [(i.id, m) for i in items for m in modes]  # interleaved
        forced = [r for r in rows if r["mode"] == "forced"]
        assert all(r["exact"] and r["passed"] and r["parses"] and r["one_call_per_splice"] for r in forced)
        summary = result["sets"][name]["summary"]
        assert summary["forced"]["exact"] == len(items) and summary["rewrite"]["speedup_median"] == 1.0
        assert all(r["spliced_tokens"] == 0 for r in rows if r["mode"] in ("program-none", "rewrite", "lookup"))
        # a script's tokens do not depend on the speedups; what they cost does
        assert summary["forced-plain"]["reference"] == "forced" and summary["forced-plain"]["same_tokens"] == len(items)
        assert summary["forced"]["decode_steps"] < summary["forced-plain"]["decode_steps"]
        assert math.isfinite(result["bounds"][name]["bound_median"])
    # each mode's fixed prefix was warm before its edit was timed, and nothing more: every edit evaluated
    # its item's own tokens (lookup follows rewrite with the same prompt and must not reuse it)
    for item, rows in zip(
        sets["py"],
        (result["sets"]["py"]["rows"][: len(modes)], result["sets"]["py"]["rows"][len(modes) :]),
        strict=False,
    ):
        code = len(decoder.backend.tokenize(item.before))
        prompt = decoder.prompt(item.before, item.instruction, EditOptions(mode="rewrite", language="python"))
        assert all(code < r["prefill_tokens"] < code + 40 + 4 * item.before.count("\n") < len(prompt) for r in rows)
    paths = write_outputs(result, tmp_path)
    assert all(path.stat().st_size > 0 for path in paths)
    assert json.loads(paths[0].read_text())["modes"] == modes
    assert "| forced | 2/2 |" in paths[1].read_text()
    decoder.backend.close()
