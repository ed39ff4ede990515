"""The resolver, oracle programs and minimal line edits: exact on every input."""

import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from quick import examples
from strategies import documents, edits

from copyedit_lsp.common.datasets import PRESETS, load_items
from copyedit_lsp.core.program import Copy, Gen, Program, ProgramError
from copyedit_lsp.core.resolver import Alignment, apply_edits, oracle_program, resolve, split_lines, text_edits


@pytest.mark.parametrize(
    "text, lines",
    [
        ("", []),
        ("a", ["a"]),
        ("a\n", ["a\n"]),
        ("a\r\nb\rc\n\nd", ["a\r\n", "b\r", "c\n", "\n", "d"]),
        ("\t日本\n🙂", ["\t日本\n", "🙂"]),
    ],
)
def test_split_lines(text, lines):
    assert split_lines(text) == lines


def test_resolve_concatenates_ops():
    text = "a\nb\nc\nd\n"
    program = Program((Copy(1, 2), Gen("B\n"), Copy(4, 4), Copy(1, 1)))
    assert resolve(program, text) == "a\nb\nB\nd\na\n"


@pytest.mark.parametrize(
    "program, message",
    [
        (Program((Copy(1, 1), Copy(2, 5))), "op 2"),
        (Program((Copy(0, 1),)), "op 1"),
        (Program((Copy(3, 2),)), "start 3 > end 2"),
        (Program((Gen("x"), Copy(1, 1))), "only the last gen"),
    ],
)
def test_invalid_program_names_the_op(program, message):
    with pytest.raises(ProgramError, match=message):
        resolve(program, "a\nb\nc\n")
    with pytest.raises(ProgramError, match=message):
        text_edits(program, "a\nb\nc\n")


def test_oracle_is_shortest_on_a_simple_edit():
    before = "def f(x):\n    y = x\n    return y - 1\n"
    after = "def f(x):\n    y = x\n    return y + 1\n"
    assert oracle_program(before, after) == Program((Copy(1, 2), Gen("    return y + 1\n")))


def test_oracle_of_identical_texts_is_one_copy_and_of_empty_is_empty():
    assert oracle_program("a\nb", "a\nb") == Program((Copy(1, 2),))
    assert oracle_program("", "") == Program()
    assert oracle_program("a\n", "") == Program()
    assert oracle_program("", "x") == Program((Gen("x"),))


@settings(max_examples=examples(3000), deadline=None)
@given(edits())
def test_oracle_round_trip(pair):
    before, after = pair
    program = oracle_program(before, after)
    assert resolve(program, before) == after
    ops = program.ops
    assert all(not (isinstance(a, Gen) and isinstance(b, Gen)) for a, b in zip(ops, ops[1:], strict=False))
    assert all(
        not (isinstance(a, Copy) and isinstance(b, Copy) and a.end + 1 == b.start)
        for a, b in zip(ops, ops[1:], strict=False)
    )


@settings(max_examples=examples(1500), deadline=None)
@given(edits())
def test_text_edits_of_oracle_apply_and_touch_only_changed_lines(pair):
    before, after = pair
    edits_ = text_edits(oracle_program(before, after), before)
    assert apply_edits(before, edits_) == after
    lines = split_lines(before)
    for edit in edits_:
        assert edit.new_text != "".join(lines[edit.start : edit.end])
        new = split_lines(edit.new_text)
        old = lines[edit.start : edit.end]
        if old and new:  # no equal line at either edge stays inside an edit
            assert old[0] != new[0] and old[-1] != new[-1]


@settings(max_examples=examples(500), deadline=None)
@given(documents())
def test_identity_program_has_no_edits(text):
    n = len(split_lines(text))
    program = Program((Copy(1, n),)) if n else Program()
    assert text_edits(program, text) == []


def test_text_edits_of_a_backward_copy_and_a_regenerated_line():
    text = "a\nb\nc\n"
    program = Program((Copy(1, 1), Gen("b\nX\n"), Copy(3, 3), Copy(1, 1)))
    edits_ = text_edits(program, text)
    assert apply_edits(text, edits_) == resolve(program, text) == "a\nb\nX\nc\na\n"
    assert [(e.start, e.end) for e in edits_] == [(2, 2), (3, 3)]  # the regenerated "b" is kept


@pytest.mark.parametrize("preset", list(PRESETS))
def test_shared_data_oracle_exact_and_edits_minimal(preset):
    items = load_items(preset)
    assert len(items) in (164, 40, 105)
    for item in items:
        program = oracle_program(item.before, item.after)
        assert resolve(program, item.before) == item.after, item.id
        edits_ = text_edits(program, item.before)
        assert apply_edits(item.before, edits_) == item.after, item.id
        changed = sum(e.end - e.start for e in edits_)
        copied = sum(op.end - op.start + 1 for op in program.ops if isinstance(op, Copy))
        assert changed + copied == len(split_lines(item.before)), item.id  # every kept line untouched


def test_core_imports_neither_llama_nor_pygls():
    code = (
        "import sys; import copyedit_lsp.core.program, copyedit_lsp.core.resolver, copyedit_lsp.core.grammar, copyedit_lsp.decode.edit, "
        "copyedit_lsp.decode.prompt, copyedit_lsp.core.languages, copyedit_lsp.core.scope, copyedit_lsp.core.loss, copyedit_lsp.decode.writer, "
        "copyedit_lsp.bench.analysis, copyedit_lsp.common.datasets; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('llama_cpp', 'pygls', 'lsprotocol')]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


LINES = st.lists(st.sampled_from(["a\n", "b\n", "c\n", "}\n", "\n"]), max_size=14)


@given(LINES, LINES)
@settings(max_examples=examples(300))
def test_an_alignment_turns_one_line_list_into_the_other(a, b):
    """Its common first and last lines set aside, the alignment still writes ``b`` from ``a``, each
    equal run equal, and matches those common lines."""
    alignment = Alignment(a, b)
    written = []
    for tag, i1, i2, j1, j2 in alignment.get_opcodes():
        assert tag != "equal" or a[i1:i2] == b[j1:j2]
        written += a[i1:i2] if tag == "equal" else b[j1:j2]
    assert written == b
    head = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    assert sum(block.size for block in alignment.get_matching_blocks()) >= head
