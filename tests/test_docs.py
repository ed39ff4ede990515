"""The README is a front door and every file in docs/ is indexed or linked by a page, its links whole (no model)."""

import re
import shutil
from pathlib import Path

import pytest

from copyedit_lsp.bench.figures import BEGIN, FIGURES, figures_table, readme_text
from copyedit_lsp.bench.index import MARKER, docs_files, index_text

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def test_the_readme_is_a_front_door_of_at_most_300_lines_of_100_columns():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 300
    assert [number for number, line in enumerate(lines, 1) if len(line) > 100] == []


def test_the_docs_index_is_what_copyedit_bench_index_writes_and_names_every_file():
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    assert MARKER in index
    assert index == index_text(DOCS), "run `copyedit bench index`"
    pages = "".join(page.read_text(encoding="utf-8") for page in DOCS.glob("*.md"))
    assert [name for name in docs_files(DOCS) if f"({name})" not in index + pages] == []


def test_the_readmes_figures_are_what_copyedit_bench_index_writes_from_the_runs(tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert BEGIN in readme and readme == readme_text(ROOT), "run `copyedit bench index`"
    # no figure without its run's manifest
    run = FIGURES[0].run
    shutil.copytree(DOCS / "benchmarks" / run, tmp_path / "benchmarks" / run)
    (tmp_path / "benchmarks" / run / f"{run}.manifest.json").unlink()
    with pytest.raises(ValueError, match="manifest"):
        figures_table(tmp_path)


def test_every_relative_link_of_the_readme_and_the_docs_leads_to_a_file():
    pages = [ROOT / "README.md", *DOCS.glob("*.md"), *(ROOT / "selectors").glob("*.md")]
    broken = []
    for page in pages:
        text = page.read_text(encoding="utf-8")
        targets = re.findall(r"\]\(([^)\s]+)\)", text) + re.findall(r"^\[[^\]]+\]: (\S+)$", text, re.M)
        for target in targets:
            path = target.split("#")[0]
            if path and "://" not in path and not (page.parent / path).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []
