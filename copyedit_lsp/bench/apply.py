"""``copyedit bench apply``: changes built from the edit sets' gold edits (:mod:`.changes`) in
every form, merged into the file, scored against the gold, item by item, the modes interleaved.

Modes (:data:`MODES`): ``merge``, the deterministic merge (:mod:`~copyedit_lsp.core.merge`), the
baseline; ``structure``, the apply without a model (blocks and hunks by their anchors, snippets by
the code's structure, :mod:`~copyedit_lsp.core.structure`; checked as every apply is, the rest refused);
``pipeline``, the apply as a user gets it (:func:`~copyedit_lsp.decode.fast_apply.apply_change`: what
structure or the anchors place, the model choosing where structure leaves a choice, else the
model's apply program); ``program``, the model's apply program (drafted from the merge, refused
where a part is not placed or code is lost; the merge never answers for it); ``forced``, the oracle apply program in forced mode (what a perfect selector
costs); ``rewrite``, the base model writing the merged file out given the change (as FastApply
does); ``lookup``, that rewrite with prompt lookup over the file and the change (the local
analogue of Predicted Outputs); ``remote-program``, ``remote-forced`` and ``remote-rewrite``, those
modes on a completions server (:class:`~copyedit_lsp.decode.remote.RemoteDecoder`), each beside its local
mode: the same program and text, change by change; ``MODE@MODEL`` (``program@qwen2.5-coder-1.5b``),
a local mode on another model with its shipped selectors, so two models are timed interleaved.
Rewrite and lookup are scored as they come, unguarded. A
refusal counts as a miss, never as lost code.  Every model mode starts from an empty KV cache
(as an apply in the server does: no prefix of its prompt is kept warm), so none is timed on the
prompt the mode before it evaluated.
"""

from __future__ import annotations

import hashlib
import random
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm import tqdm

from ..common.datasets import EditItem
from ..common.reports import markdown_table, side_by_side, write_json
from ..core.change import FORMS, Change, ChangeError, change_lines, read_change
from ..core.merge import merge
from ..core.resolver import oracle_apply_program
from ..decode.edit import EditOptions, EditResult
from ..decode.fast_apply import answers_alone, apply_change
from .changes import SLICES, build_change, score
from .checks import run_tests

if TYPE_CHECKING:
    from ..decode.edit import Editor

LOCAL_MODES = ("program", "pipeline", "forced", "rewrite", "lookup")
REMOTE_APPLY_MODES = ("remote-program", "remote-forced", "remote-rewrite")
MODES = ("merge", "structure", *LOCAL_MODES, *REMOTE_APPLY_MODES)


def runner_of(mode: str) -> tuple[str | None, str]:
    """Who runs ``mode`` and the mode it runs: ``("local", "program")``, ``("remote", "program")``
    for ``remote-program``, ``("qwen2.5-coder-1.5b", "program")`` for ``program@qwen2.5-coder-1.5b``;
    None for the merge and structure (no model)."""
    if "@" in mode:
        local, model = mode.split("@", 1)
        return model, local
    if mode in REMOTE_APPLY_MODES:
        return "remote", mode.removeprefix("remote-")
    return (None if mode in ("merge", "structure") else "local"), mode


def apply_benchmark(
    sets: dict[str, list[EditItem]],
    *,
    forms: Sequence[str] = FORMS,
    modes: Sequence[str] = ("merge",),
    editors: Mapping[str, Editor] | None = None,
    fallback: bool = True,
    seed: int = 0,
    progress: bool = True,
) -> dict:
    """Every item of ``sets`` as a change of each form (drawn by ``seed`` and the item), merged by
    each mode in turn, run by ``editors`` (:func:`runner_of`: ``local``, ``remote`` or a model's
    name; without ``fallback``, program mode without an apply selector is the base model's
    program); rows and a summary per set."""
    unknown = set(forms) - set(FORMS) | {mode for mode in modes if mode.split("@")[0] not in MODES}
    unknown |= {mode for mode in modes if "@" in mode and mode.split("@")[0] not in LOCAL_MODES}
    if unknown:
        raise ValueError(
            f"unknown forms or modes {sorted(unknown)}; choose from {list(FORMS)} and {list(MODES)} "
            f"({', '.join(LOCAL_MODES)} also as MODE@MODEL)"
        )
    editors = editors or {}
    for mode in modes:
        runner = runner_of(mode)[0]
        if runner is not None and runner not in editors:
            what = {"local": "a local model", "remote": "a remote server"}.get(runner, f"the model {runner}")
            raise ValueError(f"the mode {mode} needs {what}")
    result: dict = {"modes": list(modes), "forms": list(forms), "seed": seed, "fallback": fallback, "sets": {}}
    total = sum(len(items) for items in sets.values()) * len(forms) * len(modes)
    with tqdm(total=total, desc="bench apply", unit=" changes", file=sys.stderr, disable=not progress) as bar:
        for set_name, items in sets.items():
            rows = []
            for item in items:
                for form in forms:
                    for mode in modes:
                        rows.append({"set": set_name} | _measure(item, form, mode, editors, fallback, seed))
                        bar.update()
            result["sets"][set_name] = {"rows": rows, "summary": summarize(rows, modes)}
    return result


def merged_by(
    item: EditItem, change: Change, mode: str, editors: Mapping[str, Editor], fallback: bool
) -> tuple[str | None, tuple[str, ...], dict]:
    """What ``mode`` makes of ``change``: the text offered (None: refused), the parts it did not
    place, and the figures (what placed it; the model's)."""
    runner, mode = runner_of(mode)
    if mode == "structure":
        try:
            applied = apply_change(None, item.before, change, EditOptions(language=item.language), shortcut=True)
        except ChangeError as error:
            return None, (str(error),), {}
        return (applied.result.text if applied.complete else None), applied.unplaced, {"by": applied.result.stats.mode}
    if runner is None:
        merged = merge(item.before, change)
        offered = merged.text if merged.program is not None and not merged.unplaced else None
        return offered, merged.unplaced, {}
    editor = editors[runner]
    if hasattr(editor, "forget"):  # the local decoder's KV cache (a server keeps its own)
        editor.forget()  # every mode cold: none reuses the prompt the mode before it evaluated
    model_mode = "program" if mode in ("forced", "pipeline") else mode
    options = EditOptions(mode=model_mode, language=item.language, fallback=fallback)
    if mode in ("program", "pipeline"):
        try:
            applied = apply_change(editor, item.before, change, options, shortcut=mode == "pipeline")
        except ChangeError as error:
            return None, (str(error),), {}
        result = applied.result
        shortcut = {"shortcut": answers_alone(change, applied.merged)}  # where the merge would have answered
        return (result.text if applied.complete else None), applied.unplaced, _figures(result) | shortcut
    if mode == "forced":
        program = oracle_apply_program(item.before, item.after, change_lines(change))
        options = replace(options, mode="forced", program=program)
    result = editor.apply(item.before, change, options)
    return (result.text if result.cut is None else None), (), _figures(result)


def _figures(result: EditResult) -> dict:
    return {
        "program": result.program.to_text() if result.program is not None else None,
        "text_sha256": hashlib.sha256(result.text.encode()).hexdigest(),  # the program's text, offered or not
        "cut": result.cut,
        "loss": result.loss.to_dict() if result.loss is not None else None,
        "chosen_tokens": result.stats.chosen_tokens,
        "spliced_tokens": result.stats.spliced_tokens,
        "eval_calls": result.stats.eval_calls,
        "requests": result.stats.requests,
        "fallback": result.stats.fallback,
        "by": result.stats.mode,  # what placed it: structure, merge, or the model's mode
        "candidates": result.stats.candidates,  # placements the model chose between (0: no choice)
        "margin": result.stats.margin,
    }


def timed_merge(
    item: EditItem, change: Change, mode: str, editors: Mapping[str, Editor], fallback: bool
) -> tuple[str | None, tuple[str, ...], dict, float]:
    """:func:`merged_by` and the seconds it took; a mode that raises gives nothing applied and the
    error among the figures (one change that breaks a mode is a row, the run goes on)."""
    started = time.perf_counter()
    try:
        applied, unplaced, figures = merged_by(item, change, mode, editors, fallback)
    except Exception as error:
        applied, unplaced, figures = None, (), {"error": f"{type(error).__name__}: {error}"}
    return applied, unplaced, figures, time.perf_counter() - started


def _measure(item: EditItem, form: str, mode: str, editors: Mapping[str, Editor], fallback: bool, seed: int) -> dict:
    """One item's change of ``form``, merged by ``mode``, scored and tested."""
    built = build_change(item.before, item.after, form, item.language, random.Random(f"{seed}/{item.id}/{form}"))
    change = read_change(built.text, form)
    applied, unplaced, figures, seconds = timed_merge(item, change, mode, editors, fallback)
    scored = score(item.before, item.after, change, applied)
    verdict = run_tests(item, applied) if applied is not None else None
    return {
        "id": item.id,
        "form": form,
        "mode": mode,
        "context": built.context,
        "hard": list(built.hard),
        "applied": applied is not None,
        "unplaced": list(unplaced),
        "exact": scored.exact,
        "passed": verdict.outcome.passed if verdict is not None else False,
        "lines_lost": scored.lines_lost,
        "change_dropped": scored.change_dropped,
        "invented": scored.invented,
        "seconds": seconds,
    } | figures


def summarize(rows: list[dict], modes: Sequence[str] = MODES) -> dict[str, dict]:
    """Per form and mode: changes, applied, exact, tests passed, lines lost, change lines dropped,
    lines invented, median seconds, the median of rewrite's time over the mode's (each item's own
    ratio; where rewrite ran), and exact per hard slice."""
    summary: dict[str, dict] = {}
    for form in dict.fromkeys(row["form"] for row in rows):
        rewrite = {row["id"]: row["seconds"] for row in rows if row["form"] == form and row["mode"] == "rewrite"}
        for mode in modes:
            mine = [row for row in rows if row["form"] == form and row["mode"] == mode]
            if not mine:
                continue
            summary[f"{form}/{mode}"] = {
                "changes": len(mine),
                "applied": sum(row["applied"] for row in mine),
                "exact": sum(row["exact"] for row in mine),
                "passed": sum(bool(row["passed"]) for row in mine),
                "lines_lost": sum(row["lines_lost"] for row in mine),
                "change_dropped": sum(row["change_dropped"] for row in mine),
                "invented": sum(row["invented"] for row in mine),
                "shortcut": sum(row.get("shortcut", False) for row in mine),
                "median_seconds": statistics.median(row["seconds"] for row in mine),
                "speed_over_rewrite": statistics.median(rewrite[row["id"]] / row["seconds"] for row in mine)
                if rewrite and all(row["id"] in rewrite for row in mine)
                else None,
                "hard": {
                    kind: [sum(row["exact"] for row in hard), len(hard)]
                    for kind in SLICES
                    if (hard := [row for row in mine if kind in row["hard"]])
                },
            }
            if mode in REMOTE_APPLY_MODES:
                summary[f"{form}/{mode}"] |= _against_local(mine, rows, mode.removeprefix("remote-"))
    return summary


def _against_local(mine: list[dict], rows: list[dict], local: str) -> dict:
    """A remote mode's rows beside its ``local`` mode's (the same set, item and form): the same
    program, the same text, and the remote requests per change."""
    theirs = {(row["set"], row["id"], row["form"]): row for row in rows if row["mode"] == local}
    pairs = [(row, theirs[key]) for row in mine if (key := (row["set"], row["id"], row["form"])) in theirs]
    same = [(a.get("program") == b.get("program"), a.get("text_sha256") == b.get("text_sha256")) for a, b in pairs]
    return {
        "against_local": {
            "mode": local,
            "pairs": len(pairs),
            "same_program": sum(program for program, _ in same),
            "same_text": sum(text for _, text in same),
        },
        "requests_per_change": statistics.mean(row.get("requests") or 0 for row in mine),
    }


def format_tables(result: dict) -> str:
    """One Markdown table per set: a row per form and mode; the hard slices' exact beside it."""
    parts = []
    for set_name, data in result["sets"].items():
        rows = []
        for key, entry in data["summary"].items():
            n = entry["changes"]
            hard = ", ".join(f"{kind} {exact}/{count}" for kind, (exact, count) in entry["hard"].items()) or "-"
            speed = f"{entry['speed_over_rewrite']:.2f}x" if entry.get("speed_over_rewrite") else "-"
            shortcut = f"{entry['shortcut']}/{n}" if runner_of(key.split("/", 1)[1])[1] == "program" else "-"
            rows.append(
                [key, f"{entry['applied']}/{n}", f"{entry['exact']}/{n}", f"{entry['passed']}/{n}", entry["lines_lost"],
                 entry["change_dropped"], entry["invented"], f"{1000 * entry['median_seconds']:.1f} ms", speed,
                 shortcut, hard]
            )  # fmt: skip
        headers = ["form/mode", "applied", "exact", "tests passed", "lines lost", "change lines dropped",
                   "lines invented", "median time", "speed over rewrite", "the merge would answer",
                   "exact on the hard slices"]  # fmt: skip
        against = [
            f"{key} against {other['mode']}: the same program on {other['same_program']}/{other['pairs']}, "
            f"the same text on {other['same_text']}/{other['pairs']}, "
            f"{entry['requests_per_change']:.1f} requests per change."
            for key, entry in data["summary"].items()
            if (other := entry.get("against_local"))
        ]
        table = markdown_table(headers, rows, right=range(1, 10))
        parts.append("\n\n".join([f"**{set_name}**", table, *against]))
    return "\n\n".join(parts)


def write_outputs(result: dict, out_dir: Path, stem: str = "apply") -> tuple[Path, Path, Path]:
    """``<stem>.json.gz`` (every row), ``<stem>.md`` (the tables) and ``<stem>.png`` (exact per
    form and mode, and the median speed over rewrite where rewrite ran), the sets pooled."""
    json_path = write_json(result, out_dir, stem, indent=None, compress=True)
    md_path, png_path = Path(out_dir) / f"{stem}.md", Path(out_dir) / f"{stem}.png"
    md_path.write_text(format_tables(result) + "\n", encoding="utf-8")
    rows = [row for data in result["sets"].values() for row in data["rows"]]
    pooled = summarize(rows, result["modes"])
    figure, quality, speed = side_by_side()
    forms, modes = result["forms"], result["modes"]
    width = 0.8 / max(len(modes), 1)
    for k, mode in enumerate(modes):
        xs = [i + k * width for i in range(len(forms))]
        entries = [pooled.get(f"{form}/{mode}", {}) for form in forms]
        bars = quality.bar(xs, [100 * e["exact"] / e["changes"] if e else 0 for e in entries], width, label=mode)
        speeds = [e.get("speed_over_rewrite") or 0 for e in entries]
        speed.bar(xs, speeds, width, color=bars[0].get_facecolor(), label=mode)
    for axis, title in ((quality, "exact, % of changes (a refusal is a miss)"), (speed, "median speed over rewrite")):
        axis.set_xticks([i + width * (len(modes) - 1) / 2 for i in range(len(forms))], forms, fontsize=8)
        axis.set_title(title, fontsize=10)
    speed.axhline(1.0, color="grey", linewidth=0.8)
    quality.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(png_path, dpi=110)
    return json_path, md_path, png_path
