"""Tests of the kernel benchmark (splice vs decode) with the real tiny model; timings only checked positive."""

from __future__ import annotations

import json

import pytest

from copyedit_lsp.bench.kernel import format_table, kernel_benchmark, write_outputs
from copyedit_lsp.decode.llama_model import LlamaModel

SPANS = (1, 4, 16)
TRIALS = 2
PREFIX = 128

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def run(tiny_model_path):
    """The llama and its counters' call count before, and the result of one small benchmark run."""
    llama = LlamaModel(tiny_model_path, n_ctx=2048, n_threads=2)
    calls_before = llama.counters.calls
    result = kernel_benchmark(llama, spans=SPANS, prefix_tokens=PREFIX, trials=TRIALS, progress=False)
    yield llama, llama.counters.calls - calls_before, result
    llama.close()


def test_rows_in_order_with_consistent_positive_numbers(run):
    _, _, result = run
    assert [row["span"] for row in result["rows"]] == list(SPANS)
    for row in result["rows"]:
        assert row["decode_s"] > 0 and row["splice_s"] > 0
        assert row["speedup"] == pytest.approx(row["decode_s"] / row["splice_s"])
        assert row["decode_tok_s"] == pytest.approx(row["span"] / row["decode_s"])
        assert row["splice_tok_s"] == pytest.approx(row["span"] / row["splice_s"])
        assert row["decode_spread"] >= 1 and row["splice_spread"] >= 1
        assert row["merge_saving"] == pytest.approx(row["unmerged_s"] / row["splice_s"])
        assert row["verify_speedup"] == pytest.approx(row["decode_s"] / row["verify_s"])
    assert result["prefix_tokens"] == PREFIX and result["n_threads"] == 2
    assert result["device"] == "CPU, 2 threads" and result["model"] == "smollm2-135m"
    assert result["ceiling"] > 0
    assert result["speedup_at_max"] == result["rows"][-1]["speedup"]
    assert result["fraction_of_ceiling"] == pytest.approx(result["speedup_at_max"] / result["ceiling"])


def test_cache_back_to_prefix_and_one_call_per_decoded_token(run):
    llama, calls, _ = run
    assert len(llama.cached) == PREFIX
    # one prefix call, then per trial (warm-up included) one call per decoded token, one per splice,
    # two per unmerged span (one for a span of one token) and one per verified span
    unmerged = sum(2 if span > 1 else 1 for span in SPANS)
    assert calls == 1 + (TRIALS + 1) * (sum(SPANS) + len(SPANS) + unmerged + len(SPANS))


def test_format_table_lists_every_span_and_the_ceiling(run):
    _, _, result = run
    table = format_table(result)
    for span in SPANS:
        assert f"| {span} |" in table
    assert "ceiling" in table and "of the ceiling" in table


def test_write_outputs(run, tmp_path):
    _, _, result = run
    json_path, png_path = write_outputs(result, tmp_path / "out")
    assert json.loads(json_path.read_text(encoding="utf-8")) == result
    assert png_path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
