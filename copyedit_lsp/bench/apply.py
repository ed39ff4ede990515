"""``copyedit bench apply``: changes built from the shared data's gold edits (:mod:`.changes`) in
every form, merged into the file, scored against the gold, item by item.

Modes: ``merge``, the deterministic merge (:mod:`~copyedit_lsp.merge`), the baseline. A change
with a part that cannot be placed is not applied (the benchmark scores what a user gets without
``--partial``): a refusal counts as a miss, never as lost code.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from tqdm import tqdm

from ..change import FORMS, read_change
from ..datasets import EditItem
from ..merge import merge
from ..reports import markdown_table, write_json
from .changes import SLICES, build_change, score
from .checks import run_tests

MODES = ("merge",)


def apply_benchmark(
    sets: dict[str, list[EditItem]], *, forms: Sequence[str] = FORMS, seed: int = 0, progress: bool = True
) -> dict:
    """Every item of ``sets`` as a change of each form (drawn by ``seed`` and the item), merged by
    each mode; rows and a summary per set."""
    unknown = set(forms) - set(FORMS)
    if unknown:
        raise ValueError(f"unknown change forms {sorted(unknown)}; choose from {list(FORMS)}")
    result: dict = {"modes": list(MODES), "forms": list(forms), "seed": seed, "sets": {}}
    total = sum(len(items) for items in sets.values()) * len(forms) * len(MODES)
    with tqdm(total=total, desc="bench apply", unit=" changes", file=sys.stderr, disable=not progress) as bar:
        for set_name, items in sets.items():
            rows = []
            for item in items:
                for form in forms:
                    rows.append({"set": set_name} | _measure(item, form, seed))
                    bar.update()
            result["sets"][set_name] = {"rows": rows, "summary": summarize(rows)}
    return result


def _measure(item: EditItem, form: str, seed: int) -> dict:
    """One item's change of ``form``, merged, scored and tested."""
    built = build_change(item.before, item.after, form, item.language, random.Random(f"{seed}/{item.id}/{form}"))
    change = read_change(built.text, form)
    started = time.perf_counter()
    merged = merge(item.before, change)
    seconds = time.perf_counter() - started
    applied = merged.text if merged.program is not None and not merged.unplaced else None
    scored = score(item.before, item.after, change, applied)
    verdict = run_tests(item, applied) if applied is not None else None
    return {
        "id": item.id,
        "form": form,
        "mode": "merge",
        "context": built.context,
        "hard": list(built.hard),
        "applied": applied is not None,
        "unplaced": list(merged.unplaced),
        "exact": scored.exact,
        "passed": verdict.outcome.passed if verdict is not None else False,
        "lines_lost": scored.lines_lost,
        "change_dropped": scored.change_dropped,
        "invented": scored.invented,
        "seconds": seconds,
    }


def summarize(rows: list[dict]) -> dict[str, dict]:
    """Per form and mode: changes, applied, exact, tests passed, lines lost, change lines dropped,
    lines invented, median seconds, and exact per hard slice."""
    summary: dict[str, dict] = {}
    for form in dict.fromkeys(row["form"] for row in rows):
        for mode in MODES:
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
                "median_seconds": statistics.median(row["seconds"] for row in mine),
                "hard": {
                    kind: [sum(row["exact"] for row in hard), len(hard)]
                    for kind in SLICES
                    if (hard := [row for row in mine if kind in row["hard"]])
                },
            }
    return summary


def format_tables(result: dict) -> str:
    """One Markdown table per set: a row per form and mode; the hard slices' exact beside it."""
    parts = []
    for set_name, data in result["sets"].items():
        rows = []
        for key, entry in data["summary"].items():
            n = entry["changes"]
            hard = ", ".join(f"{kind} {exact}/{count}" for kind, (exact, count) in entry["hard"].items()) or "-"
            rows.append(
                [key, f"{entry['applied']}/{n}", f"{entry['exact']}/{n}", f"{entry['passed']}/{n}", entry["lines_lost"],
                 entry["change_dropped"], entry["invented"], f"{1000 * entry['median_seconds']:.1f} ms", hard]
            )  # fmt: skip
        headers = ["form/mode", "applied", "exact", "tests passed", "lines lost", "change lines dropped",
                   "lines invented", "median time", "exact on the hard slices"]  # fmt: skip
        parts.append(f"**{set_name}**\n\n" + markdown_table(headers, rows, right=range(1, 8)))
    return "\n\n".join(parts)


def write_outputs(result: dict, out_dir: Path, stem: str = "apply") -> tuple[Path, Path]:
    """``<stem>.json.gz`` (every row) and ``<stem>.md`` (the tables)."""
    json_path = write_json(result, out_dir, stem, indent=None, compress=True)
    md_path = Path(out_dir) / f"{stem}.md"
    md_path.write_text(format_tables(result) + "\n", encoding="utf-8")
    return json_path, md_path
