"""The span selector's training: decoder-faithful sequences, deterministic leak-free data, a LoRA
whose exported GGUF moves llama.cpp's logits as torch's, and the shipped selector."""

import ast
import itertools
import json
import re
import shutil
import statistics
import sysconfig
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import edits

from copyedit_lsp.common.datasets import data_dir, load_items
from copyedit_lsp.core.change import read_change
from copyedit_lsp.core.program import ChangeCopy, Copy, Gen, parse_program
from copyedit_lsp.core.resolver import oracle_apply_program, oracle_program, resolve
from copyedit_lsp.decode import selector as selectors
from copyedit_lsp.decode.decoder import Decoder
from copyedit_lsp.decode.edit import EditOptions
from copyedit_lsp.decode.llama_model import LlamaModel, LlamaModelError, Vocabulary
from copyedit_lsp.decode.models import ModelError
from copyedit_lsp.decode.prompt import ChatTemplate, SourceView
from copyedit_lsp.decode.selector import resolve_selector
from copyedit_lsp.decode.session import ModelSession
from copyedit_lsp.train.data import (
    INTENT_PHRASES,
    Example,
    Recipe,
    check_no_leak,
    forbidden_windows,
    intent,
    leaks,
    regions_of,
    windows,
    with_context,
)
from copyedit_lsp.train.examples import build
from copyedit_lsp.train.sequence import answer_sequence, widened

# Hand-written edits that take every shape of program: a gen first and last, copies only,
# an insertion, a deletion, a file without a final line break, a reserved string.
EDITS = [
    ("def f(x):\n    return x\n", 'def f(x):\n    """Identity."""\n    return x\n', "Add a docstring."),
    ("a = 1\nb = 2\nc = 3\n", "a = 1\nb = 20\nc = 3\n", "Make b 20."),
    ("import os\nimport sys\n\nprint(os.sep)\n", "import os\n\nprint(os.sep)\n", "Drop the unused import."),
    ("x = 1\ny = 2\n", "# header\nx = 1\ny = 2\n# footer\n", "Add a header and a footer comment."),
    ("s = '<gen>'\nt = 1", "s = '<gen>'\nt = 2", "Set t to 2."),
    (
        "\n".join(f"v{i} = {i}" for i in range(1, 15)) + "\n",
        "\n".join(f"v{i} = {i * (i != 11)}" for i in range(1, 15)) + "\n",
        "Zero v11.",
    ),
]


def small_recipe(seed=0):
    return Recipe(
        seed=seed,
        counts=(
            ("bug", 6),
            ("bugs", 2),
            ("docstring", 2),
            ("comments", 2),
            ("types", 2),
            ("rename", 2),
            ("file-bug", 2),
        ),
        javascript_share=0.0,
    )


def stdlib_sample(count=120):
    root = Path(sysconfig.get_paths()["stdlib"])
    return sorted(root.glob("*.py"))[:count]


def test_data_builder_is_deterministic():
    files = {"python": stdlib_sample()}
    first = build(small_recipe(), files, frozenset())
    assert first == build(small_recipe(), files, frozenset())
    assert first != build(small_recipe(seed=1), files, frozenset())
    kinds = {e.kind for e in first}
    assert {"bug", "bugs", "docstring", "rename"} <= kinds
    for example in first:
        assert example.before != example.after
        assert resolve(oracle_program(example.before, example.after), example.before) == example.after


def test_javascript_regions_include_functions_bound_to_a_name():
    text = (
        "const path = require('path');\n\n"
        "const join = (a, b) => {\n  const both = [a, b];\n  return both.join(path.sep);\n};\n\n"
        "var half = function (x) {\n  const y = x / 2;\n  return y;\n};\n\n"
        "const one = 1, two = () => {\n  return 2;\n};\n"
    )
    regions = regions_of(text, "javascript", "lib.js", Recipe())
    assert [r.name for r in regions] == ["join", "half"]  # a declaration of two names is not one function
    assert regions[0].text.startswith("const join = (a, b) => {\n") and regions[0].text.endswith("};\n")
    assert {r.imports for r in regions} == {"const path = require('path');\n"}


def test_some_regions_come_with_the_lines_around_them():
    """A share of the edits have a blank line or the file's imports before the region (line 1 is not
    always the definition), maybe a blank line after; the edit itself is the same."""
    example = Example("bug", "python", "Fix f.", "def f(x):\n    return -x\n", "def f(x):\n    return x\n", "m.py:1")
    rng = __import__("random").Random(0)
    wrapped = [with_context(example, "import os\n", rng, share=0.5) for _ in range(200)]
    changed = [w for w in wrapped if w != example]
    assert 60 < len(changed) < 140
    leads = {w.before[: w.before.index("def")] for w in changed}
    assert leads == {"\n", "import os\n\n\n"}
    for w in changed:
        lead, trail = w.before.split(example.before)
        assert w.after == lead + example.after + trail and trail in ("", "\n")
        assert resolve(oracle_program(w.before, w.after), w.before) == w.after
    assert with_context(example, "", rng, share=0.0) == example


def test_some_bug_instructions_say_what_the_function_must_do():
    """With ``intent_share``, a Python bug's instruction restates its docstring's summary as what the
    function must do (the words point at the docstring, the fix goes to the code); the edit itself,
    and every other instruction, is the recipe's without it."""
    assert intent('def mean(v):\n    """Returns the mean of v."""\n', "mean") == "return the mean of v"
    assert intent('def f(x):\n    """Push all items.\n\n    More.\n    """\n', "f") == "push all items"
    wrapped = 'def f(\n    x,\n) -> int:\n    """Computes the sum of the\n    values. More."""\n'
    assert intent(wrapped, "f") == "compute the sum of the values"
    assert intent('def f(x):\n    """The sum."""\n', "f") is None  # not a verb
    assert intent('def f(x):\n    """Set it (e.g. to 1)."""\n', "f") is None  # cut inside its parentheses
    assert intent('def g(x):\n    """Push all items."""\n', "f") is None  # another function's
    files = {"python": stdlib_sample()}
    plain = build(small_recipe(), files, frozenset())
    told = build(replace(small_recipe(), intent_share=1.0), files, frozenset())
    assert [(e.kind, e.before, e.after) for e in told] == [(e.kind, e.before, e.after) for e in plain]
    changed = [(p, t) for p, t in zip(plain, told, strict=True) if p.instruction != t.instruction]
    assert changed and all(t.kind in ("bug", "bugs") for _, t in changed)
    shapes = [
        re.escape(phrase).replace(r"\{name\}", r"(?P<name>\w+)").replace(r"\{intent\}", "(?P<intent>.+)")
        for phrase in INTENT_PHRASES
    ]
    for _, example in changed:
        said = next(m for shape in shapes if (m := re.fullmatch(shape, example.instruction)))
        assert said["intent"] == intent(example.after, said["name"])


def test_data_builder_leaves_out_shared_data_text(tmp_path):
    """A source file that holds an evaluation item's code yields no edit with that code."""
    item = next(i for i in load_items("humanevalfix-python") if i.after.count("\n") >= 6)
    planted = tmp_path / "planted.py"
    planted.write_text(
        item.after.strip() + "\n\n\ndef other(values):\n    total = 0\n    for value in values:\n"
        "        total += value * 2\n    return total\n"
    )
    forbidden = forbidden_windows()
    assert windows(item.after) <= forbidden
    recipe = replace(small_recipe(), counts=(("bug", 4), ("rename", 4)))
    built = build(recipe, {"python": [planted]}, forbidden)
    assert built, "the file's other function still gives edits"
    assert not any(leaks(e, forbidden) for e in built)
    check_no_leak(built, forbidden)
    bad = Example("bug", "python", "Fix it.", item.before, item.after, "planted")
    with pytest.raises(ValueError, match="evaluation text"):
        check_no_leak([bad], forbidden)


def test_three_lines_of_a_canitedit_item_reindented_are_a_leak():
    """CanItEdit is a yardstick only: three of its lines in a row, indented otherwise, leak."""
    item = load_items(str(data_dir() / "canitedit" / "test.jsonl"), format="canitedit")[0]
    lines = [line for line in item.before.splitlines() if len(line.strip()) > 12][:3]
    planted = "def wrapper():\n" + "".join(f"        {line.strip()}\n" for line in lines)
    forbidden = forbidden_windows()
    assert leaks(Example("bug", "python", "Fix it.", planted, planted, "planted"), forbidden)
    kept = "def wrapper():\n" + "".join(f"    {line.strip()}\n" for line in lines[:2])  # two lines: no window
    assert not leaks(Example("bug", "python", "Fix it.", kept, kept, "planted"), forbidden)


@pytest.mark.model
def test_training_sequence_is_what_the_decoder_runs(small_model_path):
    """Forced mode on the real model puts exactly the sequence's tokens in the context, and the
    loss mask marks exactly as many tokens as the decoder chooses."""
    decoder = Decoder(ModelSession(LlamaModel(small_model_path, n_ctx=4096, n_threads=2)))
    vocab = Vocabulary(small_model_path)
    try:
        template = ChatTemplate(vocab.metadata)
        for before, after, instruction in EDITS:
            program = oracle_program(before, after)
            result = decoder.edit(before, instruction, EditOptions(mode="forced", program=program, examples="none"))
            sequence = answer_sequence(program, before, vocab.tokenize, vocab.piece)
            assert list(result.tokens) == sequence.tokens, instruction
            assert result.stats.chosen_tokens == sequence.targets, instruction
            prompt = template.edit_prompt(
                before, instruction, mode="program", splice="prefill", language="", examples="none"
            )
            assert vocab.tokenize(prompt, special=True) == decoder.prompt(
                before, instruction, EditOptions(examples="none")
            )
    finally:
        vocab.close()
        decoder.close()


# Hand-written changes of every form for some of the edits above (before, change, after).
APPLY_EDITS = [
    (EDITS[0][0], 'def f(x):\n    """Identity."""\n    # ... the rest as it was ...\n', EDITS[0][1]),
    (EDITS[1][0], "<<<<<<< SEARCH\nb = 2\n=======\nb = 20\n>>>>>>> REPLACE\n", EDITS[1][1]),
    (EDITS[2][0], "@@ -1,2 +1,1 @@\n import os\n-import sys\n \n", EDITS[2][1]),
    (EDITS[3][0], EDITS[3][1], EDITS[3][1]),
    (EDITS[5][0], "# ...\nv10 = 10\nv11 = 0\nv12 = 12\n# ...\n", EDITS[5][1]),
]


@pytest.mark.model
def test_apply_training_sequence_is_what_the_decoder_runs(small_model_path):
    """The same for apply programs: change copies spliced from the change's lines, in order."""
    decoder = Decoder(ModelSession(LlamaModel(small_model_path, n_ctx=4096, n_threads=2)))
    vocab = Vocabulary(small_model_path)
    try:
        for before, given, after in APPLY_EDITS:
            change = read_change(given)
            program = oracle_apply_program(before, after, [line.text for line in change.lines])
            assert any(isinstance(op, ChangeCopy) for op in program.ops), given
            result = decoder.apply(before, change, EditOptions(mode="forced", program=program))
            assert result.text == after
            sequence = answer_sequence(program, before, vocab.tokenize, vocab.piece, change=change)
            assert list(result.tokens) == sequence.tokens, given
            assert result.stats.chosen_tokens == sequence.targets, given
    finally:
        vocab.close()
        decoder.close()


@pytest.mark.model
def test_training_lowers_the_loss_and_the_adapter_moves_llama_logits_as_torch(tiny_model_path, tmp_path):
    """A few steps on the tiny model: the loss falls; the exported GGUF adapter loads in llama.cpp and
    changes its logits the way the LoRA changes torch's (cosine of the two deltas)."""
    import gguf
    import torch

    from copyedit_lsp.train.lora import (
        TrainOptions,
        load_adapter,
        load_base,
        load_trained,
        lora_arrays,
        train,
        with_lora,
    )

    vocab = Vocabulary(tiny_model_path)
    template = ChatTemplate(vocab.metadata)
    rows = []
    for before, after, instruction in EDITS[:4]:
        prompt = vocab.tokenize(
            template.edit_prompt(before, instruction, mode="program", splice="prefill", language="", examples="none"),
            special=True,
        )
        answer = answer_sequence(oracle_program(before, after), before, vocab.tokenize, vocab.piece)
        rows.append(
            {"tokens": prompt + answer.tokens, "chosen": [False] * len(prompt) + answer.chosen, "split": "train"}
        )
    vocab.close()
    rows.append(rows[0] | {"split": "val"})
    (tmp_path / "sequences.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    options = TrainOptions(learning_rate=2e-3, warmup_steps=1, epochs=6, accumulate=2, eval_every=4, dropout=0.0)
    state = train(
        tiny_model_path, tmp_path / "sequences.jsonl", tmp_path, options, architecture="llama", progress=False
    )
    losses = [loss for _, loss in state.train_loss]
    assert state.step == 12 and statistics.mean(losses[-3:]) < 0.7 * statistics.mean(losses[:3])
    assert state.val_loss[-1][1] < state.val_loss[0][1]

    tokens = rows[0]["tokens"]
    model = load_trained(tiny_model_path, tmp_path, "llama", options)
    second_stage = with_lora(load_base(tiny_model_path), "llama", options)
    load_adapter(second_stage, tmp_path / "adapter.gguf")  # the start of a second stage: the exported LoRA
    trained, loaded = lora_arrays(model), lora_arrays(second_stage)
    assert trained.keys() == loaded.keys()
    # stored in Q8_0: each value within half a step of its block's scale (at most the largest value / 127),
    # the scale itself in float16
    assert {tensor.tensor_type.name for tensor in gguf.GGUFReader(tmp_path / "adapter.gguf").tensors} == {"Q8_0"}
    assert all(np.abs(trained[n] - loaded[n]).max() <= np.abs(trained[n]).max() / 200 + 1e-7 for n in trained)
    with pytest.raises(ValueError, match="does not fit"):
        load_adapter(
            with_lora(load_base(tiny_model_path), "llama", replace(options, rank=8)), tmp_path / "adapter.gguf"
        )
    with torch.no_grad():
        tuned = model(input_ids=torch.tensor([tokens])).logits[0].numpy()
        with model.disable_adapter():
            base = model(input_ids=torch.tensor([tokens])).logits[0].numpy()
    llama = LlamaModel(tiny_model_path, n_ctx=1024, n_threads=2)
    try:
        llama_base = llama.eval(tokens, logits_from=0)
        llama.use_adapter(tmp_path / "adapter.gguf")
        assert llama.cached == [], "a new adapter empties the KV cache"
        llama_tuned = llama.eval(tokens, logits_from=0)
    finally:
        llama.close()
    positions = [i for i, chosen in enumerate(rows[0]["chosen"][1:]) if chosen]
    cosines = []
    for i in positions:
        a, b = tuned[i] - base[i], llama_tuned[i] - llama_base[i]
        cosines.append(float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))))
    assert statistics.median(cosines) > 0.9, cosines


def copied_lines(program):
    return {line for op in program.ops if isinstance(op, Copy) for line in range(op.start, op.end + 1)}


@given(edits(), st.integers(0, 3))
def test_widened_programs_write_the_same_text_and_copy_less(edit, lines):
    """A widened target program resolves to the same after-text; it copies a subset of the
    oracle's lines, and no line within ``lines`` before a change."""
    before, after = edit
    oracle = oracle_program(before, after)
    program = widened(oracle, before, lines)
    assert resolve(program, before) == after
    assert copied_lines(program) <= copied_lines(oracle)
    for op, following in itertools.pairwise(oracle.ops):
        if isinstance(op, Copy) and not (isinstance(following, Copy) and following.start == op.end + 1):
            assert not copied_lines(program) & set(range(max(op.start, op.end - lines + 1), op.end + 1))


def test_widened_moves_the_lines_before_a_change_into_its_gen():
    before = "a\nb\nc\nd\ne\nf\n"
    assert widened(oracle_program(before, "a\nb\nc\nX\ne\nf\n"), before, 2).ops == (
        Copy(1, 1),
        Gen("b\nc\nX\n"),
        Copy(5, 6),
    )
    assert widened(oracle_program(before, "a\nb\nc\ne\nf\n"), before, 2).ops == (
        Copy(1, 1),
        Gen("b\nc\n"),
        Copy(5, 6),
    ), "a deletion too"
    assert widened(oracle_program(before, "a\nb\nc\nX\ne\nf\n"), before, 0) == oracle_program(
        before, "a\nb\nc\nX\ne\nf\n"
    )


@pytest.mark.model
def test_the_shipped_selector_is_verified_and_writes_valid_programs(small_model_path):
    selector = resolve_selector("default", "qwen2.5-coder-0.5b")
    assert selector is not None and selector.path.is_file()
    assert selectors.SHIPPED[selector.name].sha256 == selector.sha256
    assert resolve_selector("none", "qwen2.5-coder-0.5b") is None
    assert selector.name == "qwen2.5-coder-0.5b-v4"
    # only the selectors that are defaults ship: one a model and task
    assert sorted((shipped.model, shipped.task) for shipped in selectors.SHIPPED.values()) == [
        ("qwen2.5-coder-0.5b", "apply"),
        ("qwen2.5-coder-0.5b", "edit"),
        ("qwen2.5-coder-1.5b", "edit"),
    ]
    applying = resolve_selector("default", "qwen2.5-coder-0.5b", task="apply")
    assert applying is not None and applying.name == "qwen2.5-coder-0.5b-apply"
    assert applying.sha256 == selectors.SHIPPED["qwen2.5-coder-0.5b-apply"].sha256
    assert resolve_selector("default", "qwen2.5-coder-1.5b", task="apply") is None
    assert resolve_selector("default", "smollm2-135m") is None
    larger = resolve_selector("default", "qwen2.5-coder-1.5b")  # verified by its sha256, like the others
    assert larger is not None and larger.name == "qwen2.5-coder-1.5b" and larger.model == "qwen2.5-coder-1.5b"
    assert larger.sha256 == selectors.SHIPPED["qwen2.5-coder-1.5b"].sha256
    decoder = Decoder.load("qwen2.5-coder-0.5b", n_threads=2)
    try:
        assert decoder.session.selector == selector
        results = {}
        for before, _, instruction in EDITS[:3]:
            result = decoder.edit(before, instruction)
            assert decoder.llama.adapter == selector.path
            text = result.program.to_text()
            assert parse_program(text, len(SourceView.of(before).lines)) == result.program
            # what the grammar does not guarantee: the selector's own program (no rewrite took its
            # place), which copies lines and writes some, and changes the text to what it resolves to
            assert result.stats.fallback is None and result.replaced is None, instruction
            kinds = {type(op) for op in result.program.ops}
            assert kinds == {Copy, Gen}, (instruction, text)
            assert result.text == resolve(result.program, before) != before, (instruction, text)
            results[instruction] = result.text
        # and the edits asked for (the base model without the selector writes neither): a docstring for
        # f, whose body is otherwise its one return; b set to 20, a and c kept, no line added.
        # (Of "Drop the unused import." the 0.5B selector drops the blank line instead: not asserted.)
        (function,) = ast.parse(results["Add a docstring."]).body
        assert function.name == "f" and ast.get_docstring(function), results["Add a docstring."]
        assert [ast.unparse(statement) for statement in function.body[1:]] == ["return x"], results["Add a docstring."]
        namespace = {}
        exec(results["Make b 20."], namespace)
        assert results["Make b 20."].count("\n") == 3, results["Make b 20."]
        assert (namespace["a"], namespace["b"], namespace["c"]) == (1, 20, 3)
        decoder.edit(EDITS[0][0], "Add a docstring.", EditOptions(mode="rewrite"))
        assert decoder.llama.adapter is None, "the rewrite baseline runs with the base model"
    finally:
        decoder.close()


def test_selector_setting_errors(tmp_path, monkeypatch):
    with pytest.raises(ModelError, match="no selector"):
        resolve_selector("no-such-selector", "qwen2.5-coder-0.5b")
    name = next(iter(selectors.SHIPPED))
    with pytest.raises(ModelError, match="is for"):
        resolve_selector(name, "smollm2-135m")
    shipped = selectors.SHIPPED[name]
    corrupt = tmp_path / shipped.file
    shutil.copy(selectors.selectors_dir() / shipped.file, corrupt)
    with corrupt.open("r+b") as handle:
        handle.seek(corrupt.stat().st_size // 2)
        handle.write(b"\0" * 64)
    monkeypatch.setattr(selectors, "selectors_dir", lambda: tmp_path)
    with pytest.raises(ModelError, match="sha256"):
        resolve_selector(name, shipped.model)


@pytest.mark.model
def test_a_broken_adapter_file_is_a_clear_error(tiny_model_path, tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 100)
    llama = LlamaModel(tiny_model_path, n_ctx=512, n_threads=2)
    try:
        with pytest.raises(LlamaModelError, match="could not load the LoRA adapter"):
            llama.use_adapter(broken)
        assert llama.adapter is None
    finally:
        llama.close()


class RewriteDouble:
    """Stands in for the base model in a plumbing test of distillation: its "rewrite" is a table."""

    def __init__(self, rewrites: dict[str, str]):
        self.rewrites = rewrites
        self.asked: list[tuple[str, str]] = []

    def edit(self, before, instruction, options):
        from types import SimpleNamespace

        assert options.mode == "lookup"
        self.asked.append((before, instruction))
        return SimpleNamespace(text=self.rewrites.get(before, before))


def test_distilled_fixes_take_the_model_rewrite_as_target_where_it_is_worth_learning():
    """A bug whose rewrite parses and changes the code becomes a distill-fix edit with the rewrite as its
    target; an unchanged or broken rewrite is dropped; no more than asked for are kept."""
    from copyedit_lsp.train.distill import distill_fixes

    fixed = "function f(a, b) {\n  const c = a + b;\n  return c * 2;\n}\n"
    bugs = [
        Example("bug", "javascript", "Fix bugs in f.", fixed.replace("+", "-"), fixed, "a.js:1"),
        Example("bug", "javascript", "Fix f.", fixed.replace("* 2", "* 3"), fixed, "b.js:1"),
        Example("bug", "javascript", "Fix the bug in f.", fixed.replace("c * 2", "c"), fixed, "c.js:1"),
        Example("bug", "javascript", "Fix f.", fixed.replace("a + b", "b + a"), fixed, "d.js:1"),
    ]
    model_fix = fixed.replace("+", "*")  # not the reversed bug: the model's own fix
    decoder = RewriteDouble(
        {bugs[0].before: model_fix, bugs[1].before: "function f(a, b) {\n  return (\n", bugs[3].before: fixed}
    )
    fixes = distill_fixes(decoder, bugs, count=2, seed=0)
    assert sorted(f.origin for f in fixes) == ["a.js:1", "d.js:1"]
    assert all(f.kind == "distill-fix" for f in fixes)
    assert {f.origin: f.after for f in fixes} == {"a.js:1": model_fix, "d.js:1": fixed}
    assert {f.origin: f.instruction for f in fixes} == {
        b.origin: b.instruction for b in bugs if b.origin in ("a.js:1", "d.js:1")
    }
    assert len(decoder.asked) <= len(bugs)


def test_a_distilled_rewrite_keeps_the_blank_lines_around_the_region():
    """A rewrite that drops the region's leading and trailing blank lines gets them back, so the
    target program copies them instead of deleting them; a rewrite that only dropped them is no edit."""
    from copyedit_lsp.train.distill import framed, kept

    before = "\nconst f = (a) => {\n  return a - 1;\n}\n\n\n"
    rewrite = "const f = (a) => {\n  return a + 1;\n}\n"
    assert framed(before, rewrite) == "\nconst f = (a) => {\n  return a + 1;\n}\n\n\n"
    assert oracle_program(before, framed(before, rewrite)).ops == (
        Copy(1, 2),
        Gen("  return a + 1;\n"),
        Copy(4, 6),
    )
    assert not kept(before, framed(before, before.strip("\n") + "\n"), "javascript")


def test_the_model_card_says_which_programs_a_selector_writes_and_how_to_rebuild_it():
    from dataclasses import asdict

    from copyedit_lsp.train.lora import TrainOptions
    from copyedit_lsp.train.pipeline import model_card

    facts = {
        "base_model": "qwen2.5-coder-0.5b", "adapter": "a.gguf", "bytes": 9, "sha256": "ab", "prompt_examples": "none",
        "init": {"adapter": "b.gguf", "sha256": "cd"}, "examples": {"apply-snippet/python": 3, "bug/python": 1},
        "sequences": {"train": 3, "val": 1, "left out (too long)": 0}, "options": asdict(TrainOptions()),
        "recipe": {"seed": 1, "apply_share": 0.85}, "steps": 1, "trained_sequences": 3, "trained_tokens": 900,
        "train_seconds": 6.0, "tokens_per_second": 150.0, "final_train_loss": 0.3, "val_loss": [(1, 0.4)],
    }  # fmt: skip
    applying = model_card(facts, "copyedit train --apply-share 0.85")
    assert "apply programs (a change merged into a file: 85% of its edits)" in applying
    assert "`applySelector`" in applying and "    copyedit train --apply-share 0.85" in applying
    assert "| apply-snippet/python | 3 |" in applying and "`b.gguf`" in applying
    editing = model_card(facts | {"recipe": {"seed": 1}}, "copyedit train")
    assert "copy/gen edit programs. Program mode uses it by default" in editing
