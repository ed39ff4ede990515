"""The outputs of benchmarks and training runs: one JSON writer and one Markdown table writer."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path


def write_json(result: dict, out_dir: Path, name: str, *, indent: int | None = 2) -> Path:
    """``result`` as ``out_dir/name.json`` (the folder made if missing); returns the path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{name}.json"
    path.write_text(json.dumps(result, indent=indent) + "\n", encoding="utf-8")
    return path


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[object]], *, right: Sequence[int] = ()) -> str:
    """A Markdown table; the columns at the indexes in ``right`` are right-aligned (numbers)."""
    rule = ["---:" if i in right else "---" for i in range(len(headers))]
    lines = [headers, rule, *([str(cell) for cell in row] for row in rows)]
    return "\n".join(
        "| " + " | ".join(line) + " |" if line is not rule else "|" + "|".join(rule) + "|" for line in lines
    )
