"""The training data's changes: a training edit's before and after text written as an assistant
would write the change, in every form, with the noise assistants produce.

This builder is the training data's alone; the apply benchmark's changes come from
:mod:`copyedit_lsp.bench.changes`, whose marker wordings none of :data:`MARKERS` is (a test
checks), so an apply selector is never measured on the wordings it was trained on.  Noise: 0-3
lines of context, unchanged lines restated around a change, a part re-indented, trailing
whitespace, a diff's line numbers wrong or missing, a snippet that does or does not mark the
code kept before its first part and after its last.
"""

from __future__ import annotations

import difflib
import random

from ..core.change import ended, write_block, write_hunk
from ..core.resolver import split_lines

# Elision markers of the training data (never the benchmark's wordings).
MARKERS = (
    "... previous code ...",
    "… unchanged …",
    "... other code stays the same ...",
    "... more code ...",
    "... code above unchanged ...",
    "... remaining code ...",
    "... snip ...",
    "... (as before) ...",
    "... existing implementation ...",
    "... keep as is ...",
    "......",
)
COMMENTS = {"python": ("# {}",), "javascript": ("// {}", "/* {} */", "// {}")}
FORMS = (("snippet", 0.45), ("search-replace", 0.2), ("diff", 0.2), ("file", 0.15))

Span = tuple[int, int, int, int]  # before lines i1..i2, after lines j1..j2 (0-based, ends excluded)


def draw_form(rng: random.Random) -> str:
    """A change form, drawn by :data:`FORMS`' weights."""
    forms, weights = zip(*FORMS, strict=True)
    return rng.choices(forms, weights)[0]


def training_change(before: str, after: str, form: str, language: str, rng: random.Random) -> str:
    """``before`` -> ``after`` written as a change of ``form``, with drawn noise."""
    if form == "file":
        return after
    a, b = split_lines(before), split_lines(after)
    spans = _spans(a, b, context=rng.choice((0, 1, 1, 2, 2, 3, 3)), restate=rng.random() < 0.3, rng=rng)
    if form == "snippet":
        return _snippet(a, b, spans, language, rng)
    if form == "search-replace":
        return "".join(
            write_block(a[i1:i2], _noisy(b[j1:j2], rng)) + ("\n" if rng.random() < 0.5 else "")
            for i1, i2, j1, j2 in spans
        )
    return _diff(a, b, spans, rng)


def _spans(a: list[str], b: list[str], *, context: int, restate: bool, rng: random.Random) -> list[Span]:
    """The changed runs widened by ``context`` lines (and, ``restate``, a few more unchanged lines
    on either side, as a snippet that restates code does), a deletion or an insertion by one at
    least so that it has a neighbour to be placed by; runs that touch merged."""
    found: list[Span] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        wide = max(context, 1) if i1 == i2 or j1 == j2 else context
        top = min(wide + (rng.randint(2, 8) if restate else 0), i1, j1)
        bottom = min(wide + (rng.randint(0, 6) if restate else 0), len(a) - i2, len(b) - j2)
        span = (i1 - top, i2 + bottom, j1 - top, j2 + bottom)
        if found and span[0] <= found[-1][1]:
            last = found.pop()
            span = (last[0], max(last[1], span[1]), last[2], max(last[3], span[3]))
        found.append(span)
    return found


def _noisy(lines: list[str], rng: random.Random) -> list[str]:
    """``lines`` as an assistant may write them: now and then re-indented by four spaces either
    way, or with trailing whitespace on one line."""
    draw = rng.random()
    if draw < 0.1 and lines and all(line.startswith("    ") or not line.strip() for line in lines):
        return [line[4:] if line.strip() else line for line in lines]
    if draw < 0.2:
        return ["    " + line if line.strip() else line for line in lines]
    if draw < 0.3 and lines:
        at = rng.randrange(len(lines))
        return [*lines[:at], lines[at].rstrip("\r\n") + "  \n", *lines[at + 1 :]]
    return lines


def _snippet(a: list[str], b: list[str], spans: list[Span], language: str, rng: random.Random) -> str:
    """The after text's changed runs, a marker between them and (mostly) before and after them."""
    marker = rng.choice(COMMENTS.get(language, COMMENTS["javascript"])).format(rng.choice(MARKERS)) + "\n"
    parts, cursor = [], 0
    for i1, i2, j1, j2 in spans:
        if i1 > cursor and (cursor > 0 or rng.random() < 0.85):
            parts.append(marker)
        parts += ended(_noisy(b[j1:j2], rng))
        cursor = i2
    if cursor < len(a) and rng.random() < 0.85:
        parts.append(marker)
    return "".join(parts)


def _diff(a: list[str], b: list[str], spans: list[Span], rng: random.Random) -> str:
    """A unified diff of the spans; its ``@@`` numbers right, off, or missing."""
    style = rng.choice(("right", "off", "bare"))
    hunks = ["--- a/code\n+++ b/code\n"] if rng.random() < 0.7 else []
    for i1, i2, j1, j2 in spans:
        shift = rng.choice((-1, 1)) * rng.randint(2, 20) if style == "off" else 0
        header = (
            "@@"
            if style == "bare"
            else f"@@ -{max(i1 + 1 + shift, 1)},{i2 - i1} +{max(j1 + 1 + shift, 1)},{j2 - j1} @@"
        )
        hunks.append(write_hunk(header, a[i1:i2], b[j1:j2]))
    return "".join(hunks)
