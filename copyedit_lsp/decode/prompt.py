"""Prompts: the model's chat template, the input as numbered lines, the instruction, examples.

The one place that says how the model sees a document: reserved strings escaped, line breaks
as ``\\n``, each line numbered from 1 as ``N| text``.  Copied lines are spliced into the
model's context exactly as :func:`SourceView.span` returns them.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import NoReturn

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.parser
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ..core.change import DIVIDER, REPLACE, SEARCH, Change
from ..core.program import PROGRAM_OPEN, Copy, Program, escape
from ..core.resolver import oracle_program, split_lines

PROGRAM_SYSTEM = """You edit code. You get an instruction and the code as numbered lines ("N| text").
Answer with an edit program that produces the complete edited code:
<copy lines="I-J"/> keeps the original lines I to J (1-based, inclusive) unchanged;
<gen> and </gen> enclose new lines, written out in full.
Copy every line that stays the same; write only the lines that change.
The program starts with <program> and ends with </program>."""

APPLY_SYSTEM = """You merge a change into code. You get the code as numbered lines ("N| text") and a change an
assistant wrote for it, its lines numbered too: a snippet whose elision comments stand for the
code's lines kept, search/replace blocks, a diff, or a whole file; lines the change
removes from the code are shown as "-| text".
Beside a change line's number, "=12" says it equals code line 12, "~12" that it reads like it.
Answer with an apply program that produces the complete merged code:
<copy lines="I-J"/> keeps the code's lines I to J (1-based, inclusive);
<copy change="I-J"/> takes the change's lines I to J;
<gen> and </gen> enclose lines written out in full.
The program starts with <program> and ends with </program>."""

APPLY_REWRITE_SYSTEM = """You merge a change into code. You get the code and a change an assistant wrote for it:
a snippet whose elision comments stand for the code's lines kept,
search/replace blocks, a diff, or a whole file.
Answer with the complete merged code in one code block, and nothing else."""

# The system texts of an edit prompt (Layout.system): "plain", one line asking for the changed code
# in a block, as a developer asks a chat model; "first", the project's first design.
REWRITE_SYSTEMS = {
    "plain": "Reply with the complete changed code in one {language}code block.",
    "first": "You edit code. You get an instruction and the code.\n"
    "Answer with the complete edited code in one code block, and nothing else.",
}
ORDERS = ("code-first", "instruction-first")


@dataclass(frozen=True)
class Layout:
    """How an edit's prompt is laid out, part by part (``copyedit bench edits --layout`` varies them):

    * ``order``: ``code-first`` (the code under ``## Code before``, then ``## Instruction``, then
      ``## Code after``: how a developer asks a chat model) or ``instruction-first`` (the first design);
    * ``system``: a key of :data:`REWRITE_SYSTEMS` (program mode explains its format either way);
    * ``fence``: the answer opens with the code block's fence (rewrite), else the model writes it
      and the block is read from its answer."""

    order: str = "code-first"
    system: str = "plain"
    fence: bool = True

    def check(self) -> None:
        if self.order not in ORDERS or self.system not in REWRITE_SYSTEMS:
            raise ValueError(f"layout order must be one of {ORDERS}, system one of {tuple(REWRITE_SYSTEMS)}")

    @classmethod
    def parse(cls, text: str) -> Layout:
        """A layout from ``order,system,fence|nofence`` (any of them, in any order; the rest default)."""
        fields: dict[str, object] = {}
        for part in filter(None, text.split(",")):
            if part in ORDERS:
                fields["order"] = part
            elif part in REWRITE_SYSTEMS:
                fields["system"] = part
            elif part in ("fence", "nofence"):
                fields["fence"] = part == "fence"
            else:
                raise ValueError(f"unknown layout part {part!r}: {ORDERS}, {tuple(REWRITE_SYSTEMS)}, fence, nofence")
        return cls(**fields)  # type: ignore[arg-type]

    def text(self) -> str:
        return f"{self.order},{self.system},{'fence' if self.fence else 'nofence'}"


# The layout a span selector was trained with (its programs read this order).
FIRST_LAYOUT = Layout("instruction-first", "first", True)


def default_layout(mode: str) -> Layout:
    """The layout of ``mode``'s prompt unless one is named: :class:`Layout`'s defaults where the
    model writes code (rewrite, lookup), else the first layout (the selectors were trained with it)."""
    return Layout() if mode in ("rewrite", "lookup") else FIRST_LAYOUT


# Hand-written examples (never taken from evaluation data): (language, instruction, before, after).
EXAMPLES = (
    (
        "python",
        "Fix the off-by-one error in last_item.",
        "def last_item(items):\n    if not items:\n        return None\n    return items[len(items)]\n\n\nprint(last_item([1, 2]))\n",
        "def last_item(items):\n    if not items:\n        return None\n    return items[len(items) - 1]\n\n\nprint(last_item([1, 2]))\n",
    ),
    (
        "javascript",
        "Add a greeting parameter with default 'Hello' to greet.",
        "// Greets a user.\nfunction greet(name) {\n  const message = 'Hello, ' + name;\n  console.log(message);\n  return message;\n}\n",
        "// Greets a user.\nfunction greet(name, greeting = 'Hello') {\n  const message = greeting + ', ' + name;\n  console.log(message);\n  return message;\n}\n",
    ),
)

# A bug fixed in the middle of a function, the lines after it copied again.
MIDDLE_FIX = (
    "python",
    "Fix bugs in count_words.",
    "def count_words(text, shortest):\n    counts = {}\n    for word in text.split():\n        word = word.lower()\n"
    "        if len(word) > shortest:\n            counts[word] = counts.get(word, 0) + 1\n"
    "    ranked = sorted(counts.items(), key=lambda item: -item[1])\n    return ranked\n",
    "def count_words(text, shortest):\n    counts = {}\n    for word in text.split():\n        word = word.lower()\n"
    "        if len(word) >= shortest:\n            counts[word] = counts.get(word, 0) + 1\n"
    "    ranked = sorted(counts.items(), key=lambda item: -item[1])\n    return ranked\n",
)

# The few-shot example sets a prompt can use (a quality lever of program mode).
EXAMPLE_SETS = {"default": EXAMPLES, "none": (), "extended": (*EXAMPLES, MIDDLE_FIX)}


def as_model_sees(text: str) -> str:
    """``text`` escaped, every line break written as ``\\n`` (the line count is unchanged)."""
    return "".join(
        line.rstrip("\r\n") + ("\n" if line.endswith(("\n", "\r")) else "") for line in split_lines(escape(text))
    )


@dataclass(frozen=True)
class SourceView:
    """A document as the model sees it: escaped, ``\\n`` line breaks, every line ending in one."""

    lines: tuple[str, ...]

    @classmethod
    def of(cls, source: str) -> SourceView:
        return cls(tuple(line if line.endswith("\n") else line + "\n" for line in split_lines(as_model_sees(source))))

    def numbered(self) -> str:
        return "".join(f"{number}| {line}" for number, line in enumerate(self.lines, 1))

    def distinct_line(self, line: str) -> int | None:
        """The number of the one input line equal to ``line`` (as the model sees it, ending in a
        line break), when exactly one is and it holds at least 10 characters besides indentation."""
        numbers = [number for number, text in enumerate(self.lines, 1) if text == line]
        return numbers[0] if len(numbers) == 1 and len(line.strip()) >= 10 else None

    def span(self, start: int, end: int) -> str:
        """The text of lines ``start``..``end`` (1-based, inclusive), as spliced after a copy."""
        return "".join(self.lines[start - 1 : end])


def model_text(program: Program, view: SourceView, *, splice: bool) -> str:
    """The program as it stands in the model's context: each copy tag followed by its lines when spliced."""
    parts = [PROGRAM_OPEN]
    for op in program.ops:
        parts.append(op.to_text())
        if splice and isinstance(op, Copy):
            parts.append(view.span(op.start, op.end))
    return "".join(parts)


def _user(instruction: str, code: str, order: str, answer: str) -> str:
    """An edit's request: ``code`` (already fenced or numbered) and the instruction in ``order``;
    code first, headed as a developer heads a chat question, the ``answer``'s heading last."""
    if order == "instruction-first":
        return f"Instruction: {instruction}\n\nCode:\n{code}"
    return f"## Code before\n{code}\n## Instruction\n{instruction}\n\n## {answer}"


def _fenced(source: str, language: str) -> str:
    code = source if source.endswith("\n") else source + "\n"
    return f"```{language}\n{code}```"


def program_messages(
    instruction: str, source: str, *, splice: bool, examples: str = "default", layout: Layout = FIRST_LAYOUT
) -> list[dict[str, str]]:
    """Chat messages for program mode; the answer continues after :func:`program_prefix`."""
    messages = [{"role": "system", "content": PROGRAM_SYSTEM}]  # its format, whatever the layout's system
    for _, example_instruction, before, after in EXAMPLE_SETS[examples]:
        view = SourceView.of(before)
        answer = model_text(oracle_program(before, after), view, splice=splice) + "</program>"
        messages += [
            {"role": "user", "content": _user(example_instruction, view.numbered(), layout.order, "Program")},
            {"role": "assistant", "content": answer},
        ]
    code = SourceView.of(source).numbered()
    messages.append({"role": "user", "content": _user(instruction, code, layout.order, "Program")})
    return messages


def rewrite_messages(
    instruction: str, source: str, language: str, examples: str = "none", layout: Layout = Layout()
) -> list[dict[str, str]]:
    """Chat messages for rewrite mode; the answer continues after :func:`rewrite_prefix` (``layout.fence``)."""
    system = REWRITE_SYSTEMS[layout.system].format(language=f"{language} " if language else "")
    messages = [{"role": "system", "content": system}]
    for example_language, example_instruction, before, after in EXAMPLE_SETS[examples]:
        request = _user(example_instruction, _fenced(before, example_language), layout.order, "Code after")
        messages += [
            {"role": "user", "content": request},
            {"role": "assistant", "content": _fenced(after, example_language)},
        ]
    request = _user(instruction, _fenced(source, language), layout.order, "Code after")
    messages.append({"role": "user", "content": request})
    return messages


@dataclass(frozen=True)
class CodeMatches:
    """Where a line of a change stands in the code, as the model is told beside it: the code
    lines it equals, whitespace aside (`` =12`` or `` =12,40``), else the one code line it reads
    like (`` ~12``); nothing for a short line that equals none.  Evidence, not the answer: the
    model still chooses every span."""

    code: tuple[str, ...]
    where: dict[str, list[int]]

    @classmethod
    def of(cls, view: SourceView) -> CodeMatches:
        where: dict[str, list[int]] = {}
        for number, line in enumerate(view.lines, 1):
            if line.strip():
                where.setdefault(line.strip(), []).append(number)
        return cls(tuple(line.strip() for line in view.lines), where)

    def hint(self, line: str) -> str:
        """`` =N,...`` (at most :data:`MATCHES_SHOWN` numbers), `` ~N`` or ``""`` for ``line``."""
        key = line.strip()
        found = self.where.get(key, []) if key else []
        if found:
            more = "..." if len(found) > MATCHES_SHOWN else ""
            return " =" + ",".join(map(str, found[:MATCHES_SHOWN])) + more
        if len(key) < RESEMBLING_CHARS:
            return ""
        like = alike(key, self.code)
        if not like:
            return ""
        _, at = max(like, key=lambda found: (found[0], -found[1]))  # the likest, the first of equals
        return f" ~{at + 1}"


MATCHES_SHOWN = 3
RESEMBLING, RESEMBLING_CHARS = 0.7, 8  # a line reads like a code line: above this ratio, at least this long


def alike(line: str, candidates: Sequence[str]) -> list[tuple[float, int]]:
    """The candidates ``line`` reads like (a ratio above :data:`RESEMBLING`), as (ratio, index)
    pairs in the candidates' order."""
    matcher = difflib.SequenceMatcher(None, autojunk=False)
    matcher.set_seq2(line)
    found = []
    for at, candidate in enumerate(candidates):
        matcher.set_seq1(candidate)
        if matcher.real_quick_ratio() > RESEMBLING and matcher.quick_ratio() > RESEMBLING:
            if (ratio := matcher.ratio()) > RESEMBLING:
                found.append((ratio, at))
    return found


def shown_change(change: Change, view: SourceView, matches: CodeMatches) -> str:
    """The change as the model reads it (``view``: its lines as :class:`SourceView` gives them):
    each line numbered ("N| text") in its form's layout, a SEARCH body's lines and a hunk's
    removed lines as "-| text", unnumbered (lines to find in the code, not to copy); beside each
    number, where the line stands in the code (:class:`CodeMatches`: "N =12| text")."""

    def numbered(n: int) -> str:
        return f"{n}{matches.hint(view.lines[n - 1])}| {view.lines[n - 1]}"

    def removed(line: str) -> str:
        return f"-{matches.hint(line)}| {line}"

    if not change.pieces:
        return "".join(numbered(n) for n in range(1, len(view.lines) + 1))
    parts = []
    for piece in change.pieces:
        anchor = SourceView.of("".join(piece.anchor)).lines if piece.anchor else ()
        lines = [numbered(n) for n in range(piece.first, piece.last + 1)]
        if change.form == "search-replace":
            parts += [SEARCH + "\n", *map(removed, anchor), DIVIDER + "\n", *lines, REPLACE + "\n"]
            continue
        parts.append((piece.header or "@@") + "\n")
        new = view.lines[piece.first - 1 : piece.last]
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, anchor, new, autojunk=False).get_opcodes():
            if tag != "equal":
                parts += map(removed, anchor[i1:i2])
            parts += lines[j1:j2]
    return "".join(parts)


def _apply_user(view: SourceView, change: Change, instruction: str) -> str:
    said = f"Instruction: {instruction}\n\n" if instruction else ""
    shown = shown_change(change, change_view(change), CodeMatches.of(view))
    return f"{said}Code:\n{view.numbered()}\nChange:\n{shown}"


def change_view(change: Change) -> SourceView:
    """The change's numbered lines as the model sees them (a change copy splices these)."""
    return SourceView.of("".join(line.text for line in change.lines))


def apply_messages(source: str, change: Change, instruction: str = "") -> list[dict[str, str]]:
    """Chat messages for an apply program; the answer continues after :func:`program_prefix`."""
    return [
        {"role": "system", "content": APPLY_SYSTEM},
        {"role": "user", "content": _apply_user(SourceView.of(source), change, instruction)},
    ]


def apply_rewrite_messages(source: str, change: Change, language: str, instruction: str = "") -> list[dict[str, str]]:
    """Chat messages for an apply by rewriting; the answer continues after :func:`rewrite_prefix`."""
    code = source if source.endswith("\n") else source + "\n"
    given = change.given if change.given.endswith("\n") else change.given + "\n"
    said = f"Instruction: {instruction}\n\n" if instruction else ""
    user = f"{said}Code:\n```{language}\n{code}```\n\nChange:\n```\n{given}```"
    return [{"role": "system", "content": APPLY_REWRITE_SYSTEM}, {"role": "user", "content": user}]


WHOLE_FILE = "the whole file"
CHOICE_SYSTEM = (
    "You read a file and an instruction to edit it. Name the one definition of the file whose code must "
    "change to do what the instruction says, or the whole file when the instruction is about all of it."
)
CHOICE_PREFIX = "The definition that must change is `"  # the answer: a name, then a closing backtick


def choice_messages(instruction: str, source: str, language: str, names: Sequence[str]) -> list[dict[str, str]]:
    """Chat messages asking which of ``names`` (a file's definitions) an instruction is about; the
    answer continues after :data:`CHOICE_PREFIX` with one of them or :data:`WHOLE_FILE`, then a backtick.
    (Quoted names: unquoted, a name that starts with an English word, ``with_header``, wins too often.)"""
    code = source if source.endswith("\n") else source + "\n"
    listed = "\n".join(f"- `{name}`" for name in (*names, WHOLE_FILE))
    user = (
        f"Code:\n```{language}\n{code}```\n\nInstruction: {instruction}\n\nDefinitions:\n{listed}\n\n"
        "Which definition must change?"
    )
    return [{"role": "system", "content": CHOICE_SYSTEM}, {"role": "user", "content": user}]


def program_prefix() -> str:
    return PROGRAM_OPEN


def rewrite_prefix(language: str) -> str:
    return f"```{language}\n"


class _GenerationTags(jinja2.ext.Extension):
    """Hugging Face's ``{% generation %}`` chat-template tag, passed through."""

    tags = {"generation"}

    def parse(self, parser: jinja2.parser.Parser) -> list[jinja2.nodes.Node]:
        parser.stream.skip(1)
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


def _tojson(
    value: object,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _raise_exception(message: str) -> NoReturn:
    raise ValueError(message)


class ChatTemplate:
    """Renders messages with the model's own chat template (GGUF metadata), else ChatML.

    The template is rendered with jinja2 the way Hugging Face and llama-cpp-python render chat
    templates (a sandbox, ``trim_blocks``, ``lstrip_blocks``, loop controls, their ``tojson``), so
    the remote backend needs no llama.cpp installed."""

    CHATML = (
        "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
        "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )

    def __init__(self, metadata: dict[str, str]):
        environment = ImmutableSandboxedEnvironment(
            loader=jinja2.BaseLoader(),
            trim_blocks=True,
            lstrip_blocks=True,
            extensions=[_GenerationTags, jinja2.ext.loopcontrols],
        )
        environment.filters["tojson"] = _tojson
        self.template = environment.from_string(metadata.get("tokenizer.chat_template") or self.CHATML)

    def render(self, messages: list[dict[str, str]], answer_prefix: str) -> str:
        """The prompt text: the conversation, the assistant's turn opened, and ``answer_prefix``."""
        prompt = self.template.render(
            messages=messages,
            eos_token="",
            bos_token="",
            add_generation_prompt=True,
            raise_exception=_raise_exception,
            tools=None,
            functions=None,
            function_call=None,
            tool_choice=None,
            strftime_now=lambda spec: datetime.now().strftime(spec),
        )
        return prompt + answer_prefix

    def choice_prompt(self, source: str, instruction: str, language: str, names: Sequence[str]) -> str:
        """The prompt text of the choice among a file's definitions (:func:`choice_messages`)."""
        return self.render(choice_messages(instruction, source, language, names), CHOICE_PREFIX)

    def apply_prompt(self, source: str, change: Change, *, mode: str, language: str, instruction: str = "") -> str:
        """The prompt text of an apply in ``mode``: rewrite and lookup write code, the others programs."""
        if mode in ("rewrite", "lookup"):
            return self.render(apply_rewrite_messages(source, change, language, instruction), rewrite_prefix(language))
        return self.render(apply_messages(source, change, instruction), program_prefix())

    def edit_prompt(
        self,
        source: str,
        instruction: str,
        *,
        mode: str,
        splice: str,
        language: str,
        examples: str,
        layout: Layout | None = None,
    ) -> str:
        """The prompt text of an edit in ``mode`` laid out as ``layout`` (None: :func:`default_layout`):
        rewrite and lookup write code, the others programs."""
        layout = layout or default_layout(mode)
        if mode in ("rewrite", "lookup"):
            prefix = rewrite_prefix(language) if layout.fence else ""
            return self.render(rewrite_messages(instruction, source, language, examples, layout), prefix)
        messages = program_messages(instruction, source, splice=splice == "prefill", examples=examples, layout=layout)
        return self.render(messages, program_prefix())
