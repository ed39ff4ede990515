"""Fast apply without a model: what the model reads of a change, the checks of a result, the
training data's changes, the command's arguments."""

import random

import pytest
from test_change import FILE

from copyedit_lsp.bench import changes as bench_changes
from copyedit_lsp.core.change import FORMS, ChangeError, ended_text, ending_as, read_change
from copyedit_lsp.core.loss import lost_code
from copyedit_lsp.core.merge import merge
from copyedit_lsp.core.program import ChangeCopy, Copy
from copyedit_lsp.core.resolver import oracle_apply_program, resolve
from copyedit_lsp.decode.edit import EditOptions, EditResult, EditStats
from copyedit_lsp.decode.fast_apply import apply_change, apply_loss, dropped_lines, unplaced_parts
from copyedit_lsp.decode.prompt import CodeMatches, SourceView, change_view, shown_change
from copyedit_lsp.serve.region import ApplyArguments, Position, Range, apply_region, parse_arguments
from copyedit_lsp.train import changes as train_changes

AFTER = FILE.replace("self.data[key]\n", "self.data.get(key)\n", 1).replace("import os\n", "import sys\n")
BLOCKS = (
    "<<<<<<< SEARCH\n    return self.data[key]\n=======\n    return self.data.get(key)\n>>>>>>> REPLACE\n"
    "<<<<<<< SEARCH\nimport os\n=======\n>>>>>>> REPLACE\n"
)


def test_the_model_reads_a_change_in_its_forms_layout_with_only_copyable_lines_numbered():
    """Each change line numbered, with where it stands in the code beside the number: the code
    lines it equals (whitespace aside), or the one it reads like."""
    matches = CodeMatches.of(SourceView.of(FILE))
    blocks = read_change(BLOCKS)
    assert shown_change(blocks, change_view(blocks), matches) == (
        "<<<<<<< SEARCH\n- =16|     return self.data[key]\n=======\n1 ~16|     return self.data.get(key)\n"
        ">>>>>>> REPLACE\n<<<<<<< SEARCH\n- =1| import os\n=======\n>>>>>>> REPLACE\n"
    )
    diff = read_change(
        "@@ -15,2 +15,2 @@\n     def get(self, key):\n-        return self.data[key]\n+        return 0\n"
    )
    assert shown_change(diff, change_view(diff), matches) == (
        "@@ -15,2 +15,2 @@\n1 =15|     def get(self, key):\n- =16|         return self.data[key]\n2|         return 0\n"
    )
    snippet = read_change("# ...\n<copy lines='1'>\n\n    with open(path) as f:\n")  # reserved strings escaped
    assert shown_change(snippet, change_view(snippet), matches) == (
        "1| # ...\n2| <\\copy lines='1'>\n3| \n4 =5|     with open(path) as f:\n"
    )
    repeated = CodeMatches.of(SourceView.of("x = 1\ny = 2\n" * 4))
    assert (repeated.hint("x = 1\n"), repeated.hint("}\n"), repeated.hint("z = 12345\n")) == (" =1,3,5...", "", "")


def test_a_change_names_its_parts_and_what_it_deletes_on_purpose():
    blocks = read_change(BLOCKS)
    assert [name for name, _, _ in blocks.parts()] == ["block 1 ('return self.data[key]')", "block 2 ('import os')"]
    assert blocks.deleted() == frozenset({"import os", "return self.data[key]"})
    snippet = read_change("# ... existing code ...\n    def get(self, key):\n        return 0\n# ...\n\n")
    assert [(name, lines) for name, lines, _ in snippet.parts()] == [
        ("part 1 ('def get(self, key):')", ("    def get(self, key):\n", "        return 0\n"))
    ]
    assert snippet.deleted() == frozenset()


def test_a_result_that_lacks_a_part_of_the_change_names_it():
    blocks = read_change(BLOCKS)
    merged = FILE.replace("        return self.data[key]\n", "        return self.data.get(key)\n").replace(
        "import os\n", ""
    )
    assert unplaced_parts(blocks, FILE, merged) == ()
    assert unplaced_parts(blocks, FILE, FILE) == (
        "block 1 ('return self.data[key]'): the result lacks 'return self.data.get(key)'",
        "block 2 ('import os'): what it deletes is still there",
    )


def test_a_line_inserted_beside_the_line_it_rewrites_or_a_part_split_apart_is_not_placed():
    """Every line of the part shows, yet the result is not the change: the rewritten line kept
    beside its rewrite, or a line of the part (a blank one too) dropped from between the others."""
    no_context = read_change("# ...\n        return self.data.get(key)\n# ...\n")
    rewritten = FILE.replace("self.data[key]\n", "self.data.get(key)\n", 1)
    assert unplaced_parts(no_context, FILE, rewritten) == ()
    both = FILE.replace(
        "        return self.data[key]\n", "        return self.data[key]\n        return self.data.get(key)\n"
    )
    assert unplaced_parts(no_context, FILE, both) == (
        "part 1 ('return self.data.get(key)'): the result keeps 'return self.data[key]' beside "
        "'return self.data.get(key)', which reads as its rewrite",
    )
    # an insertion beside a line alike, which the change shows: no rewrite kept
    shown = read_change("# ...\n        return self.data[key]\n        return self.data.get(key)\n# ...\n")
    assert unplaced_parts(shown, FILE, both) == ()
    with_context = read_change(
        "# ...\n    def get(self, key):\n        return self.data.get(key)\n\n    def put(self, key, value):\n# ...\n"
    )
    assert unplaced_parts(with_context, FILE, rewritten) == ()
    assert unplaced_parts(with_context, FILE, rewritten.replace("\n\n    def put", "\n    def put")) == (
        "part 1 ('def get(self, key):'): its lines do not stand together in the result as the change has them",
    )
    assert unplaced_parts(with_context, FILE, rewritten.replace("\n\n    def put", "\n\n\n    def put")) == ()


def test_a_block_whose_search_body_stays_beside_its_replacement_is_not_placed():
    """Blocks say how often each of their lines ends up in the file: the old line kept beside its
    replacement, or a line of the block written twice, is miscounted though every line shows."""
    blocks = read_change(BLOCKS)
    good = AFTER.replace("import sys\n", "")
    assert unplaced_parts(blocks, FILE, good) == ()
    both = good + "        return self.data[key]\n"  # kept, though not beside its replacement
    assert unplaced_parts(blocks, FILE, both) == (
        "the result holds 'return self.data[key]' 1 times where the change makes it 0",
    )
    twice = good.replace("        return self.data.get(key)\n", "        return self.data.get(key)\n" * 2)
    assert unplaced_parts(blocks, FILE, twice) == (
        "the result holds 'return self.data.get(key)' 2 times where the change makes it 1",
    )


def test_a_merge_into_a_file_without_a_final_line_break_ends_as_the_file_does():
    unended = FILE.removesuffix("\n")
    block = read_change(
        "<<<<<<< SEARCH\n        self.data[key] = value\n=======\n        self.data[key] = [value]\n>>>>>>> REPLACE\n"
    )
    assert merge(unended, block).text == unended.replace("= value", "= [value]")
    appended = read_change("# ...\n        self.data[key] = value\n\n    def clear(self):\n        self.data = {}\n")
    assert merge(unended, appended).text == unended + "\n\n    def clear(self):\n        self.data = {}"
    assert (ended_text(unended), ending_as(unended, FILE), ending_as(FILE, FILE)) == (FILE, unended, FILE)
    assert ending_as("a\r\nb", "a\r\nc\r\n") == "a\r\nc"


def test_what_a_change_deletes_is_no_loss_but_other_code_is():
    blocks = read_change("<<<<<<< SEARCH\ndef save(path, text):\n    with open(path, \"w\") as f:\n"
                         "        f.write(text)\n=======\n>>>>>>> REPLACE\n")  # fmt: skip
    without_save = merge(FILE, blocks).text
    assert "def save" not in without_save
    assert lost_code(FILE, without_save, "python") is not None
    assert lost_code(FILE, without_save, "python", deleted=blocks.deleted()) is None
    without_load = without_save.replace("def load(path):\n    with open(path) as f:\n        return f.read()\n", "")
    lost = lost_code(FILE, without_load, "python", deleted=blocks.deleted())
    assert lost is not None and lost.definitions == ("load",)


class Scripted:
    """An editor that answers with a given text (the checks are what is tested, not a model)."""

    def __init__(self, text: str):
        self.text, self.plans, self.changes = text, [], []

    def apply(self, source, change, options=EditOptions(), *, instruction="", plan=None, stop=None, on_progress=None):
        self.plans.append(plan)
        self.changes.append(change)
        return EditResult(None, self.text, EditStats(mode=options.mode))


def test_an_apply_is_drafted_from_the_merge_and_checked():
    blocks = read_change(BLOCKS)
    good = FILE.replace("self.data[key]\n", "self.data.get(key)\n", 1).replace("import os\n", "")
    scripted = Scripted(good)
    applied = apply_change(scripted, FILE, blocks, EditOptions(language="python"))
    assert applied.complete and applied.result.loss is None
    assert scripted.plans == [merge(FILE, blocks).program]
    dropped = good.replace("def load(path):\n    with open(path) as f:\n        return f.read()\n", "")
    lossy = apply_change(Scripted(dropped), FILE, blocks, EditOptions(language="python"))
    assert not lossy.complete and lossy.result.loss is not None and lossy.unplaced == ()
    half = apply_change(Scripted(FILE.replace("import os\n", "")), FILE, blocks, EditOptions(language="python"))
    assert not half.complete and len(half.unplaced) == 1


def test_an_apply_whose_result_parses_worse_than_the_file_is_refused():
    """A part placed one line off leaves a block unmatched: every part shows and no line is lost,
    so only the parse tells; the server's ``syntaxGuard`` false lets it through."""
    snippet = read_change("# ...\n    def get(self, key):\n        return self.data.get(key)\n# ...\n")
    good = FILE.replace("self.data[key]\n", "self.data.get(key)\n", 1)
    options = EditOptions(language="python")
    assert apply_change(Scripted(good), FILE, snippet, options).complete
    off = good.replace(
        "        return self.data.get(key)\n", "return self.data.get(key)\n        return self.data.get(key)\n"
    )
    applied = apply_change(Scripted(off), FILE, snippet, options)
    refusal = applied.refusal()
    assert not applied.complete and applied.unplaced == ()
    assert (refusal.kind, refusal.exit_status, refusal.code) == ("syntax_worse", 5, "syntax_worse")
    assert "more syntax errors" in refusal.message and applied.refusal(syntax_guard=False) is None


@pytest.mark.parametrize("form", FORMS)
def test_the_training_changes_read_back_and_their_oracle_gives_the_after_text(form):
    """Every training change parses in its form, its oracle apply program resolves to the after
    text, and a snippet's, a block's or a hunk's lines are copied from the change."""
    for seed in range(12):
        rng = random.Random(seed)
        text = train_changes.training_change(FILE, AFTER, form, "python", rng)
        change = read_change(text, form)
        lines = [line.text for line in change.lines]
        program = oracle_apply_program(FILE, AFTER, lines)
        assert resolve(program, FILE, lines) == AFTER, text
        for kind in (Copy, ChangeCopy):  # the copies of each source go forward (the decoder's order)
            copies = [op for op in program.ops if isinstance(op, kind)]
            assert all(a.end < b.start for a, b in zip(copies, copies[1:], strict=False)), text
        assert any(isinstance(op, ChangeCopy) for op in program.ops) or form != "file", text


def test_the_training_changes_never_use_the_benchmarks_marker_wordings():
    assert not set(train_changes.MARKERS) & set(bench_changes.MARKERS)
    for train in train_changes.MARKERS:
        assert not any(bench.strip(". ") in train for bench in bench_changes.MARKERS if bench.strip(". ")), train


def test_the_apply_commands_arguments_and_region():
    args = parse_arguments(({"uri": "file:///a.py", "change": "x = 1\n", "partial": True},), ApplyArguments)
    assert args.partial and args.form is None
    with pytest.raises(ValueError, match="change"):
        parse_arguments(({"uri": "file:///a.py"},), ApplyArguments)
    assert apply_region(FILE, args).kind == "document"
    cursor = Range(Position(15, 4), Position(15, 4))  # a cursor is no selection: the whole document
    assert apply_region(FILE, ApplyArguments("file:///a.py", "x\n", range=cursor)).end == len(FILE.splitlines())
    selected = apply_region(FILE, ApplyArguments("file:///a.py", "x\n", range=Range(Position(14, 0), Position(19, 0))))
    assert (selected.start, selected.end, selected.kind) == (14, 19, "selection")


@pytest.mark.parametrize("text", ["", "   \n", "# ... existing code ...\n# ...\n", "<<<<<<< SEARCH\nx\n"])
def test_a_change_that_cannot_be_read_is_an_error(text):
    with pytest.raises(ChangeError):
        read_change(text)


def test_a_change_that_cannot_be_placed_or_is_another_languages_is_refused_before_the_model():
    twice = FILE + "\n\ndef other():\n    with open(path) as f:\n        return f.read()\n"
    block = "<<<<<<< SEARCH\n    with open(path) as f:\n        return f.read()\n=======\n        return 1\n>>>>>>> REPLACE\n"
    nowhere = "<<<<<<< SEARCH\n    return missing\n=======\n    return 2\n>>>>>>> REPLACE\n"
    scripted, options = Scripted(FILE), EditOptions(language="python")
    with pytest.raises(ChangeError, match=r"not placed: block 1 \('with open\(path\) as f:'\): matches 2 places"):
        apply_change(scripted, twice, read_change(block), options)
    with pytest.raises(ChangeError, match="block 1 .*return missing"):
        apply_change(scripted, FILE, read_change(nowhere), options)
    with pytest.raises(ChangeError, match="reads as javascript, not python"):
        apply_change(
            scripted, FILE, read_change("// ...\nfunction save(path) {\n  return fs.read(path);\n}\n"), options
        )
    assert scripted.plans == []  # the model never ran
    # partial: the blocks that can be placed go to the model, the others are named
    both = read_change(BLOCKS + nowhere)
    scripted = Scripted(AFTER.replace("import sys\n", ""))
    applied = apply_change(scripted, FILE, both, options, partial=True)
    assert [part.split(":")[0] for part in applied.unplaced] == ["block 3 ('return missing')"]
    assert applied.refusal().kind == "not_placed"
    assert applied.complete is False and applied.refusal(taken=frozenset({"not_placed"})) is None
    assert scripted.changes == [read_change(BLOCKS)]  # the model read the two blocks placed, no more
    assert scripted.plans == [merge(FILE, read_change(BLOCKS)).program]


def test_an_apply_may_drop_no_single_line_the_change_does_not_replace():
    """A copy one line short drops a line the change keeps: a loss, though no run of three; the
    lines the change rewrites or deletes are none."""
    snippet = read_change("# ...\n    def get(self, key):\n        return self.data.get(key)\n# ...\n")
    good = FILE.replace("self.data[key]\n", "self.data.get(key)\n", 1)
    assert apply_loss(FILE, good, snippet, "python") is None
    one_short = good.replace("    with open(path) as f:\n        return f.read()\n", "        return f.read()\n")
    loss = apply_loss(FILE, one_short, snippet, "python")
    assert loss is not None and loss.runs == ((5, 5),) and dropped_lines(FILE, one_short, snippet) == [5]
    assert lost_code(FILE, one_short, "python") is None  # the edit's guard alone lets it through
    blocks = read_change(BLOCKS)
    assert apply_loss(FILE, good.replace("import os\n", ""), blocks, "python") is None


def test_a_line_rewritten_in_its_place_is_not_dropped():
    """A whole file's line in the place of one it rewrites (the same opening word at the same
    indentation) drops nothing, however unlike the rest; a line in its place that opens otherwise
    does."""
    rewritten = FILE.replace("return self.data[key]", "return None")
    assert dropped_lines(FILE, rewritten, read_change(rewritten)) == []
    other = FILE.replace("return self.data[key]", "pass")
    assert dropped_lines(FILE, other, read_change(other)) == [
        FILE.splitlines().index("        return self.data[key]") + 1
    ]


def test_the_shortcut_answers_without_the_model_only_where_anchors_or_structure_place_everything():
    """Blocks placed by their anchors and a snippet placed by the definitions it names answer
    alone, an import line it rewrites too; a snippet with a new line outside every definition,
    like none of the file's, goes to the model."""
    blocks, snippet = read_change(BLOCKS), read_change("# ...\n    def get(self, key):\n        return 0\n# ...\n")
    scripted = Scripted(FILE)
    taken = apply_change(scripted, FILE, blocks, EditOptions(language="python"), shortcut=True)
    assert scripted.plans == [] and taken.complete and taken.result.stats.mode == "merge"
    assert taken.result.text == merge(FILE, blocks).text
    placed = apply_change(scripted, FILE, snippet, EditOptions(language="python"), shortcut=True)
    assert scripted.plans == [] and placed.complete and placed.result.stats.mode == "structure"
    assert placed.result.text == FILE.replace("return self.data[key]", "return 0")
    imports = read_change("import os, sys\n# ...\n    def get(self, key):\n        return 0\n# ...\n")
    placed = apply_change(scripted, FILE, imports, EditOptions(language="python"), shortcut=True)
    assert scripted.plans == [] and placed.result.stats.mode == "structure"
    assert placed.result.text == FILE.replace("return self.data[key]", "return 0").replace(
        "import os\n", "import os, sys\n"
    )
    loose = read_change("LIMIT = 10\n# ...\n    def get(self, key):\n        return 0\n# ...\n")
    apply_change(scripted, FILE, loose, EditOptions(language="python"), shortcut=True)  # structure says nothing
    assert scripted.plans == [merge(FILE, loose).program]
