"""The guard against lost code: what an edit's result drops that its instruction did not ask to drop.

A **loss** is a definition (function, class, method) of the input whose name the result no longer
defines and whose header line it no longer holds (a definition of a new name in its place is a
rename, unless the instruction asks to add that name: then it was replaced, not renamed), or a run
of :data:`RUN_LINES` or more consecutive non-blank input lines that the result no longer holds
(anywhere, whitespace aside) and that nothing written in their place stands in for.
Lines replaced by new ones count as rewritten, up to :data:`LINES_PER_WRITTEN` input lines for each
line written: a gen of one line does not rewrite seventy.  A loss the instruction asks for is none:
a sentence of the instruction says remove, delete, drop, inline, merge, replace or rename (the English
word, not a name that starts with it: ``mergeDeep``, ``remove_item``, a definition called ``remove``)
and names what is lost (the definition, the definition the lines are in, or a name the lines use).

Plain logic on two texts (tree-sitter for the definitions); the decoders and the server act on it.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

from .asked import asked_definitions
from .resolver import Alignment, split_lines
from .scope import Definition, definitions

RUN_LINES = 3
LINES_PER_WRITTEN = 4
# A removal verb as an English word: never the start of a name (``mergeDeep``) or a part of one.
_REMOVAL = re.compile(
    r"(?<![\w$`])(?:remov(?:e|es|ed|ing|al)|delet(?:e|es|ed|ing|ion)|drop(?:s|ped|ping)?|inlin(?:e|es|ed|ing)"
    r"|merg(?:e|es|ed|ing)|replac(?:e|es|ed|ing|ement)|renam(?:e|es|ed|ing)|get rid of|eliminat(?:e|es|ed|ing|ion))"
    r"(?![\w$`(])",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.;!?])\s+|\n+")
NAME = re.compile(r"[A-Za-z_$][\w$]*")  # an identifier of Python or JavaScript
# Words too common in code to name what an instruction asks to drop.
_COMMON = set(keyword.kwlist) | {"self", "this", "const", "let", "var", "function", "new", "typeof", "the"}


@dataclass(frozen=True)
class Loss:
    """What a result drops: definitions by qualified name, and runs of input lines (1-based, inclusive)."""

    definitions: tuple[str, ...]
    runs: tuple[tuple[int, int], ...]
    lines: int  # non-blank input lines lost, the definitions' and the runs' together

    def describe(self) -> str:
        """One line for a user: what would be lost."""
        where = ", ".join(f"lines {first}-{last}" for first, last in self.runs[:4])
        names = ", ".join(self.definitions[:6]) + (
            f" and {len(self.definitions) - 6} more" if len(self.definitions) > 6 else ""
        )
        what = "; ".join(part for part in (where, names) if part)
        return f"it drops {what} ({self.lines} lines) that the instruction does not ask to drop"

    def to_dict(self) -> dict[str, object]:
        return {"definitions": list(self.definitions), "runs": [list(run) for run in self.runs], "lines": self.lines}


def lost_code(
    before: str, after: str, language_id: str | None, instruction: str = "", deleted: frozenset[str] = frozenset()
) -> Loss | None:
    """The code ``after`` drops from ``before`` that ``instruction`` does not ask to drop, or None;
    lines in ``deleted`` (stripped: what an applied change deletes on purpose) are never lost."""
    old, new = split_lines(before), split_lines(after)
    kept = {line.strip() for line in new if line.strip()} | deleted
    old_definitions = definitions(before, language_id)
    asked = _asked_names(instruction, {d.name for d in old_definitions})
    new_definitions = definitions(after, language_id) if old_definitions else []
    defined = {d.name for d in new_definitions}
    stripped_old, stripped_new = [line.strip() for line in old], [line.strip() for line in new]
    matcher = Alignment(stripped_old, stripped_new)
    images = _images(matcher, len(old))
    added = set(asked_definitions(instruction))  # asked for as new: never a rename of a lost one
    renamed = [d for d in new_definitions if d.name not in {o.name for o in old_definitions} | added]
    lost_definitions = [
        d
        for d in old_definitions
        if d.name not in defined
        and d.name.lower() not in asked
        and _header(old, d) not in kept  # a result that no longer parses may still hold it
        and not _renamed(d, renamed, images, len(new))
    ]
    gone = _gone_lines(matcher, stripped_old, stripped_new, kept)
    runs = []
    for first, last in _runs(old, gone):
        inside = [d for d in old_definitions if d.start_line <= first - 1 and last <= d.end_line]
        names = {word.lower() for line in old[first - 1 : last] for word in NAME.findall(line)}
        if asked & (names | {d.name.lower() for d in inside}):
            continue
        runs.append((first, last))
    lost_names = {d.qualified for d in lost_definitions}
    lost = {n for first, last in runs for n in range(first - 1, last) if old[n].strip()}
    lost |= {n for d in lost_definitions for n in range(d.start_line, d.end_line) if old[n].strip() not in kept | {""}}
    lost |= {n for d in lost_definitions for n in range(d.start_line, d.start_line + 1)}
    if not lost_definitions and not runs:
        return None
    outermost = [d.qualified for d in lost_definitions if not any(o in lost_names for o in _prefixes(d.outer))]
    return Loss(tuple(outermost), tuple(runs), len(lost))


def _asked_names(instruction: str, defined: set[str]) -> set[str]:
    """The names an instruction asks to be dropped: every name a sentence of it mentions that says a
    removal verb (a word that is also the name of one of the code's ``defined`` names is that name)."""
    asked = set()
    for sentence in _SENTENCE.split(instruction):
        if any(verb.group() not in defined for verb in _REMOVAL.finditer(sentence)):
            asked |= {word.lower() for word in NAME.findall(sentence) if len(word) > 2 and word not in _COMMON}
    return asked


def _prefixes(outer: tuple[str, ...]) -> list[str]:
    """The qualified names of the definitions around one: ``("A", "B")`` gives ``A`` and ``A.B``."""
    return [".".join(outer[: n + 1]) for n in range(len(outer))]


def _header(lines: list[str], definition: Definition) -> str:
    """The first line of ``definition`` that says its name (past its decorators), stripped."""
    name = re.compile(rf"(?<![\w$]){re.escape(definition.name)}(?![\w$])")
    span = lines[definition.start_line : definition.end_line]
    return next((line.strip() for line in span if name.search(line)), span[0].strip())


def _images(matcher: Alignment, count: int) -> list[int | None]:
    """Each of ``count`` input lines' line in the result where the two line up unchanged (the
    ``matcher`` of their stripped lines), else None."""
    images: list[int | None] = [None] * count
    for i, j, size in matcher.get_matching_blocks():
        images[i : i + size] = range(j, j + size)
    return images


def _renamed(definition: Definition, fresh: list[Definition], images: list[int | None], count: int) -> bool:
    """Whether a definition of a new name stands in ``definition``'s place in the result (between the
    result lines of the unchanged lines around it) with at least half its lines: renamed, not lost."""
    before = [image for image in images[: definition.start_line] if image is not None]
    after = [image for image in images[definition.end_line :] if image is not None]
    low, high = (before[-1] + 1 if before else 0), (after[0] if after else count)
    size = definition.end_line - definition.start_line
    return any(low <= d.start_line < high and 2 * (d.end_line - d.start_line) >= size for d in fresh)


def _gone_lines(matcher: Alignment, a: list[str], b: list[str], kept: set[str]) -> list[bool]:
    """For each input line of ``a`` (stripped; ``b`` the result's, ``matcher`` theirs): whether it is
    non-blank, held nowhere in the result (``kept``), and not rewritten in place (a replaced block
    rewrites :data:`LINES_PER_WRITTEN` input lines per line written)."""
    gone = [False] * len(a)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("equal", "insert"):
            continue
        missing = [i for i in range(i1, i2) if a[i] and a[i] not in kept]
        rewritten = LINES_PER_WRITTEN * sum(1 for line in b[j1:j2] if line)
        for i in missing[rewritten:]:
            gone[i] = True
    return gone


def _runs(old: list[str], gone: list[bool]) -> list[tuple[int, int]]:
    """Runs of at least :data:`RUN_LINES` gone non-blank lines (blank lines between them join a run)."""
    runs, current = [], []
    for number, line in enumerate(old):
        if gone[number]:
            current.append(number)
        elif line.strip():
            if len(current) >= RUN_LINES:
                runs.append((current[0] + 1, current[-1] + 1))
            current = []
    if len(current) >= RUN_LINES:
        runs.append((current[0] + 1, current[-1] + 1))
    return runs
