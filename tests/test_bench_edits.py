"""``copyedit bench edits``: the aggregates and the bound on known rows, the tests' three outcomes in rows and
tables, and real runs with the tiny model."""

import gzip
import json
import math

import pytest

from copyedit_lsp.bench.edits import (
    BASE_MODES,
    bound_table,
    edits_benchmark,
    format_tables,
    kernel_curve,
    summarize,
    write_outputs,
)
from copyedit_lsp.common.datasets import EditItem, load_items
from copyedit_lsp.decode.decoder import Decoder
from copyedit_lsp.decode.edit import EditOptions, EditResult, EditStats
from copyedit_lsp.decode.llama_model import LlamaModel
from copyedit_lsp.decode.prompt import Layout
from copyedit_lsp.decode.session import ModelSession

KERNEL = {"rows": [{"span": 1, "speedup": 1.0}, {"span": 16, "speedup": 3.0}, {"span": 256, "speedup": 4.0}]}


def row(item, mode, seconds, **extra):
    base = {
        "id": item,
        "mode": mode,
        "seconds": seconds,
        "exact": False,
        "passed": None,
        "decode_steps": 10,
        "chosen_tokens": 10,
        "output_tokens": 40,
        "spliced_tokens": 0,
        "splice_spans": [],
        "drafted_tokens": 0,
        "accepted_tokens": 0,
        "tokens": [1, 2],
    }
    return base | extra


def test_kernel_curve_interpolates_in_log_span_and_stays_flat_outside():
    s = kernel_curve(KERNEL)
    assert s(1) == 1.0 and s(16) == 3.0 and s(4) == pytest.approx(2.0) and s(64) == pytest.approx(3.5)
    assert s(0) == 1.0 and s(10_000) == 4.0


def test_summary_ratios_are_per_item_over_rewrite():
    rows = [
        row("a", "rewrite", 2.0, passed=True, exact=True),
        row("a", "lookup", 1.0, passed=True, tokens=[1, 2], drafted_tokens=10, accepted_tokens=5),
        row("b", "rewrite", 3.0, passed=False),
        row("b", "lookup", 1.0, passed=False, tokens=[1, 3], drafted_tokens=10, accepted_tokens=10),
    ]
    summary = summarize(rows, ["rewrite", "lookup"])
    assert summary["rewrite"]["speedup_median"] == 1.0
    assert summary["lookup"]["speedup_median"] == 2.5  # median of 2x and 3x
    assert summary["lookup"]["reference"] == "rewrite" and summary["lookup"]["same_tokens"] == 1
    assert summary["lookup"]["accepted_share"] == 0.75 and "accepted_share" not in summary["rewrite"]
    assert (summary["rewrite"]["exact"], summary["rewrite"]["passed"], summary["rewrite"]["tested"]) == (1, 1, 2)


def test_a_remote_mode_is_compared_with_its_local_mode():
    rows = [
        row("a", "rewrite", 2.0, text="x\n", requests=0),
        row("a", "remote-rewrite", 3.0, text="x\n", requests=1),
        row("b", "rewrite", 2.0, text="y\n", requests=0),
        row("b", "remote-rewrite", 5.0, text="z\n", requests=1),
    ]
    entry = summarize(rows, ["rewrite", "remote-rewrite"])["remote-rewrite"]
    assert entry["reference"] == "rewrite" and entry["same_text"] == 1 and "same_program" not in entry
    assert entry["latency_ratio_median"] == 2.0 and entry["requests_per_edit"] == 1  # median of 1.5x and 2.5x


class Answers:
    """An editor without a model: each edit's text is looked up by the text it was given."""

    def __init__(self, answers: dict[str, str]):
        self.answers = answers

    def warm(self, options):
        pass

    def edit(self, source, instruction, options=None, **_):
        return EditResult(None, self.answers[source], EditStats(mode="rewrite", total_seconds=1.0))


def test_tests_that_could_not_run_are_neither_passed_nor_failed():
    """Rows and tables tell a wrong edit from tests whose module is missing."""
    needs = "import copyedit_missing_module\n"
    items = [
        EditItem("right", "x = 1\n", "x = 2\n", "two", test="assert x == 2"),
        EditItem("wrong", "y = 1\n", "y = 2\n", "two", test="assert y == 2"),
        EditItem("missing", "z = 1\n", needs + "z = 2\n", "two", test="assert z == 2"),
    ]
    editor = Answers({"x = 1\n": "x = 2\n", "y = 1\n": "y = 3\n", "z = 1\n": needs + "z = 2\n"})
    result = edits_benchmark(editor, {"set": items}, modes=["rewrite"], progress=False)
    rows = result["sets"]["set"]["rows"]
    assert [(r["id"], r["passed"], r["tests"]) for r in rows] == [
        ("right", True, "passed"),
        ("wrong", False, "failed"),
        ("missing", None, "could_not_run"),
    ]
    entry = result["sets"]["set"]["summary"]["rewrite"]
    assert (entry["exact"], entry["passed"], entry["tested"], entry["untestable"]) == (2, 1, 2, 1)
    table = format_tables(result)
    assert "| mode | exact | tests passed | no result | tests could not run |" in table
    assert "| rewrite | 2/3 | 1/2 | 0 | 1 |" in table


def test_bound_charges_chosen_tokens_and_copies_by_the_kernel_curve():
    forced = row(
        "a",
        "forced",
        1.0,
        decode_steps=3,
        chosen_tokens=10,
        output_tokens=100,
        splice_spans=[16, 16],
        parses=True,
        one_call_per_splice=True,
        constraint_share=0.0,
    )
    rows = [row("a", "rewrite", 2.0), forced]
    result = {"sets": {"set": {"rows": rows, "summary": summarize(rows, ["rewrite", "forced"])}}}
    (entry,) = bound_table(result, KERNEL).values()
    assert entry["bound_median"] == pytest.approx(100 / (10 + 2 * 16 / 3.0))
    assert entry["free_copy_bound_median"] == 10 and entry["measured_median"] == 2.0
    assert entry["copied_share"] == pytest.approx(0.32)


class RecordingEditor:
    """Plumbing: records what each edit is given and returns the source unchanged."""

    def __init__(self):
        self.edits = []

    def warm(self, options):
        pass

    def choose(self, *args):
        return None

    def edit(self, source, instruction, options):
        self.edits.append((source, options))
        return EditResult(None, source, EditStats(mode=options.mode, total_seconds=1.0))


def test_chat_mode_asks_for_the_whole_file_as_a_chat_user_does():
    """``chat`` (the model asked plainly) edits the whole text with its own layout and no examples,
    whatever the run's; ``rewrite`` beside it edits the definition the instruction names."""
    before = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
    item = EditItem("1", before, before, "Make b return 3.", "python")
    editor = RecordingEditor()
    layout = Layout("instruction-first", "first", True)
    edits_benchmark(editor, {"s": [item]}, modes=["chat", "rewrite"], examples="default", layout=layout, progress=False)
    (chat_source, chat), (rewrite_source, rewrite) = editor.edits
    assert chat_source == before and (chat.mode, chat.layout, chat.examples) == (
        "rewrite",
        Layout("code-first", "plain", False),
        "none",
    )
    assert rewrite_source == "def b():\n    return 2\n" and (rewrite.layout, rewrite.examples) == (layout, "default")


@pytest.mark.model
def test_a_real_run_of_every_mode(tiny_model_path, tmp_path):
    decoder = Decoder(ModelSession(LlamaModel(tiny_model_path, n_ctx=4096, n_threads=2)))
    sets = {"py": load_items("humanevalfix-python", limit=2), "quixbugs": load_items("quixbugs", limit=1)}
    modes = [*BASE_MODES, "forced-plain"]
    result = edits_benchmark(decoder, sets, modes=modes, progress=False)
    result["bounds"] = bound_table(result, KERNEL)
    for name, items in sets.items():
        rows = result["sets"][name]["rows"]
        assert [(r["id"], r["mode"]) for r in rows] == [(i.id, m) for i in items for m in modes]  # interleaved
        forced = [r for r in rows if r["mode"] == "forced"]
        assert all(r["exact"] and r["passed"] and r["parses"] and r["one_call_per_splice"] for r in forced)
        summary = result["sets"][name]["summary"]
        assert summary["forced"]["exact"] == len(items) and summary["rewrite"]["speedup_median"] == 1.0
        assert all(r["spliced_tokens"] == 0 for r in rows if r["mode"] in ("program-none", "rewrite", "lookup"))
        # a script's tokens do not depend on the speedups; what they cost does
        assert summary["forced-plain"]["reference"] == "forced" and summary["forced-plain"]["same_tokens"] == len(items)
        assert summary["forced"]["decode_steps"] < summary["forced-plain"]["decode_steps"]
        assert math.isfinite(result["bounds"][name]["bound_median"])
    # each mode's fixed prefix was warm before its edit was timed, and nothing more: every edit evaluated
    # its item's own tokens (lookup follows rewrite with the same prompt and must not reuse it); a
    # program that gave way to a rewrite evaluated them twice, once for each attempt
    for item, rows in zip(
        sets["py"],
        (result["sets"]["py"]["rows"][: len(modes)], result["sets"]["py"]["rows"][len(modes) :]),
        strict=False,
    ):
        code = len(decoder.llama.tokenize(item.before))
        prompt = decoder.prompt(item.before, item.instruction, EditOptions(mode="program", language="python"))
        bound = code + 40 + 4 * item.before.count("\n")
        assert bound < len(prompt)  # the program prompt's fixed prefix (its examples) is more than an item's part
        for r in rows:
            attempts = 2 if r["fallback"] else 1
            assert code * attempts < r["prefill_tokens"] < bound * attempts, (r["mode"], r["fallback"])
    paths = write_outputs(result, tmp_path)
    assert all(path.stat().st_size > 0 for path in paths)
    assert paths[0].name == "edits.json.gz" and json.loads(gzip.decompress(paths[0].read_bytes()))["modes"] == modes
    assert "| forced | 2/2 |" in paths[1].read_text()
    decoder.llama.close()


@pytest.mark.model
def test_an_item_that_raises_is_recorded_and_a_killed_run_resumes(tiny_model_path, tmp_path):
    """One item too long for a fixed context: its rows say why and the run goes on. The rows are
    kept as they are measured; a run killed mid-line resumes and measures only what is missing."""
    from copyedit_lsp.bench.edits import RowLog, format_tables
    from copyedit_lsp.common.datasets import EditItem

    decoder = Decoder(ModelSession(LlamaModel(tiny_model_path, n_ctx=1024, n_threads=2)))
    long = "".join(f"value_{i} = {i}\n" for i in range(300))
    items = load_items("humanevalfix-python", limit=2)
    items.insert(1, EditItem("long", long, long, "Keep it."))
    modes = ["rewrite", "forced"]
    path = tmp_path / "rows.jsonl"
    first = edits_benchmark(decoder, {"py": items}, modes=modes, progress=False, log=RowLog(path))
    rows = first["sets"]["py"]["rows"]
    assert len(rows) == 6 and [r["id"] for r in rows if "error" in r] == ["long", "long"]
    assert all("ContextOverflow" in r["error"] and not r["passed"] for r in rows if r["id"] == "long")
    assert all(r["exact"] for r in rows if r["mode"] == "forced" and r["id"] != "long")
    summary = first["sets"]["py"]["summary"]
    assert summary["forced"]["errors"] == 1 and summary["forced"]["exact"] == 2 and summary["forced"]["items"] == 3
    assert "| forced | 2/3 | 2/3 | 1 |" in format_tables(first)
    assert [json.loads(line) for line in path.read_text().splitlines()] == rows

    kept = path.read_text().splitlines()[:3]
    path.write_text("\n".join(kept) + '\n{"set": "py", "id": "Python/1", "mo')  # killed while writing row 4
    calls = decoder.llama.counters.calls
    again = edits_benchmark(decoder, {"py": items}, modes=modes, progress=False, log=RowLog(path, resume=True))
    assert decoder.llama.counters.calls > calls  # the missing rows were measured
    assert again["sets"]["py"]["rows"][:3] == rows[:3]
    assert [(r["id"], r["mode"]) for r in again["sets"]["py"]["rows"]] == [(r["id"], r["mode"]) for r in rows]
    assert len(path.read_text().splitlines()) == 6 and again["sets"]["py"]["summary"]["forced"]["exact"] == 2
    calls = decoder.llama.counters.calls
    edits_benchmark(decoder, {"py": items}, modes=modes, progress=False, log=RowLog(path, resume=True))
    assert decoder.llama.counters.calls == calls  # nothing left to measure
    decoder.close()
