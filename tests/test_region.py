"""The server's plain modules: settings, arguments, regions, LSP edits, actions, workspace files."""

import pytest
from lsprotocol import types

from copyedit_lsp.core.program import parse_program
from copyedit_lsp.core.resolver import oracle_program, resolve, sources, split_lines
from copyedit_lsp.core.scope import adds_syntax_errors
from copyedit_lsp.serve.actions import Diagnostic, instruction_comment, list_actions
from copyedit_lsp.serve.config import Settings, updated
from copyedit_lsp.serve.region import (
    EditArguments,
    Position,
    Range,
    choice_names,
    narrowed_scope,
    parse_arguments,
    plan_region,
    replace_region,
)
from copyedit_lsp.serve.textedits import apply_lsp_edits, describe_hunk, hunk_provenance, region_edits
from copyedit_lsp.serve.workspace_files import workspace_files

CODE = "import os\n\n\ndef f(x):\n    y = x\n    return y\n\n\ndef g():\n    pass\n"


def test_settings_from_camel_or_snake_case_and_a_copyedit_section():
    s = updated(Settings(), {"copyedit": {"nCtx": 2048, "syntax_guard": False, "model": "smollm2-135m", "unknown": 1}})
    assert (s.n_ctx, s.syntax_guard, s.model) == (2048, False, "smollm2-135m")
    assert updated(s, None) == s


def test_the_copy_check_is_a_setting_of_each_edit_not_of_the_model():
    s = updated(Settings(), {"copyCheck": 0})
    assert s.edit_options("python").copy_check == 0 and Settings().edit_options("python").copy_check > 0
    assert s.model_keys == Settings().model_keys


def test_batch_invariance_is_a_setting_that_reloads_the_model():
    s = updated(Settings(), {"batchInvariant": True})
    assert s.batch_invariant is True
    assert s.model_keys != Settings().model_keys


@pytest.mark.parametrize(
    "options, message",
    [
        ({"nCtx": "big"}, "n_ctx"),
        ({"mode": "diff"}, "mode"),
        ([1], "object"),
        ({"syntaxGuard": "yes"}, "syntax_guard"),
        ({"nThreads": 0}, "n_threads"),
        ({"batchInvariant": 1}, "batch_invariant"),
        ({"copyCheck": 1.5}, "copy_check"),
        ({"copyCheck": -0.1}, "copy_check"),
    ],
)
def test_bad_settings_are_refused_with_the_key_named(options, message):
    with pytest.raises(ValueError, match=message):
        updated(Settings(), options)


def test_edit_arguments_are_structured_strictly():
    args = parse_arguments(
        (
            {
                "uri": "file:///a.py",
                "instruction": "x",
                "range": {"start": {"line": 1, "character": 0}, "end": {"line": 2, "character": 3}},
            },
        ),
        EditArguments,
    )
    assert args.range == Range(Position(1, 0), Position(2, 3))
    for bad in [(), ({"instruction": "x"},), ({"uri": 1, "extra": 2},), ("text",)]:
        with pytest.raises(ValueError):
            parse_arguments(bad, EditArguments)


def _args(start, end=None, comment=None, instruction="x"):
    end = end or start
    return EditArguments(
        uri="file:///a.py", instruction=instruction, range=Range(Position(*start), Position(*end)), commentLine=comment
    )


def test_region_is_the_selection_else_the_enclosing_function_else_the_document():
    assert (lambda r: (r.start, r.end, r.kind))(plan_region(CODE, "python", _args((4, 2)))) == (3, 6, "function")
    assert (lambda r: (r.start, r.end, r.kind))(plan_region(CODE, "python", _args((0, 0)))) == (0, 10, "document")
    selection = plan_region(CODE, "python", _args((3, 0), (5, 4)))
    assert (selection.start, selection.end, selection.kind) == (3, 6, "selection")
    ends_at_line_start = plan_region(CODE, "python", _args((3, 0), (5, 0)))
    assert (ends_at_line_start.start, ends_at_line_start.end) == (3, 5)
    with pytest.raises(ValueError, match="outside"):
        plan_region(CODE, "python", _args((40, 0)))


def test_a_whole_document_or_a_cursor_outside_definitions_edits_what_the_instruction_names():
    """No range, or a cursor on no definition: the definitions the instruction names; a cursor in a
    definition keeps its definition."""
    whole = EditArguments(uri="file:///a.py", instruction="Make g return 1.")
    assert (lambda r: (r.start, r.end, r.kind, r.name))(plan_region(CODE, "python", whole)) == (8, 10, "function", "g")
    at_import = plan_region(CODE, "python", _args((0, 0), instruction="Make g return 1."))
    assert (at_import.start, at_import.end, at_import.kind) == (8, 10, "function")
    in_f = plan_region(CODE, "python", _args((4, 2), instruction="Make g return 1."))
    assert (in_f.start, in_f.end, in_f.name) == (3, 6, "f")
    unnamed = EditArguments(uri="file:///a.py", instruction="Add type hints.")
    assert (lambda r: (r.start, r.end, r.kind))(plan_region(CODE, "python", unnamed)) == (0, 10, "document")


MODULE = """import math

RATE = 0.5


class Shape:
    def area(self):
        return 0

    def scaled(self, k):
        return self.area() * k


def total(shapes):
    return sum(s.area() for s in shapes)


def report(shapes):
    return f"{total(shapes):.2f}"


def unrelated():
    return RATE
"""


@pytest.mark.parametrize(
    "instruction, expected",
    [
        ("Fix the bug in total.", (13, 15, "function", "total")),
        ("Make scaled round its result.", (5, 11, "class", "Shape")),  # a method: its class
        ("Add a parameter `start` to total and pass it from report.", (13, 19, "definitions", "report, total")),
        ("Rename total to grand_total.", (13, 19, "definitions", "report, total")),  # and where it is used
        ("Rename RATE to TAX_RATE.", (0, 23, "document", None)),  # RATE to its use: nearly all of it
        ("Make it faster.", (0, 23, "document", None)),
        ("Fix total and unrelated.", (13, 23, "definitions", "total, unrelated")),
    ],
)
def test_narrowed_scope_is_the_named_definitions(instruction, expected):
    scope = narrowed_scope(MODULE, "python", instruction)
    assert (scope.start_line, scope.end_line, scope.kind, scope.name) == expected


def test_instruction_comment_line_is_in_the_region_but_not_in_the_source():
    text = "# copyedit: add a docstring\ndef f(x):\n    return x\n"
    region = plan_region(text, "python", _args((1, 0), comment=0))
    assert (region.start, region.end, region.source) == (0, 3, "def f(x):\n    return x\n")
    assert (
        replace_region(text, region, "def f(x):\n    '''Doc.'''\n    return x\n")
        == "def f(x):\n    '''Doc.'''\n    return x\n"
    )


def test_region_edits_are_minimal_and_in_utf16_units():
    document = "a = 'é🙂'\nb = 1\nc = 2"
    new_region = "b = 10\nc = 2"
    edits = region_edits(document, 1, 3, new_region, None, types.PositionEncodingKind.Utf16)
    assert [(e.range.start.line, e.range.end.line, e.new_text) for e in edits] == [(1, 2, "b = 10\n")]
    assert apply_lsp_edits(document, edits) == "a = 'é🙂'\nb = 10\nc = 2"
    # replacing the last line of a document without a final newline ends at the line's end (UTF-16)
    document = "x = 'é🙂'"
    edits = region_edits(
        document, 0, 1, "x = 1\n", oracle_program(document, "x = 1\n"), types.PositionEncodingKind.Utf16
    )
    assert edits[0].range.end == types.Position(line=0, character=len("x = 'é🙂'") + 1)
    assert apply_lsp_edits(document, edits) == "x = 1\n"


def test_an_applys_hunks_say_where_each_new_line_comes_from():
    """Of a region rewritten by an apply program (a file line kept, the change's lines, one new),
    each hunk names its lines' sources and what it removes; a hunk that only removes is a deletion."""
    document = "head\na = 1\nb = 2\nc = 3\nd = 4\n"
    ops = '<copy lines="1-1"/>\n<copy change="2-2"/>\n<copy lines="3-3"/>\n<gen>\ne = 5\n</gen>\n'
    program = parse_program(f"<program>\n{ops}</program>", 4, 2)
    new = resolve(program, "".join(split_lines(document)[1:]), ["x\n", "b = 20\n"])
    edits = region_edits(document, 1, 5, new, None, types.PositionEncodingKind.Utf16)
    hunks = hunk_provenance(edits, 1, sources(program))
    assert hunks == [
        {"removes": 1, "lines": [{"source": "change", "line": 2}]},
        {"removes": 1, "lines": [{"source": "gen"}]},
    ]
    assert [describe_hunk(hunk) for hunk in hunks] == [
        "1 line from the change; removes 1 line",
        "1 line written by the model; removes 1 line",
    ]
    assert describe_hunk({"removes": 3, "lines": []}) == "a deletion: removes 3 lines"
    # the last line of a document without a final line break: its edit ends inside that line
    ending = region_edits("head\nb = 2", 1, 2, "b = 20", None, types.PositionEncodingKind.Utf16)
    assert hunk_provenance(ending, 1, [("change", 2)]) == [{"removes": 1, "lines": [{"source": "change", "line": 2}]}]


@pytest.mark.parametrize(
    "line, instruction",
    [
        ("# copyedit: add types", "add types"),
        ("    // copyedit: use const", "use const"),
        ("-- copyedit: quote names", "quote names"),
        ("/* copyedit: inline this */", "inline this"),
        ("# copyedit:", None),
        ("x = 1  # copyedit: no", None),
        ("# a comment", None),
    ],
)
def test_instruction_comments(line, instruction):
    assert instruction_comment(line) == instruction


def test_actions_for_diagnostics_comments_presets_and_free_instruction():
    text = "# copyedit: rename f\ndef f():\n    pass\n"
    actions = list_actions(text, "python", 0, 0, [Diagnostic(2, 2, "unused", "W1")])
    assert [a.title for a in actions] == [
        "Fix with copyedit: unused",
        "copyedit: rename f",
        "Add docstring",
        "Add type hints",
        "Edit with instruction...",
    ]
    fix, comment, *_, free = actions
    assert (fix.kind, fix.instruction, fix.start_line) == ("quickfix", "Fix this problem: unused (W1)", 2)
    assert (comment.comment_line, comment.start_line) == (0, 1)
    assert free.instruction is None and free.follows_selection
    assert [a.title for a in list_actions("x\n", None, 0, 0, [])] == ["Edit with instruction..."]


def test_workspace_files_stay_inside_and_skip_what_is_not_utf8_text(tmp_path):
    root, outside = tmp_path / "ws", tmp_path / "out"
    (root / "sub").mkdir(parents=True)
    outside.mkdir()
    (root / "a.py").write_text("a = 1\n")
    (root / "sub" / "b.ts").write_text("let b = 1;\n")
    (root / "notes.txt").write_text("not code\n")
    (root / "bin.py").write_bytes(b"\0\1")
    (root / "latin.js").write_bytes(b"caf\xe9\n")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "dep.js").write_text("x\n")
    (outside / "secret.py").write_text("s = 1\n")
    (root / "link.py").symlink_to(outside / "secret.py")
    files, skipped = workspace_files([root], None, 50, max_bytes=1000)
    assert [f.relative for f in files] == ["a.py", "sub/b.ts"]
    assert dict(skipped) == {
        "bin.py": "binary",
        "latin.js": "not UTF-8",
        "link.py": "a link that leads outside the workspace",
    }
    files, skipped = workspace_files([root], ["sub/*.ts"], 50, max_bytes=1000)
    assert [f.relative for f in files] == ["sub/b.ts"] and not skipped
    files, skipped = workspace_files([root], None, 1, max_bytes=1000)
    assert len(files) == 1 and ("sub/b.ts", "more than maxFiles=1 files") in skipped
    # ``**/`` matches no folder too, as in VS Code's globs: top-level files are included
    files, _ = workspace_files([root], ["**/*"], 50, max_bytes=1000)
    assert [f.relative for f in files] == ["a.py", "notes.txt", "sub/b.ts"]
    files, _ = workspace_files([root], ["**/sub/**/*.ts", "**/*.py"], 50, max_bytes=1000)
    assert [f.relative for f in files] == ["a.py", "sub/b.ts"]


def test_syntax_guard_sees_tree_sitter_errors_and_python_indentation_errors():
    good = "def mean(v):\n    return sum(v) / len(v)\n"
    assert not adds_syntax_errors(good, good.replace("sum", "total"), "python")
    assert adds_syntax_errors(good, good.replace("(v):", "(v:"), "python")
    assert adds_syntax_errors(good, good + "        total += v\n", "python")  # tree-sitter accepts this one
    assert adds_syntax_errors("f(1);\n", "f(1;\n", "javascript")
    assert not adds_syntax_errors("x\n", "x(\n", None)


def test_the_model_chooses_only_in_a_long_document_whose_instruction_names_nothing():
    long = MODULE + "".join(f"\n\ndef extra_{n}(x):\n    return x + {n}\n" for n in range(10))
    assert len(long.splitlines()) >= 60 > len(MODULE.splitlines())
    assert choice_names(MODULE, "python", "Make it faster.") == []  # short: the document
    assert choice_names(long, "python", "Fix the bug in total.") == []  # a name said
    assert choice_names(long, "python", "Add type hints to every function.") == []  # all of it
    names = choice_names(long, "python", "Rounding is off in the summary line.")
    assert names[:4] == ["Shape", "total", "report", "unrelated"] and "RATE" not in names
    chosen = narrowed_scope(long, "python", "Rounding is off in the summary line.", "report")
    assert (chosen.start_line, chosen.end_line, chosen.name) == (17, 19, "report")
