"""Whether an edit fixed a Python function the way the editor tests ask the shipped selector to.

The tests used to compare the edited text with one particular fix (the buggy line replaced); a
selector may write another right one (``sum(values) / len(values)`` for a loop), so they check
what the instruction asks for instead: the function now computes what it must, its docstring is
kept, it is defined once, and every line outside it is unchanged.
"""

from __future__ import annotations

import ast
from typing import Any


def _function(tree: ast.Module, name: str) -> list[ast.FunctionDef]:
    return [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == name]


def fix_problems(before: str, after: str, name: str, args: tuple, expected: Any) -> list[str]:
    """What keeps ``after`` from being the fix of function ``name`` of ``before`` (empty: it is one):
    ``name(*args)`` must return ``expected``, its docstring stay, and the lines around it not change."""
    try:
        tree = ast.parse(after)
    except SyntaxError as error:
        return [f"the edited text does not parse: {error}"]
    found = _function(tree, name)
    if len(found) != 1:
        return [f"{name} is defined {len(found)} times"]
    (old,) = _function(ast.parse(before), name)
    (new,) = found
    problems = []
    if ast.get_docstring(new) != ast.get_docstring(old):
        problems.append(f"the docstring changed: {ast.get_docstring(new)!r}")
    old_lines, new_lines = before.splitlines(True), after.splitlines(True)
    start, below = old.lineno - 1, len(old_lines) - old.end_lineno
    if new.lineno - 1 != start or new_lines[:start] != old_lines[:start]:
        problems.append("lines above the function changed")
    if len(new_lines) - new.end_lineno != below or new_lines[len(new_lines) - below :] != old_lines[old.end_lineno :]:
        problems.append("lines below the function changed")
    namespace: dict[str, Any] = {}
    exec(compile(after, "<edited>", "exec"), namespace)
    if (got := namespace[name](*args)) != expected:
        problems.append(f"{name}{args} returns {got!r}, not {expected!r}")
    return problems
