"""What the server offers at a position, without calling the model: instruction comments,
quick fixes for diagnostics, presets and a free instruction."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..core.resolver import split_lines

# "copyedit: <instruction>" in any common line-comment syntax (#, //, --, ;, /* */, <!-- -->).
_INSTRUCTION_COMMENT = re.compile(
    r"^\s*(?:#+|//+|--+|;+|/\*+|<!--|\*)\s*copyedit:\s*(?P<instruction>.*?)\s*(?:\*/|-->)?\s*$"
)

PRESETS: dict[str, list[tuple[str, str]]] = {
    "python": [
        ("Add docstring", "Add a concise docstring."),
        ("Add type hints", "Add type hints to every parameter and return value."),
    ],
    "javascript": [("Add JSDoc comment", "Add a JSDoc comment.")],
    "typescript": [("Add JSDoc comment", "Add a JSDoc comment.")],
}
PRESETS["javascriptreact"] = PRESETS["javascript"]
PRESETS["typescriptreact"] = PRESETS["typescript"]


@dataclass(frozen=True)
class Diagnostic:
    """The parts of an LSP diagnostic an action needs."""

    start_line: int
    end_line: int
    message: str
    code: str | None = None


@dataclass(frozen=True)
class EditAction:
    """One offered edit: a title and the ``copyedit.edit`` arguments it runs with."""

    title: str
    kind: str  # "quickfix" or "refactor.rewrite"
    instruction: str | None
    start_line: int  # 0-based lines the edit is about (inclusive)
    end_line: int
    comment_line: int | None = None  # an instruction comment the edit removes
    follows_selection: bool = False  # edit the client's selection (or the scope at its cursor)


def instruction_comment(line: str) -> str | None:
    """The instruction of a ``copyedit: ...`` comment line, else None."""
    match = _INSTRUCTION_COMMENT.match(line)
    return match.group("instruction") if match and match.group("instruction") else None


def list_actions(
    text: str, language_id: str | None, start_line: int, end_line: int, diagnostics: list[Diagnostic]
) -> list[EditAction]:
    """The edit actions for the 0-based lines ``start_line``..``end_line`` (inclusive) of ``text``."""
    actions = [
        EditAction(
            f"Fix with copyedit: {d.message}",
            "quickfix",
            f"Fix this problem: {d.message}" + (f" ({d.code})" if d.code else ""),
            d.start_line,
            d.end_line,
        )
        for d in diagnostics
    ]
    lines = split_lines(text)
    for number in range(start_line, min(end_line, len(lines) - 1) + 1):
        instruction = instruction_comment(lines[number])
        if instruction:
            target = min(number + 1, len(lines) - 1)  # the code the comment stands above
            actions.append(
                EditAction(f"copyedit: {instruction}", "refactor.rewrite", instruction, target, target, number)
            )
    presets = [*PRESETS.get(language_id or "", []), ("Edit with instruction...", None)]
    actions += [
        EditAction(title, "refactor.rewrite", instruction, start_line, end_line, follows_selection=True)
        for title, instruction in presets
    ]
    return actions
