"""How a program is written, op by op: the policy both decoders keep, with no model in it.

A decoder chooses tokens and sends them (llama.cpp's batches, a server's requests); the
:class:`ProgramWriter` holds what the ops written so far decide: the first line the next copy may
start at, which input lines a gen stood in for, when a run of gens repeats itself, when a gen has
written out the input's last line, and the program and text at the end.  An apply program also
copies the change's lines, forward through them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.change import Change, change_lines
from ..core.grammar import copyable_from
from ..core.program import ChangeCopy, Copy, Gen, Op, Program
from ..core.resolver import resolve
from .edit import EditOptions, newline_of, resembles, same_line, with_newline
from .prompt import SourceView


@dataclass
class ProgramWriter:
    """The state of one program being written over ``source``.  ``ordered``: a copy starts after
    what the program has copied or rewritten.  ``script``: forced mode's program, whose ops the
    decoder writes (the writer then judges nothing).  ``change``: an apply program's change lines,
    ``markers`` the numbers of those no change copy holds (a snippet's elision markers)."""

    source: str
    ordered: bool = True
    script: Program | None = None
    change: tuple[str, ...] = ()
    markers: frozenset[int] = frozenset()
    view: SourceView = field(init=False)
    changed: SourceView = field(init=False)  # the change's lines, as a change copy splices them
    ops: list[Op] = field(default_factory=list)
    after: int = 1  # the input line after what the program has copied or rewritten
    change_after: int = 1  # the change line after the program's last change copy
    cut: str | None = None  # "repeated" where the program stopped in a loop of gens

    def __post_init__(self) -> None:
        self.view = SourceView.of(self.source)
        self.changed = SourceView.of("".join(self.change))
        if self.script is not None:
            self.script.validate(self.lines, len(self.change))

    @classmethod
    def of(cls, source: str, options: EditOptions, change: Change | None = None) -> ProgramWriter:
        """The writer of a program over ``source`` as ``options`` say (an apply program's where ``change``)."""
        markers = change.markers if change is not None else frozenset()
        return cls(source, options.ordered, options.program, change_lines(change), markers)

    @property
    def lines(self) -> int:
        return len(self.view.lines)

    @property
    def first(self) -> int:
        """The first input line the next copy may start at."""
        return self.after if self.ordered else 1

    def goal(self) -> Op | None:
        """The script's next op (None: no script, or it is written out)."""
        rest = self.rest()
        return rest[0] if rest else None

    def rest(self) -> tuple[Op, ...]:
        """The script's ops not written yet (empty without a script)."""
        return self.script.ops[len(self.ops) :] if self.script is not None else ()

    @property
    def change_left(self) -> bool:
        """Whether a change copy may come next (change lines after the last change copy, not
        all of them markers)."""
        return copyable_from(self.markers, self.change_after, len(self.change))

    def copy(self, op: Copy | ChangeCopy) -> None:
        """A copy written: the program goes on after its last line (of the file or the change)."""
        self.ops.append(op)
        if isinstance(op, ChangeCopy):
            self.change_after = op.end + 1
        else:
            self.after = op.end + 1

    def doubt(self, line: int) -> None:
        """A checked copy stopped before ``line``: the gen opened there rewrites from it."""
        self.after = line

    def says_again(self, text: str) -> bool:
        """Whether a gen of ``text``, opened by the ``<gen>`` that closed the last one, only says
        what that gen said: the program is cut as repeated, the gen not taken."""
        if self.ops and self.ops[-1] == Gen(text):
            self.cut = self.cut or "repeated"
            return True
        return False

    def gen(self, text: str, doubted: int | None = None) -> bool:
        """A gen of ``text`` written (opened at the ``doubted`` line, where a copy was stopped);
        True where the program must end: the gens repeat themselves (``cut``), or the gen wrote
        out the input's last line, so nothing is left to copy."""
        self.ops.append(Gen(text))
        if self.script is not None:
            return False
        if repeating(self.ops):
            self.cut = self.cut or "repeated"
            return True
        through = replaced_through(self.view, text, doubted, self.after)
        self.after = max(self.after, through + 1)
        return self.ordered and through == self.lines and not self.change_left

    def program(self) -> Program:
        """The program of the ops written, gens in the source's line breaks."""
        return decoded_program(self.ops, self.source)

    def text(self) -> str:
        """The edited text the program resolves to."""
        return resolve(self.program(), self.source, self.change)


def decoded_program(ops: list[Op], source: str) -> Program:
    """The program of decoded ``ops``: gens in the source's line breaks, every gen but the last
    ending with one."""
    newline = newline_of(source)
    fixed: list[Op] = []
    for i, op in enumerate(ops):
        if isinstance(op, Gen):
            text = with_newline(op.text, newline)
            if i < len(ops) - 1 and not text.endswith(("\n", "\r")):
                text += newline
            op = Gen(text)
        fixed.append(op)
    return Program(tuple(fixed))


def repeating(ops: Sequence[Op], times: int = 3, longest: int = 4) -> bool:
    """Whether ``ops`` end with one run of at most ``longest`` ops written ``times`` times over: a
    model caught in a loop (``i += 1``, ``end = i``, again and again) that would write on until its
    budget is spent.  Ordered copies never repeat, so such a run is gens."""
    for period in range(1, min(longest, len(ops) // times) + 1):
        tail = ops[-times * period :]
        if all(op == tail[index % period] for index, op in enumerate(tail)):
            return True
    return False


def replaced_through(view: SourceView, text: str, doubted: int | None, first: int) -> int:
    """The last input line a gen of ``text``, written where a copy could start at ``first``, stands
    in for, as far as can be told (0: none), in both decoders; ordered copies resume after it, so a
    copy never repeats what a gen wrote:

    * a gen that opens by repeating the input from ``first`` on (a rewrite of those lines, the
      shape :func:`repeats_input` leads to) stands in for each input line in step with it that it
      repeats or that its line resembles (rewritten in place);
    * the one input line its last line reproduces, when the gen has lines enough for every
      non-blank input line from ``first`` to it (a move or a swap writes a later line out early:
      nothing is skipped then);
    * the ``doubted`` line it was opened at, when its first line resembles that line (rewritten,
      not inserted before it)."""
    lines = SourceView.of(text).lines
    through = 0
    if first <= len(view.lines) and same_line(lines[0], view.lines[first - 1]):
        for number, (line, expected) in enumerate(zip(lines, view.lines[first - 1 :], strict=False), first):
            if not same_line(line, expected) and not resembles(line, expected):
                break
            through = number
    reproduced = view.distinct_line(lines[-1])
    if reproduced is not None and reproduced >= first:
        between = sum(1 for line in view.lines[first - 1 : reproduced] if line.strip())
        through = max(through, reproduced if between <= len(lines) else 0)
    if doubted is not None and resembles(lines[0], view.lines[doubted - 1]):
        through = max(through, doubted)
    return through
