"""Whole-module training edits: the edits developers ask of a file, over 40 to 150 lines of it.

A *window* is a run of a real file's top-level statements (its imports, constants, classes and
functions) between :data:`WINDOW_LINES` lines long.  Every edit keeps most of the window, so the
right program copies almost everything and skipping is never the cheap answer:

* ``module-bug``: a synthetic bug in one function, told by its symptom (what the function's
  docstring says it must do, or that its results are wrong), never by the line;
* ``module-rename``: a top-level function or class renamed where it is defined and everywhere the
  window uses it (an edit in two or more places);
* ``module-docstrings``, ``module-types``: the docstrings or type hints of two or more functions;
* ``module-constant``: a literal that several places repeat, named as a constant at the top;
* ``module-add``: a Python function or method the window lacks, asked for by its signature and
  what its docstring says it does (a new definition among copied ones).
"""

from __future__ import annotations

import random
import re
import textwrap
from collections.abc import Callable

from ..core.resolver import split_lines
from ..core.scope import Definition, definitions, parse, syntax_errors
from .bugs import inject_bug
from .data import NEW_NAMES, PHRASES, Example, Region, intent, strip_docstring, strip_types

WINDOW_LINES = (40, 150)
MODULE_KINDS = ("module-bug", "module-rename", "module-docstrings", "module-types", "module-constant", "module-add")
ADDED_LINES = (3, 25)  # the length of a definition module-add asks for

Maker = Callable[[str, str, random.Random], tuple[str, str] | None]  # window, language -> before, instruction
SYMPTOM_PHRASES = (
    "{name} gives wrong results for some inputs; fix it.",
    "The results of {name} are wrong. Find the cause and fix it.",
    "Tests of {name} fail: it does not do what it should. Fix the code.",
    "Something is off in {name}: callers get the wrong answer.",
)
INTENT_SYMPTOMS = (
    "{name} should {intent}, but it does not. Fix it.",
    "{name} is meant to {intent}; it gets it wrong. Fix the bug.",
)


def window(text: str, language: str, rng: random.Random, lines: tuple[int, int] = WINDOW_LINES) -> str | None:
    """A run of ``text``'s top-level statements ``lines`` long with two or more top-level
    definitions (from the file's start half the time), or None."""
    parsed = parse(text, language)
    root = parsed.tree.root_node
    if root.has_error or any(len(line) > 200 or "\t" in line or "\r" in line for line in parsed.lines):
        return None
    spans = [parsed.lines_of(node) for node in root.children]
    if not spans:
        return None
    first = 0 if rng.random() < 0.5 else rng.randrange(len(spans))
    last = first
    while last + 1 < len(spans) and spans[last + 1][1] - spans[first][0] < lines[1]:
        last += 1
    chosen = "".join(parsed.lines[spans[first][0] : spans[last][1] + 1])
    count = chosen.count("\n")
    if not lines[0] <= count <= lines[1] or not chosen.endswith("\n"):
        return None
    return chosen if sum(not d.outer for d in definitions(chosen, language)) >= 2 else None


def _functions(text: str, language: str) -> list[Definition]:
    return [d for d in definitions(text, language) if not d.outer and d.kind == "function"]


def _replaced(text: str, definition: Definition, new: str) -> str:
    lines = split_lines(text)
    return "".join(lines[: definition.start_line] + [new] + lines[definition.end_line :])


def _text_of(text: str, definition: Definition) -> str:
    return "".join(split_lines(text)[definition.start_line : definition.end_line])


def module_bug(text: str, language: str, rng: random.Random) -> tuple[str, str] | None:
    functions = _functions(text, language)
    rng.shuffle(functions)
    for function in functions:
        bugged = inject_bug(_text_of(text, function), language, rng)
        if bugged is None:
            continue
        summary = intent(_text_of(text, function), function.name)
        phrases = INTENT_SYMPTOMS if summary else SYMPTOM_PHRASES
        instruction = rng.choice(phrases).format(name=function.name, intent=summary)
        return _replaced(text, function, bugged[0]), instruction
    return None


def module_rename(text: str, language: str, rng: random.Random) -> tuple[str, str] | None:
    """The window with a top-level definition renamed everywhere (the after-text; the window is before)."""
    used = [
        d
        for d in definitions(text, language)
        if not d.outer and len(re.findall(rf"(?<![\w.'\"]){re.escape(d.name)}\b", text)) >= 2
    ]
    if not used:
        return None
    old = rng.choice(used).name
    taken = set(re.findall(r"[\w$]+", text))
    stem = rng.choice([n for n in NEW_NAMES if n not in taken] or ["renamed"])
    new = f"{stem.capitalize()}{old}" if old[:1].isupper() else f"{stem}_{old.lstrip('_')}"
    renamed = re.sub(rf"(?<![\w.'\"]){re.escape(old)}\b", new, text)
    if renamed == text or syntax_errors(renamed, language) != 0 or new in taken:
        return None
    phrases = (*PHRASES["rename-function"], "Rename {old} to {new} everywhere in this file.")
    return renamed, rng.choice(phrases).format(old=old, new=new)


def _stripped(text: str, language: str, strip: Callable[[Region], str | None]) -> tuple[str, list[str]]:
    """The window with ``strip`` applied to each top-level function it changes, and their names."""
    names = []
    for function in reversed(_functions(text, language)):
        region = Region(_text_of(text, function), function.name, language, "")
        stripped = strip(region)
        if stripped is not None and stripped != region.text:
            text = _replaced(text, function, stripped)
            names.append(function.name)
    return text, names[::-1]


STRIPPED_PHRASES = {
    "module-docstrings": (
        "Add docstrings to {said}.",
        "Document {said} with docstrings.",
        "Write a docstring for each of {said}.",
    ),
    "module-types": ("Add type hints to {said}.", "Annotate {said} with type hints.", "Type the parameters of {said}."),
}


def module_stripped(kind: str, strip: Callable[[Region], str | None]) -> Maker:
    """The maker of ``kind``: the window without what ``strip`` takes from two or more of its
    Python functions, and an instruction that names them."""

    def make(text: str, language: str, rng: random.Random) -> tuple[str, str] | None:
        if language != "python":
            return None
        before, names = _stripped(text, language, strip)
        if len(names) < 2:
            return None
        said = ", ".join(names[:-1]) + " and " + names[-1]
        return before, rng.choice(STRIPPED_PHRASES[kind]).format(said=said)

    return make


_CONSTANT = re.compile(
    r"^(?:(?:export )?const )?([A-Z][A-Z0-9_]{2,}) = (\d+(?:\.\d+)?|'[^'\\]{1,30}'|\"[^\"\\]{1,30}\");?\n$"
)


def module_constant(text: str, language: str, rng: random.Random) -> tuple[str, str] | None:
    """The window with a top-level constant written out where it is used and its line gone."""
    lines = split_lines(text)
    found = [(n, m) for n, line in enumerate(lines) if (m := _CONSTANT.match(line))]
    rng.shuffle(found)
    for number, match in found:
        name, literal = match.group(1), match.group(2)
        uses = re.compile(rf"(?<![\w.'\"]){name}\b")
        rest = lines[:number] + lines[number + 1 :]
        if sum(len(uses.findall(line)) for line in rest) < 2:
            continue
        before = "".join(uses.sub(lambda _match, text=literal: text, line) for line in rest)
        if syntax_errors(before, language) != 0:
            continue
        phrases = (
            "Put the repeated {literal} in a constant {name} and use it.",
            "Name the literal {literal}: a constant {name} at the top, used everywhere it appears.",
        )
        return before, rng.choice(phrases).format(literal=literal, name=name)
    return None


ADD_PHRASES = {
    "function": (
        "Add a function `{signature}` that should {intent}.",
        "Write a new function `{signature}`: it should {intent}.",
    ),
    "method": (
        "Add a method `{signature}` to `{owner}` that should {intent}.",
        "`{owner}` needs a method `{signature}`; it should {intent}.",
    ),
}


def _signature(definition_text: str, method: bool) -> str | None:
    """``name(parameters)`` of a Python definition's header (``self``/``cls`` left out), as
    tree-sitter reads it, or None."""
    root = parse(textwrap.dedent(definition_text), "python").tree.root_node
    node = root.children[0] if root.children else None
    if node is not None and node.type == "decorated_definition":
        node = node.child_by_field_name("definition")
    if node is None or node.type != "function_definition":
        return None
    found = node.child_by_field_name("parameters")
    named = found.named_children if found else []
    parameters = [" ".join(p.text.decode().split()) for p in named if p.type != "comment" and p.text]
    if sum(map(len, parameters)) > 80:
        return None
    if method and parameters[:1] in (["self"], ["cls"]):
        parameters = parameters[1:]
    name = node.child_by_field_name("name")
    return f"{name.text.decode()}({', '.join(parameters)})" if name and name.text else None


def module_add(text: str, language: str, rng: random.Random) -> tuple[str, str] | None:
    """The window without one Python function or method that says what it does (its docstring's
    summary) and that nothing else in the window names, and an instruction that asks for it."""
    if language != "python":
        return None
    candidates = [d for d in definitions(text, language) if d.kind in ("function", "method") and len(d.outer) <= 1]
    rng.shuffle(candidates)
    lines = split_lines(text)
    for definition in candidates:
        body = _text_of(text, definition)
        summary = intent(body, definition.name)
        signature = _signature(body, definition.kind == "method")
        length = definition.end_line - definition.start_line
        if summary is None or signature is None or not ADDED_LINES[0] <= length <= ADDED_LINES[1]:
            continue
        end = definition.end_line
        while end < len(lines) and not lines[end].strip():
            end += 1  # the blank lines after it go with it
        before = "".join(lines[: definition.start_line] + lines[end:])
        if re.search(rf"\b{re.escape(definition.name)}\b", before) or syntax_errors(before, language) != 0:
            continue
        if sum(not d.outer for d in definitions(before, language)) < 2:
            continue
        owner = definition.outer[0] if definition.outer else ""
        phrase = rng.choice(ADD_PHRASES["method" if definition.outer else "function"])
        return before, phrase.format(signature=signature, intent=summary, owner=owner)
    return None


# kind -> the window's (before, instruction), the window itself the after-text; a rename the other way
MAKERS: dict[str, Maker] = {
    "module-bug": module_bug,
    "module-docstrings": module_stripped("module-docstrings", strip_docstring),
    "module-types": module_stripped("module-types", strip_types),
    "module-constant": module_constant,
    "module-add": module_add,
}


def module_example(kind: str, text: str, language: str, origin: str, rng: random.Random) -> Example | None:
    """One whole-module edit of ``kind`` on a window of the file ``text``, or None."""
    chosen = window(text, language, rng)
    if chosen is None:
        return None
    if kind == "module-rename":
        made = module_rename(chosen, language, rng)
        if made is None:
            return None
        return Example(kind, language, made[1], chosen, made[0], origin)
    made = MAKERS[kind](chosen, language, rng)
    if made is None or made[0] == chosen:
        return None
    return Example(kind, language, made[1], made[0], chosen, origin)
