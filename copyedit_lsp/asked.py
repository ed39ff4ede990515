"""What an instruction asks a result to show: the new definitions it names.

"Add a function called `miles_to_kilometers` ...", "Create a class named Stack", "Write a helper
`parse_date(text)`": a result that does not define that name is not the edit asked for, whatever
else it changed (the 0.5B's program once rewrote the file's one function instead of adding one).
A name counts where the instruction marks it as one: quoted, after "called" or "named", written
like code (``snake_case``, ``camelCase``) or followed by ``(``; never a name the code defines already.

Plain logic on the instruction and two texts (tree-sitter for the definitions).
"""

from __future__ import annotations

import re

from .scope import LANGUAGES, definitions

_ASKED = re.compile(
    r"\b(?:add|create|write|implement|define|introduce)(?:s|ed|ing)?\b[^.;\n]{0,40}?"
    r"\b(?:function|method|class|helper|procedure)\s+(?P<said>called\s+|named\s+)?"
    r"(?P<quote>[`'\"]?)(?P<name>[A-Za-z_$][\w$]*)(?P<after>[`'\"(]?)",
    re.IGNORECASE,
)
_CODE_LIKE = re.compile(r"_|[a-z][A-Z]")


def asked_definitions(instruction: str) -> list[str]:
    """The names of the definitions ``instruction`` asks to add, in order."""
    names = []
    for match in _ASKED.finditer(instruction):
        name = match.group("name")
        marked = match.group("said") or match.group("quote") or match.group("after") == "(" or _CODE_LIKE.search(name)
        if marked and name not in names:
            names.append(name)
    return names


def missing_definitions(before: str, after: str, language_id: str | None, instruction: str) -> tuple[str, ...]:
    """The definitions ``instruction`` asks to add that ``after`` (an edit of ``before``) does not
    define; none where the language has no definitions to tell (an unknown one)."""
    asked = asked_definitions(instruction)
    if not asked or language_id not in LANGUAGES:
        return ()
    present = {d.name for d in definitions(before, language_id)} | {d.name for d in definitions(after, language_id)}
    return tuple(name for name in asked if name not in present)
