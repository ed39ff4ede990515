"""``copyedit bench edits``: every decoding mode on real edits, interleaved item by item.

Per item and mode: exact match, tests passed (or could not run: a missing dependency is not a
wrong edit), parse rate, latency, decode steps and spliced tokens; per set and mode the aggregate,
with the median latency ratio over ``rewrite``.  Each mode's fixed prompt prefix (system prompt
and examples) is in the KV cache before its edit is timed (:meth:`~copyedit_lsp.decode.edit.Editor.warm`),
and nothing of another mode's edit of the same item, as in a server that has made edits before:
latency counts the item, not the prefix.

Modes named ``remote-program``, ``remote-rewrite`` and ``remote-forced`` run on an
OpenAI-compatible completions server (:class:`~copyedit_lsp.decode.remote.RemoteDecoder`), one request
per copy; the server's prefix cache is warmed the same way, and each is compared with its local
mode: the same program, the same text, the latency ratio and the requests per edit.

A mode with a reference mode (``lookup``: ``rewrite``; ``program-no-tags`` and the other
ablations of the decoder's speedups: ``program``) is checked token for token against it; where
the two part, the gap between the two tokens' logits is measured by replaying the reference one
token at a time (llama.cpp's batched and one-token evaluations round differently, so a near tie
can fall either way).

The bound table puts the paper's wall-clock bound next to the measured ``forced`` speedup: a
perfect program costs its chosen tokens as decode steps and each copy of N tokens
N / s(N) steps, where s is the measured kernel speedup curve (``copyedit bench kernel``).
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from tqdm import tqdm

from ..common.datasets import EditItem
from ..common.reports import markdown_table, side_by_side, write_json
from ..core.loss import lost_code
from ..core.program import ProgramError, parse_program
from ..core.resolver import oracle_program, split_lines
from ..decode.decoder import Decoder
from ..decode.edit import NO_SPEEDUPS, EditOptions, Editor, EditResult, Speedups
from ..decode.prompt import Layout, SourceView
from ..serve.region import choice_names, narrowed_scope
from .checks import Outcome, run_tests

# The decoder's speedups one at a time off (and all off), as mode suffixes: ``program-no-tags``.
ABLATIONS: dict[str, Speedups] = {
    "plain": NO_SPEEDUPS,
    "no-force": Speedups(force=False),
    "no-batch": Speedups(batch=False),
    "no-tags": Speedups(draft_tags=False),
    "no-gens": Speedups(draft_gens=False),
}
# Benchmark mode -> the decoder's mode, splice and speedups.
BASE_MODES: dict[str, dict] = {
    "program": {"mode": "program", "splice": "prefill"},
    "program-none": {"mode": "program", "splice": "none"},
    "program-unchecked": {"mode": "program", "splice": "prefill", "copy_check": 0.0},
    "program-nofallback": {"mode": "program", "splice": "prefill", "fallback": False},
    "rewrite": {"mode": "rewrite", "splice": "prefill"},
    "lookup": {"mode": "lookup", "splice": "prefill"},
    "forced": {"mode": "forced", "splice": "prefill"},
    # The model asked as a chat user asks it: the whole file, code first, the plain system line,
    # the answer opening freely, no examples (issue 55's baseline, in the project's own harness).
    "chat": {
        "mode": "rewrite",
        "splice": "prefill",
        "layout": Layout("code-first", "plain", False),
        "examples": "none",
        "whole_file": True,
    },
}
MODES: dict[str, dict] = BASE_MODES | {
    f"{base}-{name}": BASE_MODES[base] | {"speedups": speedups}
    for base in ("program", "forced")
    for name, speedups in ABLATIONS.items()
}
MODES |= {f"remote-{base}": BASE_MODES[base] | {"remote": True} for base in ("program", "rewrite", "forced")}
# The mode whose tokens a mode should write: lookup writes rewrite's, an ablation its base mode's.
REFERENCES = {"lookup": "rewrite"} | {f"{base}-{name}": base for base in ("program", "forced") for name in ABLATIONS}
# The local mode whose program and text a remote mode should write.
REMOTE_REFERENCES = {name: name.removeprefix("remote-") for name, options in MODES.items() if options.get("remote")}
REMOTE_REFERENCES["remote-program"] = "program-unchecked"  # a completions server returns no logits to check copies by


def _row(item: EditItem, name: str, result: EditResult, timeout: float, text: str) -> dict:
    """The row of ``result``, whose edited document is ``text``; an edit that loses code, is not what
    the instruction asks or was cut short is not offered (the document stays as it was), and its
    tests run on what is offered."""
    stats = result.stats
    offered = item.before if result.loss is not None or result.mismatch or result.cut else text
    tests = run_tests(item, offered, timeout=timeout).outcome
    offered_loss = lost_code(item.before, offered, item.language, item.instruction)
    row = {
        "id": item.id,
        "mode": name,
        "exact": offered == item.after,
        "text": text,
        "refused": result.loss.describe() if result.loss is not None else None,  # lost code: not offered
        "mismatch": result.mismatch,  # not what the instruction asks (asked.mismatch): not offered
        "lines_lost": offered_loss.lines if offered_loss is not None else 0,  # by what is offered (0 by design)
        "passed": tests.passed,
        "tests": tests,  # an Outcome: passed, failed, could_not_run or no_tests
        "seconds": result.stats.total_seconds,
        "decode_steps": stats.decode_steps,
        "chosen_tokens": stats.chosen_tokens,
        "forced_tokens": stats.forced_tokens,
        "spliced_tokens": stats.spliced_tokens,
        "splice_spans": stats.splice_spans,
        "output_tokens": stats.output_tokens,
        "prefill_tokens": stats.prefill_tokens,
        "prefix_reused_tokens": stats.prefix_reused_tokens,  # remote: the prompt tokens the engine's cache held
        "eval_calls": stats.eval_calls,
        "ops": stats.ops,
        "requests": stats.requests,
        "drafted_tokens": stats.drafted_tokens,
        "accepted_tokens": stats.accepted_tokens,
        "doubted_copies": stats.doubted_copies,
        "tokens": list(result.tokens),
        "cut": result.cut,  # why the output was cut short, if it was
        "fallback": stats.fallback,  # why program mode's result gave way to a rewrite, if it did
    }
    program = result.program or result.replaced  # the model's program, also where a rewrite replaced it
    if program is not None:
        row["program"] = program.to_text()
        try:
            parsed = parse_program(program.to_text(), n_lines=len(SourceView.of(item.before).lines))
            row["parses"] = parsed == program
        except ProgramError:
            row["parses"] = False
        if not stats.requests:  # the local decoder's own measures
            row["one_call_per_splice"] = stats.splice_eval_calls == [1] * stats.splice_calls
            row["constraint_share"] = stats.constraint_seconds / max(stats.decode_seconds, 1e-9)
    return row


def _error_row(item: EditItem, name: str, error: Exception) -> dict:
    """The row of an edit that raised instead of returning (a document past the context, a server
    that went away, ...): no text, nothing passed, and why."""
    return {"id": item.id, "mode": name, "exact": False, "passed": False, "error": f"{type(error).__name__}: {error}"}


# What a row holds of the edited code: left out of the outputs (``texts`` off) of a set whose license
# forbids copying its code into the project (CanItEdit's).
TEXT_FIELDS = ("text", "program", "tokens")


def figures_only(row: dict) -> dict:
    """``row`` without :data:`TEXT_FIELDS`."""
    return {key: value for key, value in row.items() if key not in TEXT_FIELDS}


class RowLog:
    """A run's rows, appended to a JSONL file as each is measured (a killed run keeps them); with
    ``resume`` the rows an earlier run of the same file wrote are read back and not measured again;
    without ``texts``, the rows' figures only (:func:`figures_only`)."""

    def __init__(self, path: Path, *, resume: bool = False, texts: bool = True):
        self.path = path
        self.texts = texts
        self.saved: dict[tuple[str, str, str], dict] = {}
        if resume and path.is_file():
            for line in path.read_text().splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:  # the line a killed run was writing
                    continue
                self.saved[row["set"], row["id"], row["mode"]] = row
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w") as out:  # the rows kept, without a torn last line
            out.writelines(json.dumps(row) + "\n" for row in self.saved.values())

    def get(self, set_name: str, item_id: str, mode: str) -> dict | None:
        """The row an earlier run measured, if any."""
        return self.saved.get((set_name, item_id, mode))

    def add(self, row: dict) -> None:
        with self.path.open("a") as out:
            out.write(json.dumps(row if self.texts else figures_only(row)) + "\n")


def first_divergence(
    decoder: Decoder, prompt: list[int], reference: Sequence[int], other: Sequence[int]
) -> tuple[int, float | None, np.ndarray | None]:
    """Where ``other`` first parts from ``reference`` (answer tokens after ``prompt``): the position,
    the gap between the two tokens' logits there with ``reference`` replayed one token at a time (a
    near tie when small; None where one answer merely stops first), and those logits."""
    at = next(
        (i for i, (a, b) in enumerate(zip(reference, other, strict=False)) if a != b), min(len(reference), len(other))
    )
    if at >= min(len(reference), len(other)):
        return at, None, None
    logits, _ = decoder.llama.prefill(prompt)
    for token in reference[:at]:
        logits = decoder.llama.eval([token])
    return at, float(abs(logits[reference[at]] - logits[other[at]])), logits


def _mark_divergences(
    decoder: Editor | None,
    items: Sequence[EditItem],
    rows: list[dict],
    examples: str | None,
    layout: Layout | None,
    regions: dict[str, tuple[int, int]],
) -> None:
    """Give each row whose tokens differ from its reference mode's row a ``divergence``: where, and the gap."""
    by_key = {(r["id"], r["mode"]): r for r in rows}
    for item in items:
        for name, reference in REFERENCES.items():
            row, base = by_key.get((item.id, name)), by_key.get((item.id, reference))
            if row is None or base is None or "tokens" not in row or "tokens" not in base:
                continue  # a row that raised, or one read back without its tokens
            if row["tokens"] == base["tokens"]:
                continue
            assert isinstance(decoder, Decoder), "the modes with a reference mode are the local decoder's"
            options = _options(reference, item, ordered=True, examples=examples, layout=layout)
            decoder.session.prepare(options.mode)
            start, end = regions[item.id] if options.program is None else (0, len(split_lines(item.before)))
            source = "".join(split_lines(item.before)[start:end])
            prompt = decoder.prompt(source, item.instruction, options)
            at, gap, _ = first_divergence(decoder, prompt, base["tokens"], row["tokens"])
            row["divergence"] = {"at": at, "gap": gap}


def _options(
    name: str, item: EditItem, *, ordered: bool, examples: str | None, layout: Layout | None = None
) -> EditOptions:
    """The edit options of benchmark mode ``name`` on ``item`` (forced mode scripted by the oracle;
    a mode's own layout and examples before the run's)."""
    fields = {key: value for key, value in MODES[name].items() if key not in ("remote", "whole_file")}
    fields = {"examples": examples, "layout": layout} | fields
    program = oracle_program(item.before, item.after) if fields["mode"] == "forced" else None
    return EditOptions(**fields, language=item.language, program=program, ordered=ordered)


def edits_benchmark(
    decoder: Editor | None,
    sets: dict[str, list[EditItem]],
    *,
    modes: Sequence[str] = tuple(BASE_MODES),
    remote: Editor | None = None,
    ordered: bool = True,
    examples: str | None = None,
    layout: Layout | None = None,
    timeout: float = 10.0,
    progress: bool = True,
    log: RowLog | None = None,
    narrow: bool = True,
) -> dict:
    """Run ``modes`` on every item of ``sets``, interleaved item by item; rows and aggregates per set.

    Local modes run on ``decoder``, remote ones on ``remote``; an edit that raises is an ``error`` row;
    ``log`` keeps each row as measured (and gives back an earlier run's); ``narrow`` edits the lines
    each instruction concerns, not the whole text."""
    _check_modes(modes, decoder, remote)
    prompt = {"examples": examples, "layout": layout.text() if layout is not None else None}
    selector = getattr(getattr(decoder, "selector", None), "name", None)
    result = {"modes": list(modes), "ordered": ordered, **prompt, "selector": selector, "narrow": narrow, "sets": {}}
    total = sum(len(items) for items in sets.values()) * len(modes)
    with tqdm(total=total, desc="bench edits", unit=" edits", file=sys.stderr, disable=not progress) as bar:
        for set_name, items in sets.items():
            rows = []
            regions = {}
            for item in items:
                regions[item.id] = _region(item, decoder or remote, narrow)
                for name in modes:
                    row = log.get(set_name, item.id, name) if log is not None else None
                    if row is None:
                        editor = remote if MODES[name].get("remote") else decoder
                        row = {"set": set_name} | _measure(
                            editor, item, name, ordered, examples, layout, timeout, regions[item.id]
                        )
                        if log is not None:
                            log.add(row)
                    rows.append(row)
                    bar.update()
            _mark_divergences(decoder, items, rows, examples, layout, regions)
            result["sets"][set_name] = {"rows": rows, "summary": summarize(rows, modes)}
    return result


def _check_modes(modes: Sequence[str], decoder: Editor | None, remote: Editor | None) -> None:
    """Raise ValueError for a mode that does not exist or whose editor (local or remote) is missing."""
    unknown = set(modes) - set(MODES)
    if unknown:
        raise ValueError(f"unknown modes {sorted(unknown)}; choose from {list(MODES)}")
    for name in modes:
        if (remote if MODES[name].get("remote") else decoder) is None:
            raise ValueError(f"mode {name} needs {'a remote server' if MODES[name].get('remote') else 'a local model'}")


def _region(item: EditItem, editor: Editor | None, narrow: bool) -> tuple[int, int]:
    """The lines (0-based, end excluded) of ``item`` its edits cover: with ``narrow``, those the
    instruction names, or in a long text that names none the definition ``editor``'s model chooses
    (:func:`~copyedit_lsp.serve.region.narrowed_scope`), else all."""
    if not narrow:
        return 0, len(split_lines(item.before))
    names = choice_names(item.before, item.language, item.instruction)
    chosen = editor.choose(item.before, item.instruction, item.language, names) if names and editor else None
    scope = narrowed_scope(item.before, item.language, item.instruction, chosen)
    return scope.start_line, scope.end_line


def _measure(
    editor: Editor | None,
    item: EditItem,
    name: str,
    ordered: bool,
    examples: str | None,
    layout: Layout | None,
    timeout: float,
    region: tuple[int, int],
) -> dict:
    """The row of benchmark mode ``name`` on ``item``: the edit of the ``region``'s lines (forced
    mode and a whole-file mode edit the whole text)."""
    assert editor is not None
    options = _options(name, item, ordered=ordered, examples=examples, layout=layout)
    lines = split_lines(item.before)
    whole = options.program is not None or MODES[name].get("whole_file")
    start, end = (0, len(lines)) if whole else region
    head, source, tail = "".join(lines[:start]), "".join(lines[start:end]), "".join(lines[end:])
    try:
        editor.warm(options)  # as in a server that has made edits before: the item is timed, not the prefix
        result = editor.edit(source, item.instruction, options)
    except Exception as error:  # recorded with its reason; the other items go on
        return _error_row(item, name, error)
    return _row(item, name, result, timeout, head + result.text + tail) | {"region": [start + 1, end]}


def _against_local(name: str, mode_rows: dict[str, dict], local: dict[str, dict]) -> dict:
    """A remote mode's rows against its local mode's: same text and program, latency ratio, requests."""
    pairs = [(r, local[i]) for i, r in mode_rows.items() if i in local]
    measured = [(mine, theirs) for mine, theirs in pairs if "error" not in mine and "error" not in theirs]
    entry = {
        "reference": REMOTE_REFERENCES[name],
        "same_text": sum(mine["text"] == theirs["text"] for mine, theirs in measured),
        "latency_ratio_median": _median(mine["seconds"] / theirs["seconds"] for mine, theirs in measured),
        "requests_per_edit": _mean(r["requests"] for r in mode_rows.values() if "error" not in r),
    }
    if MODES[name]["mode"] != "rewrite":
        entry["same_program"] = sum(mine.get("program") == theirs.get("program") for mine, theirs in pairs)
    return entry


def summarize(rows: list[dict], modes: Sequence[str]) -> dict[str, dict]:
    """Per mode: items, exact, tests passed (of those that ran) and could not run, parse rate, median
    latency and median speedup over rewrite."""
    by_mode = {name: {r["id"]: r for r in rows if r["mode"] == name} for name in modes}
    summary = {}
    for name, mode_rows in by_mode.items():
        if not mode_rows:
            continue
        entry = _mode_entry(name, mode_rows, by_mode.get("rewrite", {}))
        if local := by_mode.get(REMOTE_REFERENCES.get(name), {}):
            entry |= _against_local(name, mode_rows, local)
        if reference := by_mode.get(REFERENCES.get(name), {}):
            entry |= _against_reference(name, mode_rows, reference)
        summary[name] = entry
    return summary


def _mode_entry(name: str, mode_rows: dict[str, dict], rewrite: dict[str, dict]) -> dict:
    """One mode's counts, medians and shares over its rows (``rewrite``'s rows give the speedup)."""
    every = list(mode_rows.values())
    values = [r for r in every if "error" not in r]  # the edits that returned a result
    tested = [r["passed"] for r in every if r["passed"] is not None]
    entry = {
        "items": len(every),
        "errors": len(every) - len(values),
        "untestable": sum(r.get("tests") == Outcome.COULD_NOT_RUN for r in every),
        "exact": sum(r["exact"] for r in every),
        "passed": sum(tested),
        "tested": len(tested),
        "median_seconds": _median(r["seconds"] for r in values),
        "decode_steps": sum(r["decode_steps"] for r in values),
        "output_tokens": sum(r["output_tokens"] for r in values),
        "spliced_tokens": sum(r["spliced_tokens"] for r in values),
        "refused": sum(r.get("refused") is not None for r in values),  # lost code: not offered
        "lines_lost": sum(r.get("lines_lost", 0) for r in values),  # by what is offered
    }
    if rewrite:
        entry["speedup_median"] = _median(
            rewrite[i]["seconds"] / r["seconds"]
            for i, r in mode_rows.items()
            if "error" not in r and "error" not in rewrite.get(i, {"error": None})
        )
    if MODES[name]["mode"] in ("program", "forced") and values:
        entry["parse_rate"] = sum(r["parses"] for r in values) / len(values)
    if MODES[name]["mode"] in ("program", "forced") and not MODES[name].get("remote"):
        entry["one_call_per_splice"] = sum(r["one_call_per_splice"] for r in values)
        entry["constraint_share_median"] = _median(r["constraint_share"] for r in values)
    if drafted := sum(r["drafted_tokens"] for r in values):
        entry["accepted_share"] = sum(r["accepted_tokens"] for r in values) / drafted
    if doubted := sum(r.get("doubted_copies", 0) for r in values):
        entry["doubted_copies"] = doubted
    if fallbacks := sum(r.get("fallback") is not None for r in values):
        entry["fallbacks"] = fallbacks
    return entry


def _against_reference(name: str, mode_rows: dict[str, dict], reference: dict[str, dict]) -> dict:
    """A mode's tokens against its reference mode's: how many are the same, where the others part."""
    values = [r for r in mode_rows.values() if "error" not in r]
    gaps = [r["divergence"]["gap"] for r in values if r.get("divergence")]
    return {
        "reference": REFERENCES[name],
        "same_tokens": sum(
            r["tokens"] == reference[i].get("tokens") for i, r in mode_rows.items() if i in reference and r in values
        ),
        "divergence_gaps": sorted(gap for gap in gaps if gap is not None),
        "divergent_lengths": sum(gap is None for gap in gaps),  # one answer stops where the other goes on
    }


def _median(values) -> float | None:
    """The median, or None for no values (every edit of a mode raised)."""
    values = list(values)
    return statistics.median(values) if values else None


def _mean(values) -> float | None:
    values = list(values)
    return statistics.mean(values) if values else None


def kernel_curve(kernel: dict) -> Callable[[int], float]:
    """s(N): the measured kernel speedup, interpolated linearly in log N, flat beyond the measured spans."""
    points = sorted((row["span"], row["speedup"]) for row in kernel["rows"])

    def speedup(n: int) -> float:
        if n <= points[0][0]:
            return points[0][1]
        for (n0, s0), (n1, s1) in zip(points, points[1:], strict=False):
            if n <= n1:
                t = (math.log(n) - math.log(n0)) / (math.log(n1) - math.log(n0))
                return s0 + t * (s1 - s0)
        return points[-1][1]

    return speedup


def bound_table(result: dict, kernel: dict) -> dict[str, dict]:
    """Per set: the median bound from ``forced`` rows and s(N), beside the measured forced speedup."""
    s = kernel_curve(kernel)
    table = {}
    for set_name, data in result["sets"].items():
        forced = [r for r in data["rows"] if r["mode"] == "forced" and "error" not in r]
        if not forced:
            continue
        bounds = [r["output_tokens"] / (r["chosen_tokens"] + sum(n / s(n) for n in r["splice_spans"])) for r in forced]
        free = [r["output_tokens"] / max(r["chosen_tokens"], 1) for r in forced]
        table[set_name] = {
            "items": len(forced),
            "bound_median": statistics.median(bounds),
            "free_copy_bound_median": statistics.median(free),
            "measured_median": data["summary"]["forced"].get("speedup_median"),
            "copied_share": sum(sum(r["splice_spans"]) for r in forced)
            / max(sum(r["output_tokens"] for r in forced), 1),
        }
    return table


def _notes(summary: dict[str, dict]) -> list[str]:
    """The lines under a set's table: remote against local, token identity, drafts accepted."""
    out: list[str] = []
    for name, e in summary.items():
        if "same_text" in e:
            program = f"the same program on {e['same_program']}/{e['items']} items, " if "same_program" in e else ""
            if e["latency_ratio_median"] is not None:
                out.append(
                    f"\n{name} against {e['reference']}: {program}the same text on {e['same_text']}/{e['items']}, "
                    f"{e['requests_per_edit']:.1f} requests per edit, latency {e['latency_ratio_median']:.2f}x (median)."
                )
        if "same_tokens" in e:
            gaps = e.get("divergence_gaps", [])
            parted = (
                f"; where they part, the two tokens' one-step logits are at most {max(gaps):.2f} apart" if gaps else ""
            )
            out.append(
                f"\n{name} wrote the same tokens as {e['reference']} on {e['same_tokens']}/{e['items']} items{parted}."
            )
    if errors := {name: e["errors"] for name, e in summary.items() if e.get("errors")}:
        out.append(
            "\nNo result (the edit raised; the rows say why): "
            + ", ".join(f"{name} {count} of {summary[name]['items']}" for name, count in errors.items())
            + "."
        )
    if doubts := {name: e["doubted_copies"] for name, e in summary.items() if "doubted_copies" in e}:
        out.append(
            "\nCopies the model's check stopped early: "
            + ", ".join(f"{name} {count} in {summary[name]['items']} edits" for name, count in doubts.items())
            + "."
        )
    if fallbacks := {name: e["fallbacks"] for name, e in summary.items() if "fallbacks" in e}:
        out.append(
            "\nGave way to a rewrite (the program cut short, its text parsing worse than the original, losing code or changing nothing): "
            + ", ".join(f"{name} {count} of {summary[name]['items']} edits" for name, count in fallbacks.items())
            + "."
        )
    if drafting := {name: e["accepted_share"] for name, e in summary.items() if "accepted_share" in e}:
        out.append(
            "\nDrafted tokens accepted: " + ", ".join(f"{name} {share:.0%}" for name, share in drafting.items()) + "."
        )
    return out


RESULT_HEADERS = ("mode", "exact", "tests passed", "no result", "tests could not run", "refused: loses code",
                  "lines lost", "parse rate", "median latency", "speedup over rewrite (median)", "decode steps",
                  "output tokens", "spliced tokens")  # fmt: skip
BOUND_HEADERS = ("set", "items", "copied share of output", "bound (kernel s(N))", "bound if copies were free",
                 "measured forced")  # fmt: skip


def _result_row(name: str, e: dict) -> list:
    """One mode's row of a set's results table."""
    return [
        name, f"{e['exact']}/{e['items']}", f"{e['passed']}/{e['tested']}" if e["tested"] else "-",
        e.get("errors", 0), e.get("untestable", 0), e.get("refused", 0), e.get("lines_lost", 0),
        f"{e['parse_rate']:.0%}" if "parse_rate" in e else "-",
        f"{e['median_seconds']:.2f} s" if e["median_seconds"] is not None else "-",
        f"{e['speedup_median']:.2f}x" if e.get("speedup_median") is not None else "-",
        e["decode_steps"], e["output_tokens"], e["spliced_tokens"],
    ]  # fmt: skip


def _bound_row(name: str, b: dict) -> list:
    """One set's row of the bound table."""
    measured = f"{b['measured_median']:.2f}x" if b["measured_median"] else "-"
    return [name, b["items"], f"{b['copied_share']:.0%}", f"{b['bound_median']:.2f}x",
            f"{b['free_copy_bound_median']:.2f}x", measured]  # fmt: skip


def format_tables(result: dict) -> str:
    """Markdown: one results table per set, then the bound table (``result["bounds"]``, if any)."""
    out = []
    for set_name, data in result["sets"].items():
        rows = [_result_row(name, e) for name, e in data["summary"].items()]
        out += [f"**{set_name}**", "", markdown_table(RESULT_HEADERS, rows, right=range(1, len(RESULT_HEADERS)))]
        out += _notes(data["summary"])
        out.append("")
    if bounds := result.get("bounds"):
        out.append(markdown_table(BOUND_HEADERS, [_bound_row(n, b) for n, b in bounds.items()], right=range(1, 6)))
    return "\n".join(out)


def write_outputs(result: dict, out_dir: Path, stem: str = "edits", *, texts: bool = True) -> tuple[Path, Path, Path]:
    """``<stem>.json.gz`` (every row, without ``texts`` its figures only: a run's JSON is large and
    compresses 20-fold), ``<stem>.md`` and ``<stem>.png`` (exact and tests passed, speedup over rewrite)."""
    kept = result
    if not texts:
        sets = {
            name: entry | {"rows": list(map(figures_only, entry["rows"]))} for name, entry in result["sets"].items()
        }
        kept = result | {"sets": sets}
    json_path = write_json(kept, out_dir, stem, indent=None, compress=True)
    md_path, png_path = Path(out_dir) / f"{stem}.md", Path(out_dir) / f"{stem}.png"
    md_path.write_text(format_tables(result) + "\n")
    figure, quality, speed = side_by_side()
    sets = list(result["sets"])
    modes = result["modes"]
    width = 0.8 / max(len(modes), 1)
    for k, name in enumerate(modes):
        xs = [i + k * width for i in range(len(sets))]
        summaries = [result["sets"][s]["summary"].get(name, {}) for s in sets]
        passed = [100 * e["passed"] / e["tested"] if e.get("tested") else 0 for e in summaries]
        exact = [100 * e["exact"] / e["items"] if e else 0 for e in summaries]
        bars = quality.bar(xs, passed, width, label=name)
        quality.scatter(xs, exact, marker="_", s=200, color="black", zorder=3)
        speed.bar(
            xs, [e.get("speedup_median") or 0 for e in summaries], width, color=bars[0].get_facecolor(), label=name
        )
    for axis, title in ((quality, "tests passed, % (black tick: exact match)"), (speed, "median speedup over rewrite")):
        axis.set_xticks([i + width * (len(modes) - 1) / 2 for i in range(len(sets))], sets, fontsize=8)
        axis.set_title(title, fontsize=10)
    speed.axhline(1.0, color="grey", linewidth=0.8)
    speed.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(png_path, dpi=110)
    return json_path, md_path, png_path
