"""One parity suite of the remote backend over the completions servers teams run (tests/engines.py
starts each: llama-cpp-python's own server, llama.cpp's llama-server and vLLM's CPU build, on
127.0.0.1 with the tests' 0.5B and an API key), next to the local decoder with the same model:
the same programs and texts, the grammar kept, a copy spliced through the engine's prefix cache,
cancelling that stops the engine, clear errors."""

from __future__ import annotations

import random
import time

import httpx
import pytest
from engines import CONTEXT, ENGINES, free_port, start_engine
from mechanism import MODEL

from copyedit_lsp.bench.changes import build_change
from copyedit_lsp.common.datasets import load_items
from copyedit_lsp.core.change import change_lines, read_change
from copyedit_lsp.core.grammar import op_grammar
from copyedit_lsp.core.program import ChangeCopy, Copy, Gen, Program
from copyedit_lsp.core.resolver import oracle_apply_program, oracle_program
from copyedit_lsp.decode.completions import Answer, Completions, Endpoint, RemoteError
from copyedit_lsp.decode.decoder import Decoder
from copyedit_lsp.decode.edit import Cancelled, ContextOverflow, EditOptions
from copyedit_lsp.decode.llama_model import LlamaModel, Vocabulary
from copyedit_lsp.decode.prompt import SourceView
from copyedit_lsp.decode.remote import RemoteDecoder
from copyedit_lsp.decode.remote import _read_op as read_op
from copyedit_lsp.decode.session import ModelSession
from copyedit_lsp.serve.region import choice_names

# An engine starts in the setup of its first test (vLLM: 109 s on a quiet 2-core machine), which
# then runs both local decoders beside it (129 s): 238 s together, near the 300 s default.
pytestmark = [pytest.mark.model, pytest.mark.timeout(900)]


@pytest.fixture(scope="module", params=ENGINES)
def served(request, small_model_path, tmp_path_factory):
    try:
        server = start_engine(request.param, small_model_path, tmp_path_factory.mktemp(request.param) / "server.log")
    except FileNotFoundError as missing:
        pytest.fail(str(missing))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def remote(served):
    decoder = RemoteDecoder.connect(served.endpoint())
    stream = decoder.completions.stream

    def recorded(*args, **kwargs) -> Answer:  # every answer, for the engine's own counters
        answer = stream(*args, **kwargs)
        served.answers.append(answer)
        return answer

    decoder.completions.stream = recorded  # type: ignore[method-assign]
    yield decoder
    decoder.close()


@pytest.fixture(scope="module")
def local(small_model_path):
    """The local decoder with the base model (the remote backend sends no selector)."""
    decoder = Decoder(ModelSession(LlamaModel(small_model_path, n_ctx=CONTEXT, n_threads=2)))
    yield decoder
    decoder.close()


@pytest.fixture(scope="module")
def items():
    return load_items("humanevalfix-python", limit=6)


def test_programs_and_texts_equal_the_local_decoders(remote, local, items):
    """Program mode (the copy check off locally: a completions server returns no logits of copied
    lines) and rewrite mode write what the local decoder writes, op for op."""
    assert remote.model == MODEL  # the first model the server lists
    copies, same = 0, []
    for item in items:
        options = EditOptions(language=item.language, copy_check=0.0, fallback=False)  # the programs are compared
        here, there = (
            local.edit(item.before, item.instruction, options),
            remote.edit(item.before, item.instruction, options),
        )
        same.append(there.program == here.program and there.text == here.text)
        # a request runs through gens to the next copy: one per copy at least; at most one per op,
        # one for the end, and one for each more line a gen that changed nothing was asked for
        gen_lines = sum(op.text.count("\n") for op in there.program.ops if isinstance(op, Gen))
        in_program = sum(isinstance(op, Copy) for op in there.program.ops)
        assert in_program <= there.stats.requests <= len(there.program.ops) + 1 + gen_lines
        copies += in_program
    assert sum(same) >= len(items) - 1, same  # a long free gen may part at a near tie
    assert copies >= len(items)  # the model copies: the splice is exercised
    written = []
    for item in items[:3]:
        options = EditOptions(mode="rewrite", language=item.language)
        here, there = (
            local.edit(item.before, item.instruction, options),
            remote.edit(item.before, item.instruction, options),
        )
        assert there.stats.requests == 1, item.id
        written.append(there.text == here.text)
    assert sum(written) >= 2, written  # the two engines' kernels differ: a near tie may part them


def test_the_choice_of_a_definition_is_the_same_remotely(remote, local):
    """The model's choice among a long file's definitions: the local decoder walks the names'
    tokens, the engine answers under a grammar of the names; greedy, the same answer."""
    from test_loss import ROUTER

    symptom = "Query strings lose everything after an equals sign in a value, like token=abc==."
    names = choice_names(ROUTER, "python", symptom)
    assert "parse_query" in names and len(names) >= 8
    here = local.choose(ROUTER, symptom, "python", names)
    assert here == "parse_query"  # the base model, asked with the names quoted
    assert remote.choose(ROUTER, symptom, "python", names) == here


def test_every_answer_keeps_to_the_grammar(remote, items):
    """A prompt that invites plain code gets one op of the program grammar and nothing else: a
    copy inside the lines the grammar allows, a gen, or the program's end."""
    item = items[0]
    n = len(SourceView.of(item.before).lines)
    prompt = remote._prompt(item.before, item.instruction, EditOptions()) + "<gen>\ndef"  # mid-gen, off the grammar
    for first in (1, n):
        answer = remote.completions.stream(
            prompt, grammar=op_grammar(n, first), max_tokens=64, model=remote.model, on_piece=lambda answer: False
        )
        op, _ = read_op(answer, n)  # RemoteError: outside the grammar
        if isinstance(op, Copy):
            assert first <= op.start <= op.end <= n, answer.text


def test_a_copy_is_spliced_through_the_engines_prefix_cache(remote, served, items, small_model_path):
    """After a copy, the next request reuses the whole prompt before it (the engine's own count)
    and evaluates only the copied lines, in one prefill."""
    item = items[0]
    source = item.before + f"# {time.time_ns()}\n"  # a text no earlier request held (none is cached)
    view = SourceView.of(source)
    options = EditOptions(mode="forced", program=Program((Copy(1, len(view.lines)),)))
    remote.warm(options)  # the fixed prompt prefix in the cache
    since = served.mark()
    assert remote.edit(source, item.instruction, options).text == source
    (cached_1, evaluated_1), (cached_2, evaluated_2) = served.prompt_counts(since)
    vocabulary = Vocabulary(small_model_path)  # the engine's model: the same tokenizer
    try:
        copied = len(vocabulary.tokenize(view.span(1, len(view.lines))))
    finally:
        vocabulary.close()
    assert cached_1 > 300  # the fixed prompt prefix
    assert cached_2 >= (cached_1 + evaluated_1) // served.block * served.block  # the first request's whole prompt
    # the copied lines, maybe a token the tag and the lines share, and what fills the last block
    assert copied <= evaluated_2 <= copied + 2 + served.block - 1


def test_forced_mode_writes_the_script(remote, items):
    """Forced mode writes the oracle's script: one request for each copy and the gens before it,
    one for the gens after the last and the program's end."""
    for item in items[:3]:
        program = oracle_program(item.before, item.after)
        result = remote.edit(item.before, item.instruction, EditOptions(mode="forced", program=program))
        assert result.program == program and result.text == item.after
        assert result.stats.requests == sum(isinstance(op, Copy) for op in program.ops) + 1


def test_apply_programs_equal_the_local_decoders(remote, local):
    """A lazy snippet merged by the base model's apply program (no apply selector on either side,
    no lookup in its place) is the local decoder's, op for op; the oracle apply program in forced
    mode splices the change's lines it copies through the engine and gives the gold."""
    same, change_copies = [], 0
    for item in load_items("humanevalfix-python-files", limit=2, seed=1):
        built = build_change(item.before, item.after, "snippet", item.language, random.Random(f"1/{item.id}/snippet"))
        change = read_change(built.text, "snippet")
        options = EditOptions(language=item.language, fallback=False)
        here, there = local.apply(item.before, change, options), remote.apply(item.before, change, options)
        same.append(there.program == here.program and there.text == here.text)
        script = oracle_apply_program(item.before, item.after, change_lines(change))
        forced = remote.apply(item.before, change, EditOptions(mode="forced", program=script))
        assert forced.program == script and forced.text == item.after, item.id
        change_copies += sum(isinstance(op, ChangeCopy) for op in script.ops)
    assert all(same), same
    assert change_copies >= 2  # the change's lines were spliced


def test_progress_streams_and_cancelling_stops_the_engine(remote, served, items, monkeypatch):
    """A cancelled rewrite closes its stream; the engine stops generating (where it says) and serves on."""
    item = items[1]
    seen: list[int] = []
    responses: list[httpx.Response] = []
    send = httpx.Client.send

    def kept(client, request, **kwargs):
        responses.append(send(client, request, **kwargs))
        return responses[-1]

    before = served.generating()
    monkeypatch.setattr(httpx.Client, "send", kept)
    with pytest.raises(Cancelled):
        remote.edit(
            item.before,
            item.instruction,
            EditOptions(mode="rewrite"),
            stop=lambda: len(seen) >= 5,
            on_progress=lambda progress: seen.append(progress.stats.chosen_tokens),
        )
    (stream,) = responses  # the one streamed request, cancelled before the answer was complete
    assert stream.is_closed and seen == sorted(seen) and seen[-1] > seen[0]  # the answer grew piece by piece
    if before is not None:  # the engine says what it generates
        generated = 0 if served.name == "llama-server" else before[1]
        deadline = time.monotonic() + 10
        while (state := served.generating())[0]:
            assert time.monotonic() < deadline, "the engine went on generating after the stream closed"
            time.sleep(0.1)
        assert state[1] - generated < 40  # stopped, not run to the end of the rewrite (about 100 tokens)
    monkeypatch.undo()
    result = remote.edit(
        item.before, item.instruction, EditOptions(mode="forced", program=oracle_program(item.before, item.after))
    )
    assert result.text == item.after  # and it serves on


def test_failures_are_clear_errors(remote, served):
    with pytest.raises(ContextOverflow, match="context"):
        remote.edit("".join(f"value_{i} = {i} * {i} + {i}\n" for i in range(1500)), "Rename value to v.")
    with pytest.raises(RemoteError, match="API key"):
        RemoteDecoder.connect(served.endpoint(api_key="not-the-key"))
    closed = Completions(Endpoint(f"http://127.0.0.1:{free_port()}/v1"))
    try:
        with pytest.raises(RemoteError, match="cannot reach"):
            closed.models()
    finally:
        closed.close()
    with pytest.raises(RemoteError, match=served.bad_grammar):
        remote.completions.stream("x", grammar="root ::= (", max_tokens=4, model=remote.model, on_piece=lambda a: False)
