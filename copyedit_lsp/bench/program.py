"""``copyedit bench program``: program mode on real edits — the grammar holds, copies splice, what it costs."""

from __future__ import annotations

import statistics
import sys

from tqdm import tqdm

from ..datasets import load_items
from ..decoder import Decoder
from ..program import Copy, parse_program
from ..prompt import SourceView


def program_benchmark(decoder: Decoder, source: str, limit: int) -> dict:
    """Run program mode (splice prefill) on ``limit`` items; per item and summed figures."""
    rows = []
    for item in tqdm(load_items(source, limit=limit), desc="program mode", file=sys.stderr):
        result = decoder.edit(item.before, item.instruction, language=item.language)
        stats, view = result.stats, SourceView.of(item.before)
        copies = [op for op in result.program.ops if isinstance(op, Copy)]
        spans = [len(decoder.backend.tokenize(view.span(c.start, c.end))) for c in copies]
        rows.append(
            {
                "id": item.id,
                "parses": parse_program(result.program.to_text(), n_lines=len(view.lines)) == result.program,
                "ops": stats.ops,
                "copies": len(copies),
                "one_call_per_splice": stats.splice_spans == spans and stats.splice_eval_calls == [1] * len(copies),
                "spliced_tokens": stats.spliced_tokens,
                "decode_steps": stats.decode_steps,
                "output_tokens": stats.output_tokens,
                "exact": result.text == item.after,
                "constraint_share": stats.constraint_seconds / max(stats.decode_seconds, 1e-9),
            }
        )
    copying = [r for r in rows if r["copies"]]
    return {
        "items": len(rows),
        "parse_rate": sum(r["parses"] for r in rows) / len(rows),
        "one_call_per_splice": sum(r["one_call_per_splice"] for r in rows),
        "copying_items": len(copying),
        "fewer_steps_than_output": sum(r["decode_steps"] < r["output_tokens"] for r in copying),
        "decode_steps_copying": sum(r["decode_steps"] for r in copying),
        "output_tokens_copying": sum(r["output_tokens"] for r in copying),
        "exact": sum(r["exact"] for r in rows),
        "constraint_share_median": statistics.median(r["constraint_share"] for r in rows),
        "constraint_share_max": max(r["constraint_share"] for r in rows),
        "rows": rows,
    }


def format_table(result: dict) -> str:
    lines = [
        "| item | parses | ops | copies | spliced | decode steps | output tokens | exact |",
        "|---|---|---:|---:|---:|---:|---:|---|",
        *(
            f"| {r['id']} | {r['parses']} | {r['ops']} | {r['copies']} | {r['spliced_tokens']} | "
            f"{r['decode_steps']} | {r['output_tokens']} | {r['exact']} |"
            for r in result["rows"]
        ),
        "",
        f"parse rate {result['parse_rate']:.0%}; every copy one splice call of its lines: "
        f"{result['one_call_per_splice']}/{result['items']} items",
        f"copying programs: {result['fewer_steps_than_output']}/{result['copying_items']} took fewer decode steps "
        f"than output tokens; summed {result['decode_steps_copying']} steps for {result['output_tokens_copying']} tokens",
        f"exact match {result['exact']}/{result['items']}",
        f"grammar constraint time per decode step: median {result['constraint_share_median']:.2%}, "
        f"max {result['constraint_share_max']:.2%} of a decode step",
    ]
    return "\n".join(lines)
