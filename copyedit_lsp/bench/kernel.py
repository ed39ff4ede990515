"""The kernel benchmark: copying a span by single-token decode steps vs by one batched eval (splice).

After a prefix of real code, each span of S tokens is evaluated (a) autoregressively, one
``eval([t])`` per token with an argmax over the logits to pay the choice cost, and (b) by one
``eval(span)`` call. Two more methods price the decoder's speedups: (c) *unmerged*, the span's
first token on its own and then the rest (a forced tag close evaluated apart from the copied
lines, what ``merge`` saves), and (d) *verify*, the span in one call with logits and an argmax
at every position (what a draft of S tokens costs, ``draft_tags`` and ``draft_gens``).
Trials interleave the methods so machine noise hits all; medians are reported with the spread.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ..common.datasets import load_items
from ..common.reports import markdown_table, write_json

SPANS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
CEILING_BASIS = "peak batched tok/s over the spans / median one-at-a-time tok/s"


def _code_tokens(model, count: int) -> list[int]:
    """The first ``count`` tokens of the HumanEvalFix ``before`` programs, concatenated."""
    text = "\n\n".join(item.before for item in load_items("humanevalfix-python"))
    tokens = model.tokenize(text)
    if len(tokens) < count:
        raise ValueError(f"the code text has {len(tokens)} tokens, fewer than the {count} needed")
    return tokens[:count]


def _decode(model, span: Sequence[int]) -> float:
    """Seconds to evaluate ``span`` one token at a time, choosing a next token at each step."""
    started = time.perf_counter()
    for token in span:
        int(np.argmax(model.eval([token])))
    return time.perf_counter() - started


def _splice(model, span: Sequence[int]) -> float:
    """Seconds to evaluate ``span`` in one batched call, choosing the next token once."""
    started = time.perf_counter()
    int(np.argmax(model.eval(span)))
    return time.perf_counter() - started


def _unmerged(model, span: Sequence[int]) -> float:
    """Seconds to evaluate the span's first token alone, then the rest in one call."""
    started = time.perf_counter()
    model.eval(span[:1])
    if len(span) > 1:
        model.eval(span[1:])
    return time.perf_counter() - started


def _verify(model, span: Sequence[int]) -> float:
    """Seconds to evaluate ``span`` in one call with logits at every position, choosing at each."""
    started = time.perf_counter()
    np.argmax(model.eval(span, logits_from=0), axis=1)
    return time.perf_counter() - started


METHODS = (_decode, _splice, _unmerged, _verify)


def _row(span: int, samples: dict) -> dict:
    """One span's medians, speedups and spreads from its samples by method."""
    decodes, splices = samples[_decode], samples[_splice]
    decode_s, splice_s = statistics.median(decodes), statistics.median(splices)
    unmerged_s, verify_s = (statistics.median(samples[m]) for m in (_unmerged, _verify))
    return {
        "span": span,
        "decode_s": decode_s,
        "splice_s": splice_s,
        "speedup": decode_s / splice_s,
        "decode_tok_s": span / decode_s,
        "splice_tok_s": span / splice_s,
        "unmerged_s": unmerged_s,
        "merge_saving": unmerged_s / splice_s,  # how much slower the span is with its first token apart
        "verify_s": verify_s,
        "verify_speedup": decode_s / verify_s,  # a fully accepted draft of the span vs decoding it
        "decode_spread": max(decodes) / min(decodes),  # noise: slowest / fastest trial
        "splice_spread": max(splices) / min(splices),
    }


def kernel_benchmark(model, *, spans=SPANS, prefix_tokens=1024, trials=5, tokens=None, progress=True) -> dict:
    """Median decode and splice times per span after a ``prefix_tokens`` prefix (one warm-up trial
    first), on ``tokens`` (by default HumanEvalFix's code)."""
    spans = tuple(spans)
    if model.n_ctx < prefix_tokens + max(spans):
        raise ValueError(f"n_ctx {model.n_ctx} < prefix {prefix_tokens} + largest span {max(spans)}")
    if tokens is None:
        tokens = _code_tokens(model, prefix_tokens + max(spans))
    prefix, continuation = tokens[:prefix_tokens], tokens[prefix_tokens:]
    model.prefill(prefix)
    samples = {span: {method: [] for method in METHODS} for span in spans}
    with tqdm(total=(trials + 1) * len(spans), desc="kernel", disable=not progress) as bar:
        for trial in range(trials + 1):  # trial 0 is the warm-up
            for span in spans:
                # alternate which runs first so neither always follows the other
                for method in METHODS if trial % 2 else METHODS[::-1]:
                    model.truncate(prefix_tokens)
                    seconds = method(model, continuation[:span])
                    if trial:
                        samples[span][method].append(seconds)
                model.truncate(prefix_tokens)
                bar.update()
    rows = [_row(span, samples[span]) for span in spans]
    ceiling = max(row["splice_tok_s"] for row in rows) / statistics.median(row["decode_tok_s"] for row in rows)
    return {
        **model.kernel_facts(),
        "prefix_tokens": prefix_tokens,
        "trials": trials,
        "rows": rows,
        "ceiling": ceiling,
        "ceiling_basis": CEILING_BASIS,
        "speedup_at_max": rows[-1]["speedup"],
        "fraction_of_ceiling": rows[-1]["speedup"] / ceiling,
    }


def format_table(result: dict) -> str:
    """A Markdown table of the rows, then the ceiling and the fraction of it reached at the largest span."""
    lines = [
        f"{result['model']}, {result['device']}, prefix {result['prefix_tokens']} tokens, "
        f"median of {result['trials']} trials",
        "",
        markdown_table(
            [
                "span",
                "decode s",
                "splice s",
                "speedup",
                "decode tok/s",
                "splice tok/s",
                "spread decode/splice",
                "unmerged / splice",
                "verify s",
                "verify speedup",
            ],
            (
                [
                    row["span"],
                    f"{row['decode_s']:.4f}",
                    f"{row['splice_s']:.4f}",
                    f"{row['speedup']:.2f}",
                    f"{row['decode_tok_s']:.1f}",
                    f"{row['splice_tok_s']:.1f}",
                    f"{row['decode_spread']:.2f} / {row['splice_spread']:.2f}",
                    f"{row['merge_saving']:.2f}",
                    f"{row['verify_s']:.4f}",
                    f"{row['verify_speedup']:.2f}",
                ]
                for row in result["rows"]
            ),
            right=range(10),
        ),
    ]
    largest = result["rows"][-1]["span"]
    lines += [
        "",
        f"ceiling: {result['ceiling']:.2f}x ({result['ceiling_basis']})",
        f"speedup at span {largest}: {result['speedup_at_max']:.2f}x = "
        f"{result['fraction_of_ceiling']:.1%} of the ceiling",
        "spread: slowest / fastest trial; well above 1 means another process took the cores",
        "unmerged / splice: the span's first token evaluated apart (what merged batches save); "
        "verify: the span with logits at every position (a draft's cost; its speedup if fully accepted)",
    ]
    return "\n".join(lines)


def write_outputs(result: dict, out_dir: Path) -> tuple[Path, Path]:
    """Write ``kernel.json`` and ``kernel.png`` (log-log speedup vs span, the ceiling as a line)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import ScalarFormatter

    json_path = write_json(result, out_dir, "kernel")
    png_path = json_path.with_suffix(".png")
    spans = [row["span"] for row in result["rows"]]
    figure = Figure(figsize=(6, 4.5))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    axes.loglog(spans, [row["speedup"] for row in result["rows"]], "o-", base=2, label="speedup (decode / splice)")
    axes.axhline(result["ceiling"], color="gray", linestyle="--", label=f"ceiling {result['ceiling']:.1f}x")
    axes.set_xticks(spans, [str(span) for span in spans])
    axes.yaxis.set_major_formatter(ScalarFormatter())
    axes.set_xlabel("span S (tokens)")
    axes.set_ylabel("speedup t_decode / t_splice")
    axes.set_title(f"splice vs decode: {result['model']}, {result['device']}")
    axes.legend()
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(png_path, dpi=120)
    return json_path, png_path
