"""The live view of a running edit: each op of its program, as it closes, in the payload of the
``copyedit/op`` notification clients draw (copied lines dimmed, where new lines go; an apply's
lines taken from the change, ``kind: change``, go where a gen's would, ``first`` their first
line in the change)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..core.program import ChangeCopy, Copy, Op
from ..core.resolver import split_lines

OP_NOTIFICATION = "copyedit/op"


@dataclass
class LiveOps:
    """The ``copyedit/op`` payloads of one edit of document ``uri``, whose edited lines start at
    ``first_line`` (0-based): copies as document line ranges, gens at the line they are written
    before; indices from 0, then one payload that says the edit is done."""

    uri: str
    first_line: int
    sent: int = 0  # ops sent so far
    after: int = field(init=False)  # the document line after the last copy

    def __post_init__(self) -> None:
        self.after = self.first_line

    def notices(self, ops: Sequence[Op], tokens_per_second: float) -> list[dict]:
        """The payloads of the ops not sent yet."""
        payloads = []
        for op in ops[self.sent :]:
            if isinstance(op, Copy):
                shown = {"kind": "copy", "start": self.first_line + op.start - 1, "end": self.first_line + op.end}
                self.after = shown["end"]
            elif isinstance(op, ChangeCopy):  # lines of an applied change, written where a gen would be
                shown = {"kind": "change", "line": self.after, "lines": op.end - op.start + 1, "first": op.start}
            else:
                shown = {"kind": "gen", "line": self.after, "lines": len(split_lines(op.text)), "text": op.text}
            self.sent += 1
            payloads.append(self._payload(index=self.sent - 1, op=shown, rate=tokens_per_second))
        return payloads

    def done(self, tokens_per_second: float) -> dict:
        """The last payload: the edit has ended (applied or not)."""
        return self._payload(index=self.sent, done=True, rate=tokens_per_second)

    def _payload(self, *, index: int, rate: float, op: dict | None = None, done: bool = False) -> dict:
        payload = {"uri": self.uri, "index": index, "ops": self.sent, "tokensPerSecond": round(rate, 1)}
        return payload | ({"op": op} if op is not None else {}) | ({"done": True} if done else {})
