"""The outputs of benchmarks and training runs: one JSON writer and one Markdown table writer."""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Sequence
from pathlib import Path


def write_json(result: dict, out_dir: Path, name: str, *, indent: int | None = 2, compress: bool = False) -> Path:
    """``result`` as ``out_dir/name.json`` (the folder made if missing), or gzipped as
    ``name.json.gz`` with ``compress`` (the same bytes for the same result); returns the path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    text = json.dumps(result, indent=indent) + "\n"
    if not compress:
        path = out_dir / f"{name}.json"
        path.write_text(text, encoding="utf-8")
        return path
    path = out_dir / f"{name}.json.gz"
    path.write_bytes(gzip.compress(text.encode(), mtime=0))
    return path


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]], *, right: Sequence[int] = ()) -> str:
    """A Markdown table; the columns at the indexes in ``right`` are right-aligned (numbers)."""
    rule = ["---:" if i in right else "---" for i in range(len(headers))]
    lines = [headers, rule, *([str(cell) for cell in row] for row in rows)]
    return "\n".join(
        "| " + " | ".join(line) + " |" if line is not rule else "|" + "|".join(rule) + "|" for line in lines
    )


def side_by_side():
    """A figure of two plots side by side (matplotlib, no display): the figure and its two axes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 4.2))
    FigureCanvasAgg(figure)
    left, right = figure.subplots(1, 2)
    return figure, left, right
