"""The model as chooser: which definition an instruction is about, and how likely each placement
of a change is; scored, never generated."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.change import Change
from .edit import ContextOverflow, EditOptions, EditStats, EditWatch
from .llama_model import LlamaModel
from .prompt import WHOLE_FILE
from .session import ModelSession
from .tokens import PieceTrie, TokenRun


def choose(session: ModelSession, source: str, instruction: str, language: str, names: Sequence[str]) -> str | None:
    """The definition the instruction is about (:meth:`~copyedit_lsp.decode.edit.Editor.choose`): the
    base model's greedy choice, token by token, among the names and the whole file."""
    session.prepare("rewrite")
    prompt = session.llama.tokenize(session.template.choice_prompt(source, instruction, language, names), special=True)
    session.make_room(len(prompt) + 64)
    if len(prompt) + 64 > session.llama.n_ctx:
        raise ContextOverflow(f"the file ({len(prompt)} tokens with the question) does not fit the context")
    run = TokenRun(session.llama, EditWatch(EditStats(mode="choice"), None, None), force=True, batch=True)
    run.prefill(prompt)
    pieces = {name: session.llama.tokenize(f"{name}`") for name in (*names, WHOLE_FILE)}
    chosen = PieceTrie(pieces).walk(run, None)
    return None if chosen == WHOLE_FILE else chosen


def rank(
    session: ModelSession,
    source: str,
    change: Change,
    texts: Sequence[str],
    options: EditOptions = EditOptions(),
    instruction: str = "",
) -> list[float]:
    """Each of ``texts`` (placements of ``change`` into ``source``) scored by the base model's
    log-likelihood of writing it out given the change (:meth:`~copyedit_lsp.decode.edit.Editor.rank`):
    teacher-forced, no token generated; the prompt and the texts' common opening evaluated once,
    then each text's own part, to a few tokens into their common ending, in one batch."""
    session.prepare("rewrite", "apply")
    prompt = session.llama.tokenize(
        session.template.apply_prompt(
            source, change, mode="rewrite", language=options.language, instruction=instruction
        ),
        special=True,
    )
    answers = [session.llama.tokenize(text) for text in texts]
    session.make_room(len(prompt) + max(map(len, answers)) + 1)
    if len(prompt) + max(map(len, answers)) + 1 > session.llama.n_ctx:
        raise ContextOverflow(f"the file and the change ({len(prompt)} tokens) do not fit the context to choose")
    opening = _common(answers)
    ending = min(_common([a[::-1] for a in answers]), min(map(len, answers)) - opening)
    logits, _ = session.llama.prefill([*prompt, *answers[0][:opening]])
    scores = []
    for answer in answers:
        session.llama.truncate(len(prompt) + opening)
        scores.append(
            _log_likelihood(session.llama, logits, answer[opening : len(answer) - max(0, ending - RANK_TAIL)])
        )
    return scores


RANK_TAIL = 8  # tokens of the placements' common ending scored with each (how it follows what differs)


RANK_CHUNK = 64  # rows of logits a score evaluates at once


def _common(answers: Sequence[Sequence[int]]) -> int:
    """How many tokens every one of ``answers`` opens with."""
    shortest = min(map(len, answers))
    return next((i for i in range(shortest) if len({a[i] for a in answers}) > 1), shortest)


def _log_likelihood(llama: LlamaModel, logits: np.ndarray, tokens: Sequence[int]) -> float:
    """The log-likelihood of ``tokens`` after the cache (``logits``: its last row), evaluated
    :data:`RANK_CHUNK` rows at a time."""
    if not tokens:
        return 0.0
    total = _log_softmax(logits[None, :], tokens[:1])
    for start in range(0, len(tokens) - 1, RANK_CHUNK):
        chunk = tokens[start : min(start + RANK_CHUNK, len(tokens) - 1)]
        total += _log_softmax(llama.eval(chunk, logits_from=0), tokens[start + 1 : start + 1 + len(chunk)])
    return total


def _log_softmax(rows: np.ndarray, targets: Sequence[int]) -> float:
    """The summed log-probabilities of ``targets``, one per row of logits."""
    top = rows.max(axis=1)
    normal = top + np.log(np.exp(rows - top[:, None]).sum(axis=1))
    return float((rows[np.arange(len(targets)), list(targets)] - normal).sum())
