"""Edit datasets: JSONL files of before/after pairs, with presets for the edit sets of `data/`."""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, replace
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
    context: str = ""  # code the edited text needs around it when tested ({{Code}} marks where; else before it)


@dataclass(frozen=True)
class Preset:
    """How to read one JSONL file of the edit sets into :class:`EditItem` s."""

    path: str  # relative to the data directory
    language: str
    fields: dict[str, str]  # EditItem field -> JSONL field ("a+b" concatenates two fields)


def _humanevalfix(language: str, file: str, head: str) -> Preset:
    """HumanEvalFix: ``head`` is ``declaration`` (the Tests view) or ``prompt`` (the Docs view)."""
    return Preset(
        f"humanevalfix/{file}.jsonl",
        language,
        {"id": "task_id", "before": f"{head}+buggy_solution", "after": f"{head}+canonical_solution", "test": "test"},
    )


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


# Whole-file sets built from a preset: each item's bug in a file of FILE_FUNCTIONS items' code.
WHOLE_FILES = {"humanevalfix-python-files": "humanevalfix-python", "humanevalfix-js-files": "humanevalfix-js"}
FILE_FUNCTIONS = 6


def whole_files(items: list[EditItem], functions: int = FILE_FUNCTIONS) -> list[EditItem]:
    """One whole-file edit per item: its buggy code among the fixed code of the next
    ``functions - 1`` items (wrapping around), at position ``index % functions``; fixing it is the edit."""
    files = []
    for index, item in enumerate(items):
        others = [items[(index + k) % len(items)].after.strip("\n") for k in range(1, functions)]
        at = index % functions
        before, after = (_among(others, at, code) for code in (item.before, item.after))
        files.append(replace(item, id=f"{item.id}-file", before=before, after=after))
    return files


def _among(others: list[str], at: int, code: str) -> str:
    """A file of ``others`` with ``code`` put at position ``at``, two blank lines apart."""
    return "\n\n\n".join([*others[:at], code.strip("\n"), *others[at:]]) + "\n"


def data_dir() -> Path:
    """The edit sets: ``$COPYEDIT_DATA_DIR``, else the repository's ``data/`` (evaluation only:
    ``data/README.md``)."""
    if env := os.environ.get("COPYEDIT_DATA_DIR"):
        return Path(env)
    return Path(__file__).resolve().parents[2] / "data"


# The EditItem fields a JSONL file's names can be given for.
FIELDS = ("id", "before", "after", "instruction", "test", "context")

# Field names of JSONL edit files by their layout (``--format``): EditItem field -> JSONL field.
# An EditEval ``context`` may be a template with ``{{Code}}`` where the edited text goes.
FORMATS: dict[str, dict[str, str]] = {
    "plain": {
        "id": "id",
        "before": "before",
        "after": "after",
        "instruction": "instruction",
        "test": "test",
        "context": "context",
    },
    "canitedit": {
        "id": "id",
        "before": "before",
        "after": "after",
        "instruction": "instruction_descriptive",
        "test": "tests",
        "context": "context",
    },
    "editeval": {
        "id": "id",
        "before": "input",
        "after": "output",
        "instruction": "instruction",
        "test": "test",
        "context": "context",
    },
}
# CanItEdit states each edit twice: ``instruction_descriptive`` (canitedit) and ``instruction_lazy``.
FORMATS["canitedit-lazy"] = FORMATS["canitedit"] | {"instruction": "instruction_lazy"}
# CanItEdit, each edit in its two instruction styles (evaluation only: its license forbids training).
PRESETS |= {name: Preset("canitedit/test.jsonl", "python", FORMATS[name]) for name in ("canitedit", "canitedit-lazy")}


def _field(record: dict, spec: str, *, required: bool = False) -> str:
    names = spec.split("+")
    missing = [name for name in names if name not in record]
    if missing and required:
        raise KeyError(f"the record has no field {missing[0]!r} (fields: {', '.join(record)})")
    return "".join(str(record.get(name) or "") for name in names)


def _instruction(record: dict, source: str, names: dict[str, str]) -> str:
    """The edit instruction of an item: its field, else a preset's own (the stored HumanEvalFix
    field is for another task)."""
    if "instruction" in names:
        return _field(record, names["instruction"])
    if source.startswith("humanevalfix"):
        return f"Fix bugs in {record['entry_point']}."
    return "Fix the bug in this program."


# A set's development split: every DEV_EVERY-th item from the first (the rest is the report split).
# Prompt designs are chosen on the development split, measured on both (SPLITS).
DEV_EVERY = 5
SPLITS = ("dev", "report")


def in_split(index: int, split: str | None) -> bool:
    """Whether the set's ``index``-th item (0-based, in file order) is in ``split`` (None: every item)."""
    return split is None or (index % DEV_EVERY == 0) == (split == "dev")


def load_items(
    source: str,
    *,
    format: str = "plain",
    fields: dict[str, str] | None = None,
    language: str = "python",
    limit: int | None = None,
    seed: int | None = None,
    split: str | None = None,
) -> list[EditItem]:
    """Read edits from a preset name or a JSONL path laid out as ``format``, with ``fields`` overriding names.

    ``split`` keeps one of :data:`SPLITS` (in file order, before anything else); ``limit`` keeps
    the first items, or with ``seed`` the first of the items shuffled by that seed.
    A :data:`WHOLE_FILES` name gives that preset's items as whole-file edits."""
    if source in WHOLE_FILES:
        items = [item for i, item in enumerate(whole_files(load_items(WHOLE_FILES[source]))) if in_split(i, split)]
        if seed is not None:
            random.Random(seed).shuffle(items)
        return items[:limit]
    preset = PRESETS.get(source)
    path = data_dir() / preset.path if preset else Path(source)
    names = preset.fields if preset else FORMATS[format] | (fields or {})
    items = []
    with path.open(encoding="utf-8") as handle:
        numbered = [(number, json.loads(line)) for number, line in enumerate(handle, 1) if line.strip()]
    for index, (number, record) in enumerate(numbered):
        if not in_split(index, split):
            continue
        try:
            items.append(
                EditItem(
                    id=_field(record, names["id"]) or str(number),
                    before=_field(record, names["before"], required=True),
                    after=_field(record, names["after"], required=True),
                    instruction=_instruction(record, source, names),
                    language=preset.language if preset else language,
                    test=_field(record, names["test"]) if names.get("test") else "",
                    context=_field(record, names["context"]) if names.get("context") else "",
                )
            )
        except KeyError as error:
            raise ValueError(f"{path}, line {number}: {error.args[0]}") from None
        if seed is None and limit is not None and len(items) >= limit:
            break
    if seed is not None:
        random.Random(seed).shuffle(items)
    return items[:limit]
