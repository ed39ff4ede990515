"""Edit formats: each written from a pair, read back and applied; the strict editors refuse what they must."""

from collections import Counter

import pytest
from hypothesis import event, given, settings
from quick import examples
from strategies import edits

from copyedit_lsp.bench.formats import (
    DIVIDER,
    REPLACE,
    SEARCH,
    FormatError,
    apply_search_replace,
    apply_unified_diff,
    formats_benchmark,
    search_replace_text,
    unified_diff_text,
)
from copyedit_lsp.common.datasets import load_items
from copyedit_lsp.core.resolver import split_lines


@settings(max_examples=examples(800), deadline=None)
@given(edits())
def test_unified_diff_round_trips_every_edit(pair):
    before, after = pair
    assert apply_unified_diff(before, unified_diff_text(before, after)) == after


def _terminated(text: str) -> str:
    """``text`` with a final line break if it has a last line without one (as the blocks match it)."""
    return text if not text or text.endswith(("\n", "\r")) else text + "\n"


@settings(max_examples=examples(800), deadline=None)
@given(edits())
def test_search_replace_applies_its_blocks_or_says_why(pair):
    """Blocks apply cleanly unless an anchor is ambiguous (first match), nothing can be anchored, or the
    edit adds or removes the final line break, which whole-line blocks cannot say."""
    before, after = pair
    blocks = search_replace_text(before, after)
    try:
        applied, ambiguous = apply_search_replace(before, blocks)
    except FormatError:  # only an edit of an empty document has nothing to anchor on
        assert before == ""
        return
    event(f"ambiguous anchors: {ambiguous > 0}")
    ends = ("\n", "\r")
    if ambiguous:
        check_first_matches(before, after, blocks, applied, ambiguous)
    elif before.endswith(ends) == after.endswith(ends) or not before:
        assert applied == after
    else:
        assert applied.rstrip("\r\n") == after.rstrip("\r\n")


def check_first_matches(before: str, after: str, blocks: str, applied: str, ambiguous: int) -> None:
    """Ambiguous anchors: the blocks, applied one at a time to ``before`` with a final line break (as
    they match it), each replace the first whole-line match of their search text, the ambiguity is
    counted block by block, and they give ``applied`` (without the final break it lacked). Each block
    took out its search text and put in its replacement, if not where meant: the text has the
    characters of ``after``, each as often (lines may not be: a lone CR put before a LF makes one line).
    """
    assert 0 < ambiguous <= blocks.count(SEARCH)
    text, counted = _terminated(before), 0
    for block in blocks.split(REPLACE)[:-1]:
        search, _, replace = block.removeprefix(SEARCH).partition(DIVIDER)
        lines, wanted = split_lines(text), split_lines(search)
        matches = [i for i in range(len(lines) - len(wanted) + 1) if lines[i : i + len(wanted)] == wanted]
        text, one = apply_search_replace(text, block + REPLACE)
        first = matches[0]
        assert text == "".join([*lines[:first], replace, *lines[first + len(wanted) :]])
        assert one == (len(matches) > 1)
        counted += one
    assert counted == ambiguous
    unterminated = before != _terminated(before)
    assert applied == (text[:-1] if unterminated and text.endswith("\n") else text)
    assert Counter(text) == Counter(_terminated(after))


def test_unified_diff_marks_a_last_line_without_a_break():
    diff = unified_diff_text("a\nb", "a\nc")
    assert "\\ No newline at end of file" in diff
    assert apply_unified_diff("a\nb", diff) == "a\nc"


def test_unified_diff_is_applied_strictly():
    before = "1\n2\n3\n4\n5\n6\n7\n8\n"
    diff = unified_diff_text(before, before.replace("5\n", "five\n"))
    with pytest.raises(FormatError, match="does not match"):
        apply_unified_diff("0\n" + before, diff)  # every line moved by one: no fuzz, no offset
    with pytest.raises(FormatError, match="hunk header"):
        apply_unified_diff(before, "--- a\n+++ b\nnot a hunk\n")


def test_search_replace_takes_the_first_match_and_counts_the_ambiguity():
    before = "x = 1\nprint(x)\nx = 1\nprint(x)\n"
    after = "x = 1\nprint(x)\nx = 2\nprint(x)\n"
    blocks = search_replace_text(before, after)
    assert blocks == "<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE\n"
    applied, ambiguous = apply_search_replace(before, blocks)
    assert ambiguous == 1 and applied == "x = 2\nprint(x)\nx = 1\nprint(x)\n" != after


def test_search_replace_matches_whole_lines_only():
    with pytest.raises(FormatError, match="not found"):
        apply_search_replace("    return x\n", "<<<<<<< SEARCH\n  return x\n=======\n  return y\n>>>>>>> REPLACE\n")


def test_search_replace_matches_a_last_line_without_a_break():
    before, after = "a\nreturn 1", "a\nreturn 2"
    assert apply_search_replace(before, search_replace_text(before, after)) == (after, 0)


def test_formats_on_the_shared_pairs():
    """Programs and diffs round-trip all 368 pairs; only search/replace may miss, by ambiguous anchors."""
    sets = {name: load_items(name) for name in ("humanevalfix-python", "humanevalfix-js", "quixbugs")}
    result = formats_benchmark(sets, str.split)
    assert sum(len(items) for items in sets.values()) == 368
    for name, formats in result["sets"].items():
        items = len(sets[name])
        assert formats["program"]["round_trip"] == formats["unified diff"]["round_trip"] == items
        assert formats["rewrite"]["round_trip"] == items and formats["rewrite"]["vs_rewrite"] == 1
        search = formats["search/replace"]
        assert items - search["round_trip"] <= search["ambiguous_items"]
        assert formats["unified diff"]["tokens"] > formats["program"]["tokens"]
