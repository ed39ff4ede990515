"""Prompts: the model's chat template, the input as numbered lines, the instruction, examples.

The one place that says how the model sees a document: reserved strings escaped, line breaks
as ``\\n``, each line numbered from 1 as ``N| text``.  Copied lines are spliced into the
model's context exactly as :func:`SourceView.span` returns them.
"""

from __future__ import annotations

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

from .program import PROGRAM_OPEN, Copy, Program, escape
from .resolver import oracle_program, split_lines

PROGRAM_SYSTEM = """You edit code. You get an instruction and the code as numbered lines ("N| text").
Answer with an edit program that produces the complete edited code:
<copy lines="I-J"/> keeps the original lines I to J (1-based, inclusive) unchanged;
<gen> and </gen> enclose new lines, written out in full.
Copy every line that stays the same; write only the lines that change.
The program starts with <program> and ends with </program>."""

REWRITE_SYSTEM = """You edit code. You get an instruction and the code.
Answer with the complete edited code in one code block, and nothing else."""

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


def _program_user(instruction: str, view: SourceView) -> str:
    return f"Instruction: {instruction}\n\nCode:\n{view.numbered()}"


def _rewrite_user(instruction: str, source: str, language: str) -> str:
    code = source if source.endswith("\n") else source + "\n"
    return f"Instruction: {instruction}\n\nCode:\n```{language}\n{code}```"


def program_messages(instruction: str, source: str, *, splice: bool, examples: str = "default") -> list[dict[str, str]]:
    """Chat messages for program mode; the answer continues after :func:`program_prefix`."""
    messages = [{"role": "system", "content": PROGRAM_SYSTEM}]
    for _, example_instruction, before, after in EXAMPLE_SETS[examples]:
        view = SourceView.of(before)
        answer = model_text(oracle_program(before, after), view, splice=splice) + "</program>"
        messages += [
            {"role": "user", "content": _program_user(example_instruction, view)},
            {"role": "assistant", "content": answer},
        ]
    messages.append({"role": "user", "content": _program_user(instruction, SourceView.of(source))})
    return messages


def rewrite_messages(instruction: str, source: str, language: str, examples: str = "default") -> list[dict[str, str]]:
    """Chat messages for rewrite mode; the answer continues after :func:`rewrite_prefix`."""
    messages = [{"role": "system", "content": REWRITE_SYSTEM}]
    for example_language, example_instruction, before, after in EXAMPLE_SETS[examples]:
        messages += [
            {"role": "user", "content": _rewrite_user(example_instruction, before, example_language)},
            {"role": "assistant", "content": f"```{example_language}\n{after}```"},
        ]
    messages.append({"role": "user", "content": _rewrite_user(instruction, source, language)})
    return messages


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

    def edit_prompt(
        self, source: str, instruction: str, *, mode: str, splice: str, language: str, examples: str
    ) -> str:
        """The prompt text of an edit in ``mode``: rewrite and lookup write code, the others programs."""
        if mode in ("rewrite", "lookup"):
            return self.render(rewrite_messages(instruction, source, language, examples), rewrite_prefix(language))
        return self.render(
            program_messages(instruction, source, splice=splice == "prefill", examples=examples), program_prefix()
        )
