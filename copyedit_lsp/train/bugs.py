"""Synthetic bugs for the training builder: one mutation of a line (an operator, a comparison, an
off-by-one, a wrong variable, swapped arguments, a deleted condition or line, a wrong return value)
that still parses; its reversal is the fix."""

from __future__ import annotations

import keyword
import random
import re
from collections.abc import Callable

from ..core.scope import syntax_errors

PY_KEYWORDS = set(keyword.kwlist) | {"self", "cls", "print", "len", "range", "str", "int", "list", "dict", "set"}
JS_KEYWORDS = {
    "var",
    "let",
    "const",
    "function",
    "return",
    "if",
    "else",
    "for",
    "while",
    "do",
    "new",
    "this",
    "typeof",
    "null",
    "undefined",
    "true",
    "false",
    "in",
    "of",
    "instanceof",
    "break",
    "continue",
    "switch",
    "case",
    "default",
    "throw",
    "try",
    "catch",
    "finally",
    "class",
    "extends",
    "super",
    "delete",
    "void",
    "yield",
    "async",
    "await",
    "static",
    "get",
    "set",
    "arguments",
    "exports",
    "module",
    "require",
    "console",
}


Mutation = Callable[[str, str, random.Random, set[str]], str | None]


def _swap(pairs: tuple[tuple[str, str], ...]) -> Mutation:
    def mutate(line: str, language: str, rng: random.Random, names: set[str]) -> str | None:
        found = [(a, b) for a, b in pairs if a in _code(line)] + [(b, a) for a, b in pairs if b in _code(line)]
        if not found:
            return None
        old, new = rng.choice(found)
        starts = [m.start() for m in re.finditer(re.escape(old), line)]
        at = rng.choice(starts)
        return line[:at] + new + line[at + len(old) :]

    return mutate


def _code(line: str) -> str:
    """The line without string literals or a trailing comment (so mutations stay in code)."""
    line = re.sub(r"(['\"]).*?\1", "", line)
    return re.split(r"#|//", line)[0]


def _constant(line: str, language: str, rng: random.Random, names: set[str]) -> str | None:
    if "'" in line or '"' in line or "`" in line:
        return None
    found = list(re.finditer(r"(?<![\w.])([0-3])(?![\w.])", _code(line)))
    if not found:
        return None
    match = rng.choice(found)
    value = int(match.group(1)) + rng.choice((-1, 1) if match.group(1) != "0" else (1,))
    return line[: match.start()] + str(value) + line[match.end() :]


def _off_by_one(line: str, language: str, rng: random.Random, names: set[str]) -> str | None:
    code = _code(line)
    options = [(m, f"{m.group(0)[:-1]} - 1)") for m in re.finditer(r"len\([\w.]+\)", code)]
    options += [(m, f"{m.group(0)[:-1]} + 1]") for m in re.finditer(r"\[[a-z_]\w*\]", code)]
    options += [(m, f"{m.group(0)[:-1]} - 1)") for m in re.finditer(r"range\([\w.]+\)", code)]
    if not options:
        return None
    match, new = rng.choice(options)
    return line[: match.start()] + new + line[match.end() :]


def _variable(line: str, language: str, rng: random.Random, names: set[str]) -> str | None:
    code = _code(line)
    found = [m for m in re.finditer(r"(?<![\w.])([a-z_]\w*)\b(?!\s*[(=])", code) if m.group(1) in names]
    others = sorted(names)
    if not found or len(others) < 2:
        return None
    match = rng.choice(found)
    new = rng.choice([n for n in others if n != match.group(1)])
    return line[: match.start()] + new + line[match.end() :]


def _swap_arguments(line: str, language: str, rng: random.Random, names: set[str]) -> str | None:
    found = list(re.finditer(r"(\w+\()([\w.]+), ([\w.]+)\)", _code(line)))
    found = [m for m in found if m.group(2) != m.group(3)]
    if not found:
        return None
    m = rng.choice(found)
    return line[: m.start()] + f"{m.group(1)}{m.group(3)}, {m.group(2)})" + line[m.end() :]


def _drop_condition(line: str, language: str, rng: random.Random, names: set[str]) -> str | None:
    if language == "python":
        m = re.match(r"(\s*(?:if|elif|while) )(.+?) (and|or) (.+):\s*$", line)
        if m:
            return f"{m.group(1)}{rng.choice((m.group(2), m.group(4)))}:\n"
        m = re.match(r"(\s*(?:if|elif|while) )not (.+):\s*$", line)
        return f"{m.group(1)}{m.group(2)}:\n" if m else None
    m = re.match(r"(\s*(?:if|while) \()(.+?) (&&|\|\|) (.+)(\) ?\{?)\s*$", line)
    if m:
        return f"{m.group(1)}{rng.choice((m.group(2), m.group(4)))}{m.group(5)}\n"
    m = re.match(r"(\s*(?:if|while) \()!(\w+)(\) ?\{?)\s*$", line)
    return f"{m.group(1)}{m.group(2)}{m.group(3)}\n" if m else None


def _wrong_return(line: str, language: str, rng: random.Random, names: set[str]) -> str | None:
    m = re.match(r"(\s*return )(.+?)(;?)\s*$", line)
    if not m or m.group(2) in ("None", "null", "undefined", "true", "false", "True", "False"):
        return None
    none = "None" if language == "python" else "null"
    value = m.group(2)
    options = [none, f"not {value}" if language == "python" else f"!{value}"]
    options += [n for n in sorted(names) if n != value][:3]
    return f"{m.group(1)}{rng.choice(options)}{m.group(3)}\n"


OPERATORS = (
    (" + ", " - "),
    (" < ", " <= "),
    (" > ", " >= "),
    (" * ", " + "),
    (" += ", " -= "),
    (" < ", " > "),
)
PY_OPERATORS = OPERATORS + (
    (" == ", " != "),
    (" and ", " or "),
    ("True", "False"),
    (" is ", " is not "),
    (" in ", " not in "),
)
JS_OPERATORS = OPERATORS + ((" === ", " !== "), (" == ", " != "), (" && ", " || "), ("true", "false"))

MUTATIONS: dict[str, Mutation] = {
    "operator": lambda line, language, rng, names: _swap(PY_OPERATORS if language == "python" else JS_OPERATORS)(
        line, language, rng, names
    ),
    "constant": _constant,
    "off-by-one": _off_by_one,
    "variable": _variable,
    "arguments": _swap_arguments,
    "condition": _drop_condition,
    "return": _wrong_return,
}


def local_names(text: str, language: str) -> set[str]:
    """Local-looking names used at least twice in ``text``."""
    words = re.findall(r"(?<![\w.])([a-z_][a-z0-9_]*)\b", _strip_strings(text))
    stop = PY_KEYWORDS if language == "python" else JS_KEYWORDS
    return {w for w in set(words) if words.count(w) >= 2 and w not in stop and len(w) > 1}


def _strip_strings(text: str) -> str:
    return "\n".join(_code(line) for line in text.splitlines())


def _body_lines(text: str) -> list[int]:
    """Indices of lines a bug may go in: code lines after the definition's first line."""
    lines = text.splitlines(True)
    return [
        i
        for i in range(1, len(lines))
        if lines[i].strip() and not lines[i].lstrip().startswith(("#", "//", "*", "/*", '"', "'"))
    ]


def inject_bug(text: str, language: str, rng: random.Random, avoid: set[int] = frozenset()) -> tuple[str, int] | None:
    """``text`` with one synthetic bug that still parses, and the line it is on; None if none took."""
    lines = text.splitlines(True)
    names = local_names(text, language)
    candidates = [i for i in _body_lines(text) if i not in avoid]
    kinds = list(MUTATIONS) + ["delete"]
    for _ in range(12):
        if not candidates:
            return None
        at = rng.choice(candidates)
        kind = rng.choice(kinds)
        if kind == "delete":
            line = lines[at].strip()
            if line.endswith((":", "{", "}", "(", ",", "[")) or line.startswith(
                ("def ", "class ", "function ", "}", ")")
            ):
                continue
            mutated = lines[:at] + lines[at + 1 :]
        else:
            new = MUTATIONS[kind](lines[at], language, rng, names)
            if new is None or new == lines[at]:
                continue
            mutated = lines[:at] + [new if new.endswith("\n") else new + "\n"] + lines[at + 1 :]
        result = "".join(mutated)
        if result != text and syntax_errors(result, language) == 0:
            return result, at
    return None
