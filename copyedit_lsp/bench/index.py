"""The index of ``docs/``: every run's file a page does not link is listed under its run, with the
manifest it was measured with (``NAME.manifest.json``) and the pages that cite it; a file that is
no run's (a log) is listed only where no page links it.

``docs/README.md`` is a hand-written list of pages above :data:`MARKER`; ``copyedit bench index``
writes everything below it.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

MARKER = "<!-- Everything below is written by `copyedit bench index`: do not edit by hand. -->"
NOT_INDEXED = (".rows.jsonl",)  # rows as they are measured: committed only for a run under way, to resume it
KINDS = (".manifest.json", ".json.gz", ".json", ".md", ".png")  # a run's files: NAME and one of these


def docs_files(docs: Path) -> list[str]:
    """Every file under ``docs`` (but its index and uncommitted rows), as paths relative to it."""
    return sorted(
        path.relative_to(docs).as_posix()
        for path in docs.rglob("*")
        if path.is_file() and path.name != "README.md" and not path.name.endswith(NOT_INDEXED)
    )


def index_text(docs: Path) -> str:
    """The whole ``docs/README.md``: its hand-written head and the generated list of runs."""
    head = (docs / "README.md").read_text(encoding="utf-8").split(MARKER)[0].rstrip() + "\n\n"
    linked = set(re.findall(r"\]\(([^)#\s]+)", head))
    runs: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for name in docs_files(docs):
        if name not in linked:
            kind = next((kind for kind in KINDS if name.endswith(kind)), "")
            runs[name.removesuffix(kind)].append((kind.lstrip(".") or name, name))
    citing = _pages(docs, linked)
    lines = [MARKER, "", "## Benchmark runs and other files", ""]
    lines += ["| run | files | measured | cited by |", "|---|---|---|---|"]
    for stem, names in sorted(runs.items()):
        if names == [(stem, stem)] and any(_links(text, page, stem) for page, text in citing):
            continue  # not a run's file (a log, say): the page that links it says what it is
        files = ", ".join(f"[{kind}]({name})" for kind, name in names)
        cited = ", ".join(f"[{Path(page).stem}]({page})" for page, text in citing if _cites(text, stem))
        lines.append(f"| {stem} | {files} | {_measured(docs, stem)} | {cited or '-'} |")
    return head + "\n".join(lines) + "\n"


def write_index(docs: Path) -> Path:
    """Rewrite ``docs/README.md`` below its marker; returns its path."""
    path = docs / "README.md"
    path.write_text(index_text(docs), encoding="utf-8")
    return path


def _pages(docs: Path, linked: set[str]) -> list[tuple[str, str]]:
    """The pages the index head links (Markdown) and the repository's README, with their text."""
    names = sorted(linked | {"../README.md"})
    return [(name, (docs / name).read_text(encoding="utf-8")) for name in names if (docs / name).is_file()]


def _links(text: str, page: str, name: str) -> bool:
    """Whether the page ``page`` (its ``text``) links the file ``name`` of ``docs/``."""
    folder = Path(page).parent
    return any((folder / target.split("#")[0]).as_posix() == name for target in re.findall(r"\]\(([^)\s]+)\)", text))


def _cites(text: str, stem: str) -> bool:
    """Whether a page names the run: one of its files, or the ``--name`` that wrote them."""
    name, kinds = re.escape(stem), "|".join(re.escape(kind) for kind in KINDS)
    return re.search(rf"(?<![\w-]){name}({kinds})\b|--name {name}(?![\w-])", text) is not None


def _measured(docs: Path, stem: str) -> str:
    """The commit and date of the run's manifest, or a dash where it has none."""
    path = docs / f"{stem}.manifest.json"
    if not path.is_file():
        return "-"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    return f"{(manifest.get('commit') or '?')[:7]}, {manifest.get('date', '?')[:10]}"
