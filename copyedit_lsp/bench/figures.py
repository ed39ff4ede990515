"""The README's table of current figures, written from benchmark runs (``copyedit bench index``
writes it with the docs index; tests/test_docs.py checks that it is current).

A figure is one edit set of a run that lives in ``docs/benchmarks/<run>/``: its ``<run>.json.gz``
(the summary of its rows) and ``<run>.manifest.json`` (commit, date, model and selector by
sha256, the exact command). A run without a manifest cannot back a figure.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass
from pathlib import Path

BEGIN = "<!-- The figures table is written by `copyedit bench index`: do not edit it by hand. -->"
END = "<!-- End of the figures table. -->"
# The columns: the model asked plainly (bench mode ``chat``, the baseline), then the product's modes.
BASELINE = "chat"
MODES = ("program", "rewrite", "lookup")


@dataclass(frozen=True)
class Figure:
    what: str  # the set as the table names it
    run: str  # docs/benchmarks/<run>/
    set: str  # the set's key in the run


FIGURES = (
    Figure("HumanEvalFix Python, first 40", "hef-python-1.5b", "humanevalfix-python"),
    Figure("whole files, Python, 40", "files-1.5b", "humanevalfix-python-files"),
    Figure("CanItEdit, all 105", "canitedit-1.5b-all", "canitedit"),
    Figure("CanItEdit, report split", "canitedit-report-1.5b", "../shared/data/canitedit/test.jsonl"),
    Figure("HumanEvalFix Python", "hef-python-0.5b", "humanevalfix-python"),
    Figure("HumanEvalFix JavaScript", "hef-js-0.5b", "humanevalfix-js"),
    Figure("whole files, Python, 40", "files-0.5b", "humanevalfix-python-files"),
    Figure("whole files, JavaScript, 40", "files-0.5b", "humanevalfix-js-files"),
)


def figures_table(docs: Path) -> str:
    """The Markdown table of :data:`FIGURES`: tests passed, of the items whose tests ran, by the
    model asked plainly and by each of :data:`MODES` (in bold the best of these, where one is),
    program mode's median speedup over rewrite, and a link to the run (its commit, its selector),
    the links' definitions below the table."""
    rows = ["| set | model | asked plainly | program | rewrite | lookup | speed | run |"]
    rows.append("|---|---|---:|---:|---:|---:|---:|---|")
    links = []
    for number, figure in enumerate(FIGURES, 1):
        manifest, summary = _run(docs, figure)
        passed = [summary[mode]["passed"] for mode in MODES if mode in summary]
        top = max(passed, default=None)
        best = top if passed.count(top) == 1 else None
        cells = [_passed(summary, BASELINE, None)] + [_passed(summary, mode, best) for mode in MODES]
        speed = summary.get("program", {}).get("speedup_median")
        model = manifest["model"]["name"].removeprefix("qwen2.5-coder-")
        run = f"[{manifest['commit'][:7]}][f{number}]"
        rows.append(f"| {figure.what} | {model} | {' | '.join(cells)} | {f'{speed:.2f}x' if speed else ''} | {run} |")
        links.append(f"[f{number}]: docs/benchmarks/{figure.run}/{figure.run}.md")
    return "\n".join([*rows, "", *links])


def _passed(summary: dict, mode: str, best: int | None) -> str:
    """``mode``'s cell: tests passed of those that ran, in bold where it is ``best``; empty where not run."""
    if mode not in summary:
        return ""
    passed = summary[mode]["passed"]
    return f"{f'**{passed}**' if passed == best else passed}/{summary[mode]['tested']}"


def readme_text(root: Path) -> str:
    """The README with its figures table as :func:`figures_table` writes it."""
    text = (root / "README.md").read_text(encoding="utf-8")
    table = f"{BEGIN}\n\n{figures_table(root / 'docs')}\n\n{END}"
    return re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: table, text, flags=re.S)


def _run(docs: Path, figure: Figure) -> tuple[dict, dict]:
    """The manifest of ``figure``'s run and the summary of its set (ValueError where either is missing)."""
    folder = docs / "benchmarks" / figure.run
    manifest_path, outputs = folder / f"{figure.run}.manifest.json", folder / f"{figure.run}.json.gz"
    if not manifest_path.is_file() or not outputs.is_file():
        raise ValueError(f"the figure {figure.what!r} needs {manifest_path} and {outputs}")
    with gzip.open(outputs, "rt", encoding="utf-8") as file:
        sets = json.load(file)["sets"]
    if figure.set not in sets:
        raise ValueError(f"the run {figure.run} has no set {figure.set!r} (it has {', '.join(sets)})")
    return json.loads(manifest_path.read_text(encoding="utf-8")), sets[figure.set]["summary"]
