"""Changes as assistants write them, read into numbered lines; two-source apply programs; the
deterministic merge (no model)."""

import random

import pytest

from copyedit_lsp.bench.apply import apply_benchmark, format_tables, runner_of, summarize, write_outputs
from copyedit_lsp.bench.changes import Score, build_change, regions, score
from copyedit_lsp.common.datasets import EditItem
from copyedit_lsp.core.change import FORMS, ChangeError, change_form, is_marker, read_change
from copyedit_lsp.core.grammar import instantiate
from copyedit_lsp.core.merge import merge
from copyedit_lsp.core.program import ChangeCopy, Copy, Gen, Program, ProgramError, parse_program
from copyedit_lsp.core.resolver import apply_edits, oracle_apply_program, resolve, sources, split_lines, text_edits

FILE = """import os


def load(path):
    with open(path) as f:
        return f.read()


def save(path, text):
    with open(path, "w") as f:
        f.write(text)


class Store:
    def get(self, key):
        return self.data[key]

    def put(self, key, value):
        self.data[key] = value
"""


@pytest.mark.parametrize(
    "line",
    [
        "# ... existing code ...",
        "// ... rest of the code unchanged",
        "/* ... */",
        "...",
        "    # ... (other methods unchanged) ...",
        "// existing code here",
        "<!-- ... -->",
        "# rest of the file stays the same",
        "    // the rest remains the same",
    ],
)
def test_elision_markers_in_any_comment_style(line):
    assert is_marker(line)


@pytest.mark.parametrize(
    "line",
    ["x = ...", "return ...", 'print("...")', "# TODO: the rest", "    pass", "", "def eat(number, need, remaining):"],
)
def test_code_is_not_a_marker(line):
    assert not is_marker(line)


def test_a_snippet_is_numbered_as_given_markers_included():
    snippet = "# ... existing code ...\ndef save(path, text):\n    pass\n# ... existing code ...\n"
    change = read_change(snippet)
    assert change.form == "snippet" == change_form(snippet)
    assert [line.text for line in change.lines] == split_lines(snippet)
    assert [line.marker for line in change.lines] == [True, False, False, True]


def test_search_replace_numbers_the_replace_bodies_and_keeps_the_search_as_anchors():
    blocks = (
        "Some prose.\n<<<<<<< SEARCH\n    return self.data[key]\n=======\n    return self.data.get(key)\n"
        ">>>>>>> REPLACE\n\n<<<<<<< SEARCH\nimport os\n=======\n>>>>>>> REPLACE\n"
    )
    change = read_change(blocks)
    assert change.form == "search-replace"
    assert [line.text for line in change.lines] == ["    return self.data.get(key)\n"]
    first, second = change.pieces
    assert first.anchor == ("    return self.data[key]\n",) and (first.first, first.last) == (1, 1)
    assert second.anchor == ("import os\n",) and second.last < second.first  # a deletion: no lines
    merged = merge(FILE, change)
    assert merged.unplaced == ()
    assert merged.text == FILE.replace("import os\n", "").replace("self.data[key]\n", "self.data.get(key)\n", 1)


def test_a_diff_numbers_context_and_added_lines_and_its_line_numbers_are_only_a_hint():
    diff = (
        "--- a/store.py\n+++ b/store.py\n@@ -90,3 +90,3 @@ class Store:\n     def get(self, key):\n"
        "-        return self.data[key]\n+        return self.data.get(key)\n \n"
    )
    change = read_change(diff)
    assert change.form == "diff"
    assert [line.text for line in change.lines] == [
        "    def get(self, key):\n",
        "        return self.data.get(key)\n",
        "\n",
    ]
    (hunk,) = change.pieces
    assert hunk.anchor == ("    def get(self, key):\n", "        return self.data[key]\n", "\n")
    merged = merge(FILE, change)  # line 90 is past the end: the context places it
    assert merged.unplaced == () and merged.text == FILE.replace("self.data[key]\n", "self.data.get(key)\n", 1)


def test_a_change_kept_in_part_reads_back_as_itself():
    """Some of a change's blocks or hunks (what a partial apply gives the model) are a change of
    their own, renumbered and written out again."""
    diff = (
        "@@ -1,2 +1,2 @@\n-import os\n+import sys\n import json\n"
        "@@ -16 +16 @@\n-        return self.data[key]\n+        return self.data.get(key)\n"
    )
    blocks = "<<<<<<< SEARCH\nimport os\n=======\n>>>>>>> REPLACE\n<<<<<<< SEARCH\nb\n=======\nc\n>>>>>>> REPLACE\n"
    for change in (read_change(diff), read_change(blocks)):
        second = change.keeping(frozenset({2}))
        assert read_change(second.given) == second
        assert second.pieces[0].anchor == change.pieces[1].anchor and second.lines[0].text == change.lines[-1].text
        assert change.keeping(frozenset({1, 2})).lines == change.lines


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("# ... existing code ...\n\n// ...\n", "only elision markers"),
        ("<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n", "no >>>>>>> REPLACE"),
        ("<<<<<<< SEARCH\n=======\nx = 2\n>>>>>>> REPLACE\n", "empty SEARCH"),
        ("@@ -1 +1 @@\n?x\n", "neither context, added nor removed"),
    ],
)
def test_a_change_that_cannot_be_read_is_a_clear_error(text, why):
    with pytest.raises(ChangeError, match=why):
        read_change(text)


def test_a_snippet_replaces_what_it_shows_and_keeps_the_rest():
    snippet = (
        '# ... existing code ...\n\ndef save(path, text):\n    with open(path, "w", encoding="utf-8") as f:\n'
        "        f.write(text)\n\n# ... existing code ...\n"
    )
    merged = merge(FILE, read_change(snippet))
    assert merged.unplaced == ()
    assert merged.text == FILE.replace('open(path, "w")', 'open(path, "w", encoding="utf-8")')


def test_a_re_indented_snippet_is_indented_as_the_file():
    snippet = "def put(self, key, value):\n    self.data[key] = value\n    self.dirty = True\n"
    merged = merge(FILE, read_change(snippet, "snippet"))
    assert merged.text == FILE + "        self.dirty = True\n"
    assert any(isinstance(op, Gen) for op in merged.program.ops)  # the re-indented lines are generated


def test_what_cannot_be_placed_is_named_and_an_ambiguous_anchor_is_not_guessed():
    blocks = (
        "<<<<<<< SEARCH\n    with open(path) as f:\n=======\n    with open(path, encoding='utf-8') as f:\n>>>>>>> REPLACE\n"
        "<<<<<<< SEARCH\n        f.write(data)\n=======\n        f.write(text)\n>>>>>>> REPLACE\n"
    )
    merged = merge(FILE, read_change(blocks))
    assert merged.text == FILE.replace("with open(path) as f:", "with open(path, encoding='utf-8') as f:")
    assert len(merged.unplaced) == 1 and merged.unplaced[0].startswith("block 2 ('f.write(data)'): matches nowhere")
    repeated = "<<<<<<< SEARCH\n        return self.data[key]\n=======\n        return None\n>>>>>>> REPLACE\n"
    twice = FILE + "\n\nclass Cache(Store):\n    def get(self, key):\n        return self.data[key]\n"
    ambiguous = merge(twice, read_change(repeated))
    assert ambiguous.program is None and ambiguous.text == twice
    assert ambiguous.unplaced == ("block 1 ('return self.data[key]'): matches 2 places (lines 16, 24)",)


def test_an_apply_program_copies_from_the_file_and_the_change_and_says_where_each_line_came_from():
    change = ["    def get(self, key):\n", "        return self.data.get(key)\n"]
    program = Program((Copy(1, 14), ChangeCopy(1, 2), Gen("\n"), Copy(18, 19)))
    text = program.to_text()
    assert '<copy change="1-2"/>' in text
    assert parse_program(text, len(split_lines(FILE)), len(change)) == program
    result = resolve(program, FILE, change)
    assert result == FILE.replace("self.data[key]\n", "self.data.get(key)\n", 1)
    assert sources(program, change)[14:18] == [("change", 1), ("change", 2), ("gen", None), ("file", 18)]
    assert apply_edits(FILE, text_edits(program, FILE, change)) == result
    with pytest.raises(ProgramError, match="change lines 1-2 is outside 1..0"):
        resolve(program, FILE)  # an edit program has no change to copy
    with pytest.raises(ProgramError, match="outside 1..2"):
        parse_program('<program>\n<copy change="2-3"/>\n</program>', 19, 2)


def test_the_oracle_apply_program_copies_the_changes_runs_then_the_file_then_gens():
    """The change's runs copied from it, but for their edge lines the file holds right there
    (copied from the file: its copies end at a line the change shows as it is)."""
    change = read_change("    def get(self, key):\n        return self.data.get(key)\n", "snippet")
    after = FILE.replace("self.data[key]\n", "self.data.get(key)\n", 1).replace("import os\n", "import sys\n")
    program = oracle_apply_program(FILE, after, [line.text for line in change.lines])
    assert program.ops == (Gen("import sys\n"), Copy(2, 15), ChangeCopy(2, 2), Copy(17, 19))
    assert resolve(program, FILE, [line.text for line in change.lines]) == after
    blank_edges = read_change(
        "    def get(self, key):\n        return 0\n\n    def put(self, key, value):\n", "snippet"
    )
    zeroed = FILE.replace("self.data[key]\n", "0\n", 1)
    assert oracle_apply_program(FILE, zeroed, [line.text for line in blank_edges.lines]).ops == (
        Copy(1, 15), ChangeCopy(2, 3), Copy(18, 19))  # fmt: skip
    # a run of short lines is no reason to copy from the change; copies of each source go forward
    assert oracle_apply_program("a = 1\n", "a = 1\n}\n", ["}\n"]).ops == (Copy(1, 1), Gen("}\n"))
    swapped = oracle_apply_program("a = 1\n", "y = 20\nx = 10\n", ["x = 10\n", "y = 20\n"])
    assert swapped.ops == (Gen("y = 20\n"), ChangeCopy(1, 1))


def test_the_grammar_admits_change_copies_only_in_apply_programs():
    assert "change-copy" not in next(line for line in instantiate(19).splitlines() if line.startswith("op "))
    apply = instantiate(19, 7)
    assert "op       ::= copy | change-copy | gen" in apply
    assert any(line.startswith("cnum ::= ") and "[1-7]" in line for line in apply.splitlines())


def test_the_benchmarks_changes_merge_back_into_the_gold_in_every_form():
    """The apply benchmark's builder: each form of an edit, read back and merged, gives the
    after text (with context to anchor it); the score counts what a wrong result loses."""
    after = FILE.replace('open(path, "w")', 'open(path, "w", encoding="utf-8")').replace("import os\n", "")
    for form in FORMS:
        for seed in range(4):
            built = build_change(FILE, after, form, "python", random.Random(seed), context=2)
            change = read_change(built.text)
            assert change.form == form, built.text
            merged = merge(FILE, change)
            assert merged.text == after and merged.unplaced == (), (form, built.text)
            assert score(FILE, after, change, merged.text) == Score(True, 0, 0, 0)
    # a deletion at the top is widened until its after side holds a line that anchors it
    assert regions(split_lines(FILE), split_lines(after), 0) == [(0, 4, 0, 3), (9, 10, 8, 9)]
    assert regions(split_lines(FILE), split_lines(after), 1) == [(0, 4, 0, 3), (8, 11, 7, 10)]
    change = read_change(build_change(FILE, after, "search-replace", "python", random.Random(0), context=1).text)
    wrong = FILE.replace("        return self.data[key]\n", "")  # a line the gold keeps dropped, the change not applied
    assert score(FILE, after, change, wrong) == Score(False, 1, 1, 0)
    assert score(FILE, after, change, after + "print(1)\n").invented == 1


def test_bench_apply_scores_each_form_and_counts_a_refusal_as_a_miss(tmp_path):
    after = FILE.replace('open(path, "w")', 'open(path, "w", encoding="utf-8")')
    items = [EditItem("store", FILE, after, "Write UTF-8."), EditItem("same", FILE, FILE.replace("os", "sys"), "")]
    result = apply_benchmark({"files": items}, seed=3, progress=False)
    rows = result["sets"]["files"]["rows"]
    assert [(row["id"], row["form"]) for row in rows[:4]] == [("store", form) for form in FORMS]
    for row in rows:
        assert row["exact"] == (row["applied"] and row["lines_lost"] == row["change_dropped"] == 0), row
    summary = result["sets"]["files"]["summary"]
    assert set(summary) == {f"{form}/merge" for form in FORMS}
    assert summary["file/merge"]["exact"] == 2 and summary["search-replace/merge"]["exact"] == 2
    json_path, md_path, png_path = write_outputs(result, tmp_path, "apply")
    assert json_path.name == "apply.json.gz" and "| snippet/merge |" in md_path.read_text()
    assert png_path.read_bytes().startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="program needs a local model"):
        apply_benchmark({"files": items}, modes=("merge", "program"), progress=False)
    with pytest.raises(ValueError, match="remote-program needs a remote server"):
        apply_benchmark({"files": items}, modes=("remote-program",), progress=False)
    with pytest.raises(ValueError, match="lookup@m needs the model m"):
        apply_benchmark({"files": items}, modes=("lookup@m",), editors={"local": None}, progress=False)
    with pytest.raises(ValueError, match=r"unknown forms or modes \['merge@m', 'remote-program@m'\]"):
        apply_benchmark({"files": items}, modes=("merge@m", "remote-program@m"), progress=False)


def test_each_bench_apply_mode_names_who_runs_it():
    assert [runner_of(mode) for mode in ("merge", "forced", "remote-rewrite", "program@qwen2.5-coder-1.5b")] == [
        (None, "merge"),
        ("local", "forced"),
        ("remote", "rewrite"),
        ("qwen2.5-coder-1.5b", "program"),
    ]


def test_bench_apply_sets_a_remote_mode_beside_its_local_one():
    """A remote mode's summary counts the changes whose program and text are its local mode's
    (the same set, item and form) and its requests per change."""
    rows = [
        {"set": "s", "id": i, "form": "snippet", "mode": mode, "program": program, "text_sha256": text,
         "requests": requests, "applied": False, "exact": False, "passed": False, "lines_lost": 0,
         "change_dropped": 0, "invented": 0, "seconds": 1.0, "hard": []}
        for i, mode, program, text, requests in [
            ("a", "program", "P1", "T1", 0), ("a", "remote-program", "P1", "T1", 2),
            ("b", "program", "P2", "T2", 0), ("b", "remote-program", "P3", "T2", 4),
            ("c", "program", "P4", "T4", 0), ("c", "remote-program", "P5", "T5", 3),
        ]
    ]  # fmt: skip
    entry = summarize(rows, ["program", "remote-program"])["snippet/remote-program"]
    assert entry["against_local"] == {"mode": "program", "pairs": 3, "same_program": 1, "same_text": 2}
    assert entry["requests_per_change"] == 3.0
    table = format_tables({"sets": {"s": {"summary": {"snippet/remote-program": entry}}}})
    assert "snippet/remote-program against program: the same program on 1/3, the same text on 2/3" in table
