"""The decoder on real models: the grammar holds, copies are spliced in one batch, forced mode is exact."""

import itertools
import random
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from fixes import fix_problems

from copyedit_lsp.bench.changes import build_change
from copyedit_lsp.bench.checks import Outcome, run_tests
from copyedit_lsp.bench.edits import ABLATIONS, first_divergence
from copyedit_lsp.common.datasets import load_items
from copyedit_lsp.core.change import read_change
from copyedit_lsp.core.grammar import digit_choices
from copyedit_lsp.core.merge import merge
from copyedit_lsp.core.program import GEN_CLOSE, ChangeCopy, Copy, Gen, Program, parse_program
from copyedit_lsp.core.resolver import oracle_program, resolve
from copyedit_lsp.decode.decoder import Decoder
from copyedit_lsp.decode.edit import (
    CUTS,
    NO_SPEEDUPS,
    Cancelled,
    ContextOverflow,
    DecodeError,
    EditOptions,
    Speedups,
    newline_of,
    repeats_input,
)
from copyedit_lsp.decode.llama_model import LlamaModel, LlamaModelError, Vocabulary
from copyedit_lsp.decode.models import ModelError
from copyedit_lsp.decode.prompt import SourceView, as_model_sees, rewrite_messages
from copyedit_lsp.decode.refusal import check
from copyedit_lsp.decode.session import ModelSession
from copyedit_lsp.decode.writer import decoded_program

pytestmark = pytest.mark.model


@pytest.fixture(scope="module")
def tiny(tiny_model_path):
    decoder = Decoder(ModelSession(LlamaModel(tiny_model_path, n_ctx=4096, n_threads=2)))
    yield decoder
    decoder.llama.close()


@pytest.fixture(scope="module")
def qwen(small_model_path):
    decoder = Decoder(ModelSession(LlamaModel(small_model_path, n_ctx=4096, n_threads=2)))
    yield decoder
    decoder.llama.close()


def chosen_tokens(decoder: Decoder, program: Program, n: int) -> int:
    """The tokens a perfect model chooses for ``program``: branch points, digits with a choice, gen bodies."""

    def branch_points(name: str, first: int) -> int:
        alive, depth, points = dict(decoder.tokens.ops), 0, 0
        if first > n:  # ordered copies: none can start past the last line
            alive.pop("copy")
        while len(alive) > 1:
            token = decoder.tokens.ops[name][depth]
            points += len({t[depth] for t in alive.values()}) > 1
            alive = {k: v for k, v in alive.items() if v[depth] == token}
            depth += 1
        return points

    def digit_steps(number: int, lo: int) -> int:
        text, steps = str(number), 0
        for k in range(len(text) + 1):
            digits, can_end = digit_choices(text[:k], lo, n)
            steps += len(digits) + can_end > 1
        return steps

    total, first = 0, 1
    for op in program.ops:
        if isinstance(op, Copy):
            total += branch_points("copy", first) + digit_steps(op.start, first) + digit_steps(op.end, op.start)
            first = op.end + 1
        else:
            script = decoder.llama.tokenize(as_model_sees(op.text) + GEN_CLOSE)  # chosen until it reads </gen>
            pieces = itertools.accumulate(decoder.llama.piece(t) for t in script)
            total += branch_points("gen", first) + next(k for k, text in enumerate(pieces, 1) if b"</gen>" in text)
    return total + branch_points("end", first)


def near_tie(decoder: Decoder, prompt: list[int], reference: tuple, other: tuple) -> tuple[np.ndarray, int, int]:
    """Where ``other`` first parts from ``reference``: the one-token-at-a-time logits there and the two
    tokens, after an assertion that their logits are less than 0.5 apart."""
    at, gap, logits = first_divergence(decoder, prompt, reference, other)
    assert gap is not None and gap < 0.5, (at, gap)
    return logits, reference[at], other[at]


@pytest.mark.timeout(900)  # 164 items forced through the tiny model: 176 s on a quiet 2-core machine
def test_forced_mode_reproduces_every_humanevalfix_python_item(tiny):
    """Every item, with and without the speedups: the same text, program, tokens and chosen tokens;
    each copy one splice call; the speedups take far fewer decode steps."""
    items = load_items("humanevalfix-python")
    assert len(items) == 164
    steps = {True: 0, False: 0}
    for k, item in enumerate(items):
        program = oracle_program(item.before, item.after)
        n = len(SourceView.of(item.before).lines)
        copies = [op for op in program.ops if isinstance(op, Copy)]
        results = []
        for fast in (True, False) if k < 40 else (True,):
            speedups = Speedups() if fast else NO_SPEEDUPS
            result = tiny.edit(
                item.before, item.instruction, EditOptions(mode="forced", program=program, speedups=speedups)
            )
            assert result.text == item.after, item.id
            assert result.program == program, item.id
            assert result.stats.chosen_tokens == chosen_tokens(tiny, program, n), item.id
            assert result.stats.splice_calls == len(copies)
            assert result.stats.splice_eval_calls == [1] * len(copies)
            assert result.stats.accepted_tokens <= result.stats.drafted_tokens
            steps[fast] += result.stats.decode_steps if k < 40 else 0
            results.append(result)
        assert len({r.tokens for r in results}) == 1, item.id
    assert 0 < steps[True] < steps[False] / 3


def test_program_mode_with_and_without_each_speedup(qwen):
    """Greedy program mode writes the same tokens with each speedup off (and all off), but for near
    ties: drafts and merged batches are evaluated in other batches, which llama.cpp rounds differently."""
    items = load_items("humanevalfix-python", limit=6)
    plain = EditOptions(language="python", fallback=False)  # the programs themselves are compared
    fast = {item.id: qwen.edit(item.before, item.instruction, plain) for item in items}
    steps = {name: 0 for name in ABLATIONS}
    for name, speedups in ABLATIONS.items():
        same = 0
        for item in items:
            slow = qwen.edit(item.before, item.instruction, replace(plain, speedups=speedups))
            steps[name] += slow.stats.decode_steps
            if slow.tokens == fast[item.id].tokens:
                assert slow.program == fast[item.id].program
                same += 1
            else:
                near_tie(qwen, qwen.prompt(item.before, item.instruction), slow.tokens, fast[item.id].tokens)
        assert same >= len(items) // 3, name
    assert sum(r.stats.decode_steps for r in fast.values()) < steps["plain"] / 2


def test_drafts_guess_the_line_after_a_gen(tiny):
    view = SourceView.of("a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n")
    drafter = tiny.drafter(view)
    drafter.line = 2
    assert drafter.resume_line("b = 20\n") == 3  # one line rewritten
    assert drafter.resume_line("b = 2\nc = 3\nd = 4\n") == 5  # lines written out as they were
    assert drafter.resume_line("b = 2\nx = 0\nc = 3\n") == 4  # a line inserted
    assert drafter.resume_line("") == 2
    assert tiny.llama.detokenize(drafter.copy_tag(3)) == '<copy lines="3-5"/>\n' and drafter.copy_tag(6) == []
    assert tiny.llama.detokenize(drafter.next_op([Copy(1, 1)], with_body=True)).startswith("<gen>\nb = 2")


def test_forced_mode_without_splice_evaluates_no_copied_text(tiny):
    item = load_items("quixbugs", limit=1)[0]
    program = oracle_program(item.before, item.after)
    result = tiny.edit(item.before, item.instruction, EditOptions(mode="forced", program=program, splice="none"))
    assert result.text == item.after
    assert result.stats.spliced_tokens == 0 and result.stats.splice_calls == 0


def test_program_mode_on_real_edits_with_the_05b(qwen):
    """20 HumanEvalFix items, the copy check off: programs parse and stay in range; each copy is one
    splice of its lines; copying programs take fewer decode steps than the tokens they output (summed:
    a program that copies one short line and regenerates the rest pays more in tags than it saves)."""
    steps = output = 0
    for item in load_items("humanevalfix-python", limit=20):
        result = qwen.edit(
            item.before, item.instruction, EditOptions(language="python", copy_check=0.0, fallback=False)
        )
        view = SourceView.of(item.before)
        program = parse_program(result.program.to_text(), n_lines=len(view.lines))
        assert resolve(program, item.before) == result.text
        copies = [op for op in program.ops if isinstance(op, Copy)]
        spans = [len(qwen.llama.tokenize(view.span(c.start, c.end))) for c in copies]
        assert result.stats.splice_spans == spans, item.id
        assert result.stats.splice_eval_calls == [1] * len(copies), item.id
        if copies:
            steps += result.stats.decode_steps
            output += result.stats.output_tokens
    assert 0 < steps < output


@pytest.fixture(scope="module")
def selector(small_model_path):
    decoder = Decoder.load("qwen2.5-coder-0.5b", n_threads=2)  # the shipped selector by default
    yield decoder
    decoder.close()


def test_a_copy_the_model_doubts_stops_there_and_the_model_rewrites_the_line(selector):
    """With the shipped selector: the copy over the buggy line of HumanEvalFix Python/8 is cut
    before that line and the model writes a fix that passes the item's tests (with the check off
    it copies the bug, and they fail); on 10 items every copy the check cut was spliced once more
    up to the doubted line or dropped, so the splices number the program's copies plus the doubts,
    and programs still resolve."""
    items = load_items("humanevalfix-python", limit=10)
    item = next(i for i in items if i.id == "Python/8")
    checked = selector.edit(item.before, item.instruction, EditOptions(language="python"))
    unchecked = selector.edit(item.before, item.instruction, EditOptions(language="python", copy_check=0.0))
    assert checked.stats.doubted_copies >= 1 and run_tests(item, checked.text).outcome == Outcome.PASSED
    assert unchecked.stats.doubted_copies == 0 and run_tests(item, unchecked.text).outcome == Outcome.FAILED
    doubts = 0
    for item in items:
        result = selector.edit(item.before, item.instruction, EditOptions(language="python", fallback=False))
        copies = [op for op in result.program.ops if isinstance(op, Copy)]
        assert len(result.stats.splice_spans) == len(copies) + result.stats.doubted_copies, item.id
        assert resolve(result.program, item.before) == result.text
        doubts += result.stats.doubted_copies
    assert doubts >= 2


def unchanged_gens(program: Program, source: str) -> list[int]:
    """The indices of the gens of ``program`` that only repeat the input after the op before them."""
    view, after, found = SourceView.of(source), 1, []
    for index, op in enumerate(program.ops):
        if isinstance(op, Copy):
            after = op.end + 1
        elif repeats_input(view, as_model_sees(op.text), after):
            found.append(index)
    return found


def test_the_demo_edit_is_right_and_no_gen_only_repeats_the_input(selector):
    """The demo's edit, as `make demo` runs it: the selector's own program (no fallback) fixes mean,
    keeps its docstring and duplicates nothing (v3 got there because a gen that changes nothing
    cannot end: it opened one at line 5 and wrote on to the fix).  On 10 HumanEvalFix items no
    program holds a gen that only repeats the input (the first selectors wrote one in most of them),
    and every program resolves."""
    source = "".join((Path(__file__).parents[1] / "examples" / "stats.py").read_text().splitlines(True)[:6])
    result = selector.edit(
        source, "Fix the bug in mean: it must return the plain average.", EditOptions(language="python")
    )
    assert fix_problems(source, result.text, "mean", ([1, 2, 6],), 3.0) == [] and result.stats.fallback is None
    for item in load_items("humanevalfix-python", limit=10):
        result = selector.edit(item.before, item.instruction, EditOptions(language="python", fallback=False))
        assert unchanged_gens(result.program, item.before) == [], (item.id, result.program.to_text())
        assert resolve(result.program, item.before) == result.text


def test_a_gen_cannot_open_an_op_inside_itself(selector):
    """HumanEvalFix JavaScript/0, /1 and /6: unable to end a gen that changed nothing yet, the
    shipped selector wrote `<gen>` (or `<copy lines=...>`) as a line of code in each (54 of the 164
    JavaScript programs did).  Those openings are masked in a gen as the grammar rules them out:
    no text holds one, and every program resolves."""
    items = {item.id: item for item in load_items("humanevalfix-js", limit=7)}
    for name in ("JavaScript/0", "JavaScript/1", "JavaScript/6"):
        item = items[name]
        result = selector.edit(item.before, item.instruction, EditOptions(language="javascript", fallback=False))
        assert not re.search(r"<(copy|gen>|program>|/program>)", result.text), (name, result.program.to_text())
        assert resolve(result.program, item.before) == result.text


def test_second_edit_reuses_the_prompt_prefix(tiny):
    first = tiny.edit("x = 1\n", "Rename x to y.", EditOptions(mode="rewrite", language="python"))
    tiny.edit("a = 2\nb = 3\n", "Swap the values.", EditOptions(mode="rewrite", language="python"))
    second = tiny.edit("x = 1\n", "Rename x to y.", EditOptions(mode="rewrite", language="python"))
    assert (
        first.stats.prefill_tokens + first.stats.prefix_reused_tokens
        == second.stats.prefill_tokens + second.stats.prefix_reused_tokens
    )
    examples = rewrite_messages("", "", "python")[:-1]  # the system prompt (rewrite has no examples)
    shared = tiny.llama.tokenize(tiny.session.template.render(examples, ""), special=True)
    assert second.stats.prefix_cache_hit
    assert second.stats.prefix_reused_tokens >= len(shared) - 2  # system prompt and examples not re-evaluated
    assert second.stats.prefill_tokens < first.stats.prefill_tokens + first.stats.prefix_reused_tokens // 2


def test_document_longer_than_the_context_fails_before_decoding(tiny_model_path):
    decoder = Decoder(ModelSession(LlamaModel(tiny_model_path, n_ctx=1024, n_threads=2)))
    calls = decoder.llama.counters.calls
    with pytest.raises(ContextOverflow, match="do not fit the model's context of 1024 tokens"):
        decoder.edit("".join(f"value_{i} = {i}\n" for i in range(400)), "Double every value.")
    assert decoder.llama.counters.calls == calls
    decoder.llama.close()


def test_a_context_sized_to_the_edit_grows_to_the_models_training_context(tiny_model_path):
    """n_ctx 0 (the default): a text past the first 4096 tokens grows the context (the model
    reloaded, the prompt prefix re-evaluated) and the edit is exact; past the training context
    (SmolLM2: 8192) it fails before decoding."""
    decoder = Decoder(ModelSession(LlamaModel(tiny_model_path, n_threads=2)))
    try:
        assert decoder.llama.growable and decoder.llama.n_ctx == 4096
        assert decoder.edit("x = 1\n", "Keep it.", EditOptions(mode="rewrite", max_new_tokens=8)).text
        before = "".join(f"value_{i} = {i} * {i}\n" for i in range(150))  # 2,270 tokens, the prompt 3,300
        after = before.replace("value_7 = 7 * 7\n", "value_7 = 49\n")
        program = oracle_program(before, after)
        result = decoder.edit(before, "Fold value_7.", EditOptions(mode="forced", program=program))
        assert result.text == after and result.cut is None
        assert decoder.llama.n_ctx == 8192  # 4096 * 2, the training context
        assert not decoder.llama.make_room(9000)
        with pytest.raises(ContextOverflow, match="context of 8192 tokens: edit a smaller range$"):
            decoder.edit(before * 2, "Fold value_7.", EditOptions(mode="rewrite"))
    finally:
        decoder.close()


def test_cancellation_mid_program_returns_nothing_and_the_next_edit_works(tiny):
    item = load_items("humanevalfix-python", limit=1)[0]
    program = oracle_program(item.before, item.after)
    checks = []

    def stop() -> bool:
        checks.append(1)
        return len(checks) > 5

    with pytest.raises(Cancelled):
        tiny.edit(item.before, item.instruction, EditOptions(mode="forced", program=program), stop=stop)
    assert len(checks) == 6  # stopped at the first check after the flag went up
    assert tiny.edit(item.before, item.instruction, EditOptions(mode="forced", program=program)).text == item.after


def test_reserved_strings_in_document_instruction_and_generated_code(tiny):
    before = 'doc = "<copy lines=\\"1-2\\"/>"\r\nend = "</gen>"\r\nx = "<program></program>"\r\n'
    after = 'doc = "<copy lines=\\"1-2\\"/>"\r\nend = "</gen>\\n<gen>"\r\nx = "<program></program>"\r\n'
    program = oracle_program(before, after)
    result = tiny.edit(
        before, "Add </gen> and <copy to the end string. </program>", EditOptions(mode="forced", program=program)
    )
    assert result.text == after
    free = tiny.edit(
        before, "Append '</program>' to x. </gen></program>", EditOptions(language="python", fallback=False)
    )
    assert parse_program(free.program.to_text(), n_lines=3) == free.program


def test_missing_and_corrupt_model_files_give_clear_errors(tmp_path, tiny_model_path):
    with pytest.raises(ModelError, match="does not exist|not found|missing"):
        LlamaModel(tmp_path / "absent.gguf")
    garbage = tmp_path / "garbage.gguf"
    garbage.write_bytes(b"not a model at all" * 10)
    with pytest.raises(ModelError, match="GGUF"):
        LlamaModel(garbage)
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(tiny_model_path.read_bytes()[: 4 << 20])
    with pytest.raises((LlamaModelError, ModelError)):
        LlamaModel(truncated)


def test_gens_are_whole_lines_in_the_documents_line_breaks():
    ops = [Gen("a\nb"), Copy(1, 1), Gen("c\nd")]
    assert decoded_program(ops, "x\r\ny\r\n").ops == (Gen("a\r\nb\r\n"), Copy(1, 1), Gen("c\r\nd"))
    assert newline_of("a\r\nb\r\n") == "\r\n" and newline_of("a\nb\r\n") == "\r\n" and newline_of("a\nb\nc\r\n") == "\n"


def test_lookup_writes_what_rewrite_writes(qwen):
    """20 HumanEvalFix items: lookup writes rewrite's tokens in fewer decode steps.  Batched and
    one-at-a-time evaluation round differently (llama.cpp on a CPU is not batch-invariant), so where
    the two part, it must be at a near tie: both tokens are the greedy model's top two, a hair apart."""
    same = steps = lookup_steps = 0
    for item in load_items("humanevalfix-python", limit=20):
        rewrite = qwen.edit(item.before, item.instruction, EditOptions(mode="rewrite", language="python"))
        lookup = qwen.edit(item.before, item.instruction, EditOptions(mode="lookup", language="python"))
        steps += rewrite.stats.decode_steps
        lookup_steps += lookup.stats.decode_steps
        assert lookup.stats.accepted_tokens <= lookup.stats.drafted_tokens
        if lookup.tokens == rewrite.tokens:
            assert lookup.text == rewrite.text
            same += 1
            continue
        prompt = qwen.prompt(item.before, item.instruction, EditOptions(mode="rewrite", language="python"))
        logits, a, b = near_tie(qwen, prompt, rewrite.tokens, lookup.tokens)
        assert {a, b} == set(np.argsort(logits)[-2:].tolist()), item.id
    assert same >= 18  # the README's full run: 162 of 164 the same tokens
    assert lookup_steps < steps / 2


def test_copies_are_ordered_by_default(tiny):
    """By default a copy never starts at or before the previous copy's end (nine copies of a two-line
    function cannot happen); ``ordered=False`` lets copies go back."""
    for item in load_items("humanevalfix-python", limit=6):
        result = tiny.edit(item.before, item.instruction, EditOptions(language="python", fallback=False))
        copies = [op for op in result.program.ops if isinstance(op, Copy)]
        assert all(later.start > earlier.end for earlier, later in zip(copies, copies[1:], strict=False)), item.id
    with pytest.raises(DecodeError, match="outside"):
        tiny.edit(
            "a\nb\nc\nd\n", "Swap the halves.", EditOptions(mode="forced", program=Program((Copy(3, 4), Copy(1, 2))))
        )
    swapped = tiny.edit(
        "a\nb\nc\nd\n",
        "Swap the halves.",
        EditOptions(mode="forced", program=Program((Copy(3, 4), Copy(1, 2))), ordered=False),
    )
    assert swapped.text == "c\nd\na\nb\n"


def test_example_sets_change_the_prompt(tiny):
    prompts = {
        name: tiny.prompt("x = 1\n", "Rename x.", EditOptions(examples=name))
        for name in ("none", "default", "extended")
    }
    assert len(prompts["none"]) < len(prompts["default"]) < len(prompts["extended"])
    assert "count_words" in tiny.llama.detokenize(prompts["extended"])
    assert "count_words" not in tiny.llama.detokenize(prompts["default"])
    with pytest.raises(ValueError, match="examples"):
        tiny.edit("x = 1\n", "Rename x.", EditOptions(examples="many"))


def test_a_restored_snapshot_gives_the_same_logits(tiny):
    llama = tiny.llama
    first = llama.tokenize("def add(a, b):\n    return a + b\n")
    llama.prefill(first)
    expected = llama.eval(llama.tokenize(" #"))
    llama.truncate(len(first))
    snapshot = llama.snapshot()
    llama.prefill(llama.tokenize("something else entirely, and longer than the first text"))
    llama.restore(snapshot)
    assert llama.cached == first
    np.testing.assert_array_equal(llama.eval(llama.tokenize(" #")), expected)


def test_rows_asked_for_are_the_rows_of_a_full_evaluation(tiny):
    """The copy check asks llama.cpp for logits only before the tokens it judges (a row is the
    whole vocabulary): those rows are the ones every row would give, the others None."""
    llama = tiny.llama
    prompt = llama.tokenize("def add(a, b):\n")
    tokens = llama.tokenize("    total = a + b\n    return total\n")
    llama.prefill(prompt)
    full = llama.eval(tokens, logits_from=0)
    llama.truncate(len(prompt))
    wanted = [index % 3 == 1 or index == len(tokens) - 1 for index in range(len(tokens))]
    rows = llama.eval_rows(tokens, wanted)
    assert llama.cached == prompt + tokens
    assert [row is not None for row in rows] == wanted
    for row, expected in zip(rows, full, strict=True):
        if row is not None:
            np.testing.assert_allclose(row, expected, rtol=1e-4, atol=1e-4)


def test_the_vocabulary_alone_tokenizes_like_the_model(tiny, tiny_model_path):
    vocabulary = Vocabulary(tiny_model_path)
    text = 'def f(x):\r\n    return "<copy lines=\\"1-2\\"/>" + 日本\n'
    assert vocabulary.tokenize(text) == tiny.llama.tokenize(text)
    vocabulary.close()


def test_an_output_cut_short_says_so(tiny, tiny_model_path):
    """A result the budget or the context cut short is marked with why (the server and the CLI
    refuse it); one the model ended itself is not."""
    item = load_items("humanevalfix-python", limit=1)[0]
    scripted = EditOptions(mode="forced", program=oracle_program(item.before, item.after))
    assert tiny.edit(item.before, item.instruction, scripted).cut is None
    before = "def add(a, b):\n    return a + b\n"
    budget = EditOptions(mode="rewrite", language="python", max_new_tokens=8)
    cut = tiny.edit(before, "Keep it.", budget)
    assert cut.cut == "max_new_tokens" and cut.stats.chosen_tokens == 8
    long_gen = Program((Gen("".join(f"value_{i} = {i}\n" for i in range(300))),))
    small = Decoder(ModelSession(LlamaModel(tiny_model_path, n_ctx=640, n_threads=2)))
    try:
        result = small.edit("x = 1\n", "Write many values.", EditOptions(mode="forced", program=long_gen))
    finally:
        small.close()
    assert result.cut == "context" and result.text != long_gen.ops[0].text


def test_a_program_cut_short_gives_way_to_a_lookup_rewrite(tiny):
    """Program mode whose output is cut short decodes the edit again as lookup (the same text as
    lookup alone), keeps its program as ``replaced`` and counts both attempts; off, the cut program
    stands."""
    before = "def add(a, b):\n    return a + b\n"
    options = EditOptions(language="python", max_new_tokens=8)
    kept = tiny.edit(before, "Subtract instead.", EditOptions(language="python", max_new_tokens=8, fallback=False))
    assert kept.cut == "max_new_tokens" and kept.program is not None and kept.stats.fallback is None
    result = tiny.edit(before, "Subtract instead.", options)
    lookup = tiny.edit(before, "Subtract instead.", EditOptions(mode="lookup", language="python", max_new_tokens=8))
    assert result.stats.fallback == "cut" and result.program is None and result.replaced == kept.program
    assert (result.text, result.tokens, result.cut) == (lookup.text, lookup.tokens, lookup.cut)
    assert result.stats.chosen_tokens == kept.stats.chosen_tokens + lookup.stats.chosen_tokens


def test_a_gen_at_the_decoders_length_cap_is_cut_short_and_refused(tiny):
    """A gen that reaches the decoder's cap on a gen's length (``max_gen_tokens``) is closed there on
    a whole line and the program goes no further: the result says it was cut by the cap, and the
    check the server and ``copyedit apply`` make refuses it with why.  Under the cap the same script
    is complete."""
    long_gen = Program((Gen("".join(f"value_{i} = {i}\n" for i in range(12))),))
    scripted = EditOptions(mode="forced", program=long_gen, language="python")
    capped = Decoder(tiny.session, max_gen_tokens=24)  # the same model; the cap of 512 made small
    result = capped.edit("x = 1\n", "Write many values.", scripted)
    assert result.cut == "max_gen_tokens"
    (gen,) = result.program.ops
    assert gen.text.endswith("\n") and len(gen.text) < len(long_gen.ops[0].text)
    assert result.text == gen.text
    why = check("x = 1\n", result.text, result, "python")
    assert why.message == f"the model's output was cut short: {CUTS['max_gen_tokens']}" and why.exit_status == 3
    whole = tiny.edit("x = 1\n", "Write many values.", scripted)
    assert whole.cut is None and whole.program == long_gen


def test_an_apply_without_an_apply_selector_never_runs_the_edits_selector(selector):
    """Without an apply selector, program mode is a lookup rewrite, and with ``fallback`` off the
    base model's apply program: never one written with the edit selector's adapter, which was
    trained on edit programs (on this snippet it writes a gen the base model does not)."""
    edits_only, base = (
        Decoder(ModelSession(selector.llama, selector=selector.session.selector)),
        Decoder(ModelSession(selector.llama)),
    )
    item = load_items("humanevalfix-python-files", limit=2, seed=1)[1]
    built = build_change(item.before, item.after, "snippet", "python", random.Random(f"1/{item.id}/snippet"))
    change = read_change(built.text, "snippet")
    options = EditOptions(language="python", fallback=False)
    program = edits_only.apply(item.before, change, options).program
    assert program is not None and program == base.apply(item.before, change, options).program
    looked_up = edits_only.apply(item.before, change, EditOptions(language="python"))
    assert looked_up.program is None and looked_up.stats.fallback == "selector"


@pytest.fixture(scope="module")
def applying(small_model_path):
    decoder = Decoder.load("qwen2.5-coder-0.5b", n_threads=2, apply_selector="qwen2.5-coder-0.5b-v4")
    yield decoder
    decoder.close()


def test_an_apply_drafted_from_the_merge_writes_what_the_model_chooses_in_fewer_steps(applying):
    """The merge's program is only a draft: with it or without, a selector writes the same apply
    program (but for near ties), and the draft saves decode steps."""
    selector = applying
    items = load_items("humanevalfix-python-files", limit=4, seed=1)
    steps = {True: 0, False: 0}
    for item in items:
        built = build_change(item.before, item.after, "search-replace", "python", random.Random(item.id))
        change = read_change(built.text)
        plan = merge(item.before, change).program
        options = EditOptions(language="python")
        drafted = selector.apply(item.before, change, options, plan=plan)
        undrafted = selector.apply(item.before, change, options)
        steps[True] += drafted.stats.decode_steps
        steps[False] += undrafted.stats.decode_steps
        if drafted.tokens != undrafted.tokens:
            prompt = selector.session.template.apply_prompt(item.before, change, mode="program", language="python")
            near_tie(selector, selector.llama.tokenize(prompt, special=True), undrafted.tokens, drafted.tokens)
    assert steps[True] < steps[False]


def test_an_apply_program_never_copies_a_snippets_marker(applying):
    """A snippet's elision markers are numbered change lines no change copy may hold: the model's
    copies stop before them, and a script that copies one is refused by the digit mask."""
    before = "".join(f"v{n} = {n}\n" for n in range(1, 21))
    change = read_change("# ... unchanged ...\nv10 = 0\nv11 = 11\n# ... unchanged ...\nv20 = 0\n")
    assert change.markers == {1, 4}
    result = applying.apply(before, change, EditOptions(language="python"))
    copies = [op for op in result.program.ops if isinstance(op, ChangeCopy)]
    assert copies and not any(op.start <= m <= op.end for op in copies for m in change.markers)
    across = Program((Copy(1, 9), ChangeCopy(2, 4), Copy(12, 19), ChangeCopy(5, 5)))
    with pytest.raises(DecodeError, match="outside 2..3"):  # the copy from line 2 reaches line 3
        applying.apply(before, change, EditOptions(mode="forced", program=across))


def test_an_apply_to_a_file_without_a_final_line_break_keeps_its_lines_apart_and_its_ending(applying):
    """The file's last line, copied before a line of the change, does not run into it, and the
    result ends as the file does, without a line break."""
    before = "".join(f"v{n} = {n}\n" for n in range(1, 6)).removesuffix("\n")
    change = read_change("# ... unchanged ...\nv5 = 5\nv6 = 6\n")
    after = applying.apply(before, change, EditOptions(mode="forced", program=Program((Copy(1, 5), ChangeCopy(3, 3)))))
    assert after.text == before + "\nv6 = 6"
