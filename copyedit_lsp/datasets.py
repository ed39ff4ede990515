"""Edit datasets: JSONL files of before/after pairs, with presets for the shared data."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class EditItem:
    """One real edit: the text before and after, the instruction, and how to test the result."""

    id: str
    before: str
    after: str
    instruction: str
    language: str = "python"
    test: str = ""  # code appended to the edited text to check it ("" = no test)


@dataclass(frozen=True)
class Preset:
    """How to read one JSONL file of the shared data into :class:`EditItem` s."""

    path: str  # relative to the data directory
    language: str
    fields: dict[str, str]  # EditItem field -> JSONL field (or a template of JSONL fields)


def _humanevalfix(language: str, file: str, head: str) -> Preset:
    """HumanEvalFix: ``head`` is ``declaration`` (the Tests view) or ``prompt`` (the Docs view)."""
    return Preset(
        f"humanevalfix/{file}.jsonl",
        language,
        {"id": "task_id", "before": f"{head}+buggy_solution", "after": f"{head}+canonical_solution", "test": "test"},
    )


# "before"/"after" values may be "a+b": the concatenation of two JSONL fields.
PRESETS: dict[str, Preset] = {
    "humanevalfix-python": _humanevalfix("python", "python", "declaration"),
    "humanevalfix-python-docs": _humanevalfix("python", "python", "prompt"),
    "humanevalfix-js": _humanevalfix("javascript", "js", "declaration"),
    "humanevalfix-js-docs": _humanevalfix("javascript", "js", "prompt"),
    "quixbugs": Preset(
        "quixbugs/python.jsonl",
        "python",
        {"id": "name", "before": "buggy_program", "after": "solution", "test": "tests"},
    ),
}


def data_dir() -> Path:
    """The shared data: ``$COPYEDIT_DATA_DIR``, else ``../shared/data`` beside the project or the working directory."""
    if env := os.environ.get("COPYEDIT_DATA_DIR"):
        return Path(env)
    for root in (Path(__file__).resolve().parents[1], Path.cwd()):
        candidate = root.parent / "shared" / "data"
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError("no shared data: set COPYEDIT_DATA_DIR to the folder with humanevalfix/ and quixbugs/")


def _field(record: dict, spec: str) -> str:
    return "".join(str(record[name]) for name in spec.split("+"))


def _instruction(record: dict, preset_name: str) -> str:
    """The edit instruction of a preset's item (the stored HumanEvalFix field is for another task)."""
    if preset_name.startswith("humanevalfix"):
        return f"Fix bugs in {record['entry_point']}."
    return "Fix the bug in this program."


def load_items(
    source: str,
    *,
    before: str = "before",
    after: str = "after",
    instruction: str = "instruction",
    id_field: str = "id",
    language: str = "python",
    limit: int | None = None,
) -> list[EditItem]:
    """Read edits from a preset name or a JSONL path (field names from the keyword arguments)."""
    preset = PRESETS.get(source)
    path = data_dir() / preset.path if preset else Path(source)
    fields = preset.fields if preset else {"id": id_field, "before": before, "after": after, "test": ""}
    items = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle):
            if not line.strip():
                continue
            record = json.loads(line)
            items.append(
                EditItem(
                    id=str(record.get(fields["id"], number)),
                    before=_field(record, fields["before"]),
                    after=_field(record, fields["after"]),
                    instruction=_instruction(record, source) if preset else str(record.get(instruction, "")),
                    language=preset.language if preset else language,
                    test=_field(record, fields["test"]) if fields["test"] else "",
                )
            )
            if limit is not None and len(items) >= limit:
                break
    return items
