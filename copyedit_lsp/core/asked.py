"""What an instruction asks a result to be, where the code can tell: the new definitions it names,
and documentation alone.

* "Add a function called `miles_to_kilometers` ...", "Create a class named Stack", "Write a helper
  `parse_date(text)`": a result that does not define that name is not the edit asked for, whatever
  else it changed (the 0.5B's program once rewrote the file's one function instead of adding one).
  A name counts where the instruction marks it as one: quoted, after "called" or "named", written
  like code (``snake_case``, ``camelCase``) or followed by ``(``; never a name the code defines already.
* "Add a JSDoc comment to mergeDeep ...", "Document the parameters": an instruction that asks for
  docstrings or comments and names no other change is not done by a result whose code, comments
  and docstrings aside, differs (the 0.5B's program once turned a line of code into a comment).

Plain logic on the instruction and two texts (tree-sitter for the definitions and the comments).
"""

from __future__ import annotations

import re

from tree_sitter import Node

from .scope import LANGUAGES, definitions, parse

_ASKED = re.compile(
    r"\b(?:add|create|write|implement|define|introduce)(?:s|ed|ing)?\b[^.;\n]{0,40}?"
    r"\b(?:function|method|class|helper|procedure)\s+(?P<said>called\s+|named\s+)?"
    r"(?P<quote>[`'\"]?)(?P<name>[A-Za-z_$][\w$]*)(?P<after>[`'\"(]?)",
    re.IGNORECASE,
)
_CODE_LIKE = re.compile(r"_|[a-z][A-Z]")
_DOCUMENTATION = re.compile(r"\b(?:docstrings?|jsdoc|comments?|document(?:s|ed|ing)?)\b", re.IGNORECASE)
# Verbs of a change of code: an instruction that says one asks for more than documentation.
_CHANGE = re.compile(
    r"\b(?:fix|bug|chang|renam|replac|refactor|implement|remov|delet|rewrit|convert|optimi[sz]|handl|rais|"
    r"throw|support|mov|extract|inlin|type hints?|annotat|validat|log|sort|return (?!value)|make|use)",
    re.IGNORECASE,
)


def asked_definitions(instruction: str) -> list[str]:
    """The names of the definitions ``instruction`` asks to add, in order."""
    names = []
    for match in _ASKED.finditer(instruction):
        name = match.group("name")
        marked = match.group("said") or match.group("quote") or match.group("after") == "(" or _CODE_LIKE.search(name)
        if marked and name not in names:
            names.append(name)
    return names


def mismatch(before: str, after: str, language_id: str | None, instruction: str) -> str | None:
    """Why ``after`` (an edit of ``before``) is not what ``instruction`` asks for, where the code can
    tell (:func:`missing_definitions`, :func:`documentation_only`), else None."""
    missing = missing_definitions(before, after, language_id, instruction)
    if missing:
        return f"it does not define {', '.join(missing)}, which the instruction asks to add"
    if documentation_only(instruction) and code_changed(before, after, language_id):
        return "it changes code, where the instruction asks for documentation alone"
    return None


def documentation_only(instruction: str) -> bool:
    """Whether ``instruction`` asks for docstrings or comments and names no other change."""
    return bool(_DOCUMENTATION.search(instruction)) and not _CHANGE.search(instruction)


def code_changed(before: str, after: str, language_id: str | None) -> bool:
    """Whether the code of ``after`` differs from ``before``'s, comments and docstrings aside (False
    for a language tree-sitter does not know here)."""
    if language_id not in LANGUAGES:
        return False
    return _code(before, language_id) != _code(after, language_id)


def _code(text: str, language_id: str) -> list[bytes]:
    """The text's tokens (tree-sitter's leaves), without comments and statements that are a string alone."""
    tokens: list[bytes] = []
    stack: list[Node] = [parse(text, language_id).tree.root_node]
    while stack:
        node = stack.pop()
        if node.type == "comment" or _docstring(node):
            continue
        if node.child_count == 0:
            tokens.append(node.text or b"")
        stack.extend(reversed(node.children))
    return tokens


def _docstring(node: Node) -> bool:
    """Whether ``node`` is a statement that is a string and nothing else (a Python docstring)."""
    return (
        node.type == "expression_statement" and node.named_child_count == 1 and node.named_children[0].type == "string"
    )


def missing_definitions(before: str, after: str, language_id: str | None, instruction: str) -> tuple[str, ...]:
    """The definitions ``instruction`` asks to add that ``after`` (an edit of ``before``) does not
    define; none where the language has no definitions to tell (an unknown one)."""
    asked = asked_definitions(instruction)
    if not asked or language_id not in LANGUAGES:
        return ()
    present = {d.name for d in definitions(before, language_id)} | {d.name for d in definitions(after, language_id)}
    return tuple(name for name in asked if name not in present)
