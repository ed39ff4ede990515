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
MODES = ("program", "rewrite", "forced")


@dataclass(frozen=True)
class Figure:
    what: str  # the set as the table names it
    run: str  # docs/benchmarks/<run>/
    set: str  # the set's key in the run


FIGURES = (
    Figure("HumanEvalFix Python", "hef-python-0.5b", "humanevalfix-python"),
    Figure("HumanEvalFix JavaScript", "hef-js-0.5b", "humanevalfix-js"),
    Figure("whole files, Python, 40", "files-0.5b", "humanevalfix-python-files"),
    Figure("whole files, JavaScript, 40", "files-0.5b", "humanevalfix-js-files"),
    Figure("HumanEvalFix Python, first 40", "hef-python-1.5b", "humanevalfix-python"),
    Figure("CanItEdit, report split (84)", "canitedit-report-1.5b", "../shared/data/canitedit/test.jsonl"),
)


def figures_table(docs: Path) -> str:
    """The Markdown table of :data:`FIGURES`: tests passed per mode, of the items whose tests ran (the better of program and
    rewrite in bold), program mode's median speedup over rewrite, and a link to the run (its
    commit), the links' definitions below the table."""
    rows = ["| set | model | selector | program | rewrite | forced | speed | run |"]
    rows.append("|---|---|---|---:|---:|---:|---:|---|")
    links = []
    for number, figure in enumerate(FIGURES, 1):
        manifest, summary = _run(docs, figure)
        passed = {mode: summary[mode]["passed"] for mode in MODES if mode in summary}
        best = max(passed.get("program", -1), passed.get("rewrite", -1))
        cells = []
        for mode in MODES:
            if mode not in summary:
                cells.append("")
                continue
            count = f"**{passed[mode]}**" if mode != "forced" and passed[mode] == best else str(passed[mode])
            cells.append(f"{count}/{summary[mode]['tested']}")
        speed = summary.get("program", {}).get("speedup_median")
        selector = (manifest.get("selector") or {}).get("name", "none").removeprefix("qwen2.5-coder-")
        model = manifest["model"]["name"].removeprefix("qwen2.5-coder-")
        run = f"[{manifest['commit'][:7]}][f{number}]"
        rows.append(
            f"| {figure.what} | {model} | {selector} | {' | '.join(cells)} | {f'{speed:.2f}x' if speed else ''} | {run} |"
        )
        links.append(f"[f{number}]: docs/benchmarks/{figure.run}/{figure.run}.md")
    return "\n".join([*rows, "", *links])


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
