"""Edit scopes, top-level chunks and the syntax guard, on inline Python, JS, TS and TSX samples."""

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tree_sitter import Parser

from copyedit_lsp.core import scope as scope_module
from copyedit_lsp.core.resolver import split_lines
from copyedit_lsp.core.scope import Scope, edit_scope, language_for, syntax_errors, top_level_chunks

PYTHON = """\
import os


# A helper.
def helper(x):
    y = x + 1

    return y


class Greeter:
    # The greeting.
    greeting = "hi"

    @staticmethod
    @cache
    def greet(name):
        def inner():
            return name
        return inner()

    async def wait(self):
        pass


x = helper(1)
"""

JAVASCRIPT = """\
/** Add one. */
function add(a) {
  return a + 1;
}

const twice = (f) => {
  return (x) => f(f(x));
};

export function exported() {
  return 1;
}

class Box {
  value = () => 1;

  get() {
    return this.value();
  }
}

var gen = function* () {
  yield 1;
};
"""

TYPESCRIPT = """\
interface Point {
  x: number;
}

export const norm = (p: Point): number => {
  return Math.abs(p.x);
};

export abstract class Shape {
  abstract area(): number;

  describe(): string {
    return `area ${this.area()}`;
  }
}
"""

TSX = """\
import React from "react";

export const App = ({ name }: { name: string }) => {
  return <div className="app">{name}</div>;
};

function Footer(): JSX.Element {
  return <footer />;
}
"""


def scope(text, language, line):
    return edit_scope(text, language, line, line)


@pytest.mark.parametrize(
    "language_id, path, expected",
    [
        ("python", None, "python"),
        ("typescriptreact", "x.js", "typescriptreact"),
        (None, "/a/b.pyi", "python"),
        ("plaintext", "file:///a/b.MJS", "javascript"),
        (None, "b.jsx", "javascriptreact"),
        (None, "b.ts", "typescript"),
        (None, "b.tsx", "typescriptreact"),
        ("rust", "main.rs", None),
        (None, None, None),
    ],
)
def test_language_for(language_id, path, expected):
    assert language_for(language_id, path) == expected


@pytest.mark.parametrize(
    "line, expected",
    [
        (5, Scope(4, 8, "function", "helper")),  # body
        (6, Scope(4, 8, "function", "helper")),  # blank line inside the body
        (4, Scope(4, 8, "function", "helper")),  # the def line, without the comment above
        (3, Scope(0, 26, "document", None)),  # the comment above a top-level def
        (9, Scope(0, 26, "document", None)),  # between top-level definitions
        (12, Scope(10, 23, "class", "Greeter")),  # a class attribute
        (13, Scope(10, 23, "class", "Greeter")),  # a blank line in the class
        (20, Scope(10, 23, "class", "Greeter")),  # between methods
        (14, Scope(14, 20, "method", "greet")),  # the first decorator line
        (15, Scope(14, 20, "method", "greet")),
        (19, Scope(14, 20, "method", "greet")),  # the method's body
        (18, Scope(17, 19, "function", "inner")),  # a function inside a method
        (22, Scope(21, 23, "method", "wait")),  # async
        (25, Scope(0, 26, "document", None)),
    ],
)
def test_python_scopes(line, expected):
    assert scope(PYTHON, "python", line) == expected


@pytest.mark.parametrize(
    "line, expected",
    [
        (0, Scope(0, 24, "document", None)),  # JSDoc is not part of the function
        (2, Scope(1, 4, "function", "add")),
        (6, Scope(5, 8, "function", "twice")),  # the whole const statement
        (7, Scope(5, 8, "function", "twice")),
        (10, Scope(9, 12, "function", "exported")),  # the whole export statement
        (14, Scope(14, 15, "method", "value")),  # an arrow function in a class field
        (17, Scope(16, 19, "method", "get")),
        (15, Scope(13, 20, "class", "Box")),
        (22, Scope(21, 24, "function", "gen")),
    ],
)
def test_javascript_scopes(line, expected):
    assert scope(JAVASCRIPT, "javascript", line) == expected


@pytest.mark.parametrize(
    "line, expected",
    [
        (1, Scope(0, 15, "document", None)),  # interfaces are not scopes
        (5, Scope(4, 7, "function", "norm")),
        (9, Scope(8, 15, "class", "Shape")),  # an abstract method signature
        (12, Scope(11, 14, "method", "describe")),
    ],
)
def test_typescript_scopes(line, expected):
    assert scope(TYPESCRIPT, "typescript", line) == expected


@pytest.mark.parametrize(
    "line, expected",
    [
        (3, Scope(2, 5, "function", "App")),
        (7, Scope(6, 9, "function", "Footer")),
        (5, Scope(0, 9, "document", None)),
    ],
)
def test_tsx_scopes(line, expected):
    assert scope(TSX, "typescriptreact", line) == expected


def test_selection_is_its_own_scope():
    assert edit_scope(PYTHON, "python", 5, 19) == Scope(5, 20, "selection", None)


@pytest.mark.parametrize("language", ["unknown", None])
def test_unknown_language_gives_the_document(language):
    assert scope(PYTHON, language, 19) == Scope(0, 26, "document", None)


def test_cursor_past_the_last_line_gives_the_document():
    assert scope(PYTHON, "python", 26) == Scope(0, 26, "document", None)


@pytest.mark.parametrize("text, language", [(PYTHON, "python"), (JAVASCRIPT, "javascript"), (TSX, "typescriptreact")])
def test_crlf_gives_the_same_lines(text, language):
    crlf = text.replace("\n", "\r\n")
    count = len(split_lines(text))
    assert [scope(crlf, language, i) for i in range(count)] == [scope(text, language, i) for i in range(count)]


def test_lone_cr_javascript_gives_the_same_lines():
    cr = JAVASCRIPT.replace("\n", "\r")
    assert [scope(cr, "javascript", i) for i in range(24)] == [scope(JAVASCRIPT, "javascript", i) for i in range(24)]


def test_multibyte_text_maps_to_the_right_lines():
    text = 'X = "日本語🙂"\n\n\ndef f():\n    return "é"\n'
    assert scope(text, "python", 4) == Scope(3, 5, "function", "f")
    assert scope(text, "python", 1) == Scope(0, 5, "document", None)


@pytest.mark.parametrize(
    "text, language",
    [
        (PYTHON, "python"),
        (JAVASCRIPT, "javascript"),
        (TYPESCRIPT, "typescript"),
        (TSX, "typescriptreact"),
    ],
)
def test_syntax_errors_zero_on_valid_code(text, language):
    assert syntax_errors(text, language) == 0


@pytest.mark.parametrize(
    "text, language",
    [
        ("def f(:\n    return (1\n", "python"),
        ("x = (1\n", "python"),
        ("function f( {\n  return 1;\n", "javascript"),
        ("const x: number = ;\n", "typescript"),
        ("const a = <div>;\n", "typescriptreact"),
    ],
)
def test_syntax_errors_positive_on_broken_code(text, language):
    assert syntax_errors(text, language) > 0


def test_syntax_errors_counts_error_and_missing_nodes():
    # "def f(:" gives a MISSING ")" and the unclosed "(1" an ERROR node.
    assert syntax_errors("def f(:\n    return (1\n", "python") == 2


def test_syntax_errors_none_for_unknown_language():
    assert syntax_errors("fn main() {", "rust") is None


def _check_cover(chunks, count):
    assert chunks[0][0] == 0 and chunks[-1][1] == count
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:], strict=False))
    assert all(start < end for start, end in chunks)


@pytest.mark.parametrize(
    "text, language",
    [
        (PYTHON, "python"),
        (JAVASCRIPT, "javascript"),
        (TYPESCRIPT, "typescript"),
        (TSX, "typescriptreact"),
        (PYTHON, None),
    ],
)
@pytest.mark.parametrize("max_lines", [1, 3, 8, 15, 100])
def test_chunks_cover_every_line_once(text, language, max_lines):
    _check_cover(top_level_chunks(text, language, max_lines), len(split_lines(text)))


def test_chunks_cut_at_top_level_boundaries():
    chunks = top_level_chunks(PYTHON, "python", 5)
    # The class (lines 10..22) is longer than 5 lines: its own chunk.  helper (4..7) is not
    # cut, and its comment (line 3) stays with it.
    assert chunks == [(0, 3), (3, 8), (8, 10), (10, 23), (23, 26)]


def test_chunks_keep_a_jsdoc_with_its_function():
    text = "const a = 1;\n/** Add one. */\nfunction add(a) {\n  return a + 1;\n}\n"
    assert top_level_chunks(text, "javascript", 4) == [(0, 1), (1, 5)]


def test_chunks_of_an_unknown_language_cut_at_blank_lines_then_fixed_size():
    text = "a\nb\n\nc\nd\ne\nf\ng\nh\n"
    assert top_level_chunks(text, None, 4) == [(0, 3), (3, 7), (7, 9)]


def test_chunks_of_empty_text():
    assert top_level_chunks("", "python", 10) == []


def _big_python(functions=625):
    parts = ['"""A big module."""\n\n', "import os\n\n\n"]
    for i in range(functions):
        parts.append(
            f"def function_{i}(a, b):\n"
            f'    """Function {i}."""\n'
            f"    total = a + b * {i}\n"
            f"    if total > 10:\n"
            f"        return total - 1\n"
            f"    return total\n"
            "\n\n"
        )
    return "".join(parts)


class CountingParser:
    """Wraps a tree-sitter parser and counts its parses."""

    def __init__(self, parser):
        self.parser = parser
        self.parses = 0

    def parse(self, source, *old_tree):
        self.parses += 1
        return self.parser.parse(source, *old_tree)


def _fastest(call, repeats=7):
    """The least time ``call`` took over ``repeats`` runs (the least disturbed by other jobs)."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return min(times)


def test_edit_scope_on_a_big_file_is_fast(monkeypatch):
    """A text is parsed once however many scopes are asked of it (an equal new str too); the parse grows
    linearly with the file, and a scope in an already parsed file costs about the same in a big file as
    in a small one.  No bound in seconds: counts, and ratios of times measured in this run."""
    text, small = _big_python(), _big_python(625 // 16)
    count = len(split_lines(text))
    assert count >= 5000 and count > 15 * len(split_lines(small))
    counting = CountingParser(scope_module._parser("python"))
    monkeypatch.setattr(scope_module, "_parser", lambda language_id: counting)
    monkeypatch.setattr(scope_module, "RECENT", 0)  # every parse from scratch (none reparses a recent one)
    text = "# counted\n" + text  # a text no earlier call has parsed (and cached)

    started = time.perf_counter()
    first = scope(text, "python", count // 2)
    parsed_in = time.perf_counter() - started
    assert counting.parses == 1
    lines = range(0, count, 7)
    started = time.perf_counter()
    kinds = {scope(text, "python", line).kind for line in lines}
    per_call = (time.perf_counter() - started) / len(lines)
    copy = "".join(split_lines(text))  # an equal text that is not the same object
    assert copy is not text
    assert scope(copy, "python", count // 2) == first
    assert syntax_errors(text, "python") == 0
    assert counting.parses == 1, f"{counting.parses} parses for {len(lines) + 3} calls on one text"
    assert first.kind == "function" and kinds == {"document", "function"}

    # a scope once parsed: a walk up from one line's node, whatever the file's length
    small_lines = range(0, len(split_lines(small)), 7)
    call_big = _fastest(lambda: [scope(text, "python", line) for line in lines]) / len(lines)
    call_small = _fastest(lambda: [scope(small, "python", line) for line in small_lines]) / len(small_lines)
    assert counting.parses == 2  # and the small text once
    # the parse: a file 16 times as long takes about 16 times as long (quadratic would be 256)
    variants = iter(range(10**6))

    def parse_anew(source):
        return lambda: scope(f"# variant {next(variants)}\n" + source, "python", 3)

    parse_big, parse_small = _fastest(parse_anew(text)), _fastest(parse_anew(small))
    assert counting.parses == 2 + 2 * 7
    print(
        f"\n{count} lines: first edit_scope (parse) {parsed_in * 1000:.2f} ms, then {per_call * 1e6:.1f} us per call; "
        f"parse 16x the lines: {parse_big / parse_small:.1f}x the time, a parsed scope: {call_big / call_small:.2f}x"
    )
    assert parse_big < 48 * parse_small, (parse_big, parse_small)
    assert call_big < 3 * call_small, (call_big, call_small)


SOURCES = {
    "python": 'def mean(values):\n    """The mean."""\n    total = 0\n    for v in values:\n        total += v\n'
    "    return total / len(values)\n\n\nclass Café:\n    def size(self):\n        return 1\n",
    "javascript": "const fix = (text) => {\n  let t = ''\n  for (const c of text) { t += c }\n  return t\n}\n\n"
    "class Box {\n  size() {\n    return 'é';\n  }\n}\n",
}


def _shape(tree) -> list[tuple]:
    """Every node of ``tree``: its type, bytes and points, in order."""
    shape, cursor, visited = [], tree.walk(), False
    while True:
        if not visited:
            node = cursor.node
            shape.append((node.type, node.start_byte, node.end_byte, node.start_point, node.end_point))
        if not visited and cursor.goto_first_child():
            continue
        if cursor.goto_next_sibling():
            visited = False
            continue
        if not cursor.goto_parent():
            return shape
        visited = True


@settings(max_examples=300, deadline=None)
@given(
    language=st.sampled_from(sorted(SOURCES)),
    edits=st.lists(
        st.tuples(st.floats(0, 1), st.floats(0, 1), st.text(alphabet="ab é\n\r\t{}():=#'\"", max_size=12)),
        min_size=1,
        max_size=3,
    ),
)
def test_a_text_parsed_from_a_recent_ones_tree_is_parsed_as_from_scratch(language, edits):
    """Each text parsed after the one it edits (tree-sitter reparsing around the change) has the
    tree a parser with no history gives it, byte for byte and point for point (a text with a
    syntax error is parsed afresh: tree-sitter's error recovery may differ between the two)."""
    text = SOURCES[language]
    scope_module.parse(text, language)
    for start, end, insert in edits:
        a, b = sorted((int(start * len(text)), int(end * len(text))))
        text = text[:a] + insert + text[b:]
        fresh = Parser(scope_module.LANGUAGES[language]).parse(text.encode())
        assert _shape(scope_module.parse(text, language).tree) == _shape(fresh)
