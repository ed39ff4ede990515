"""hypothesis strategies for documents and edits with the awkward cases: CRLF, lone CR,
no final newline, empty lines, tabs, unicode and the program's reserved strings."""

from hypothesis import strategies as st

from copyedit_lsp.core.program import RESERVED, Copy, Gen, Program

FRAGMENTS = [
    *RESERVED,
    "<\\copy",
    "<\\\\gen>",
    "</gen",
    "<",
    "\\",
    "\t",
    "    ",
    "é",
    "日本",
    "🙂",
    "x",
    "def f():",
    '"/>',
]
BREAKS = ["\n", "\r\n", "\r"]

line_bodies = (
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=5)), max_size=4)
    .map("".join)
    .map(lambda s: s.replace("\r", "").replace("\n", ""))
)
lines = st.tuples(line_bodies, st.sampled_from(BREAKS)).map("".join)


@st.composite
def documents(draw) -> str:
    """A document: whole lines, maybe a last line without a line break."""
    body = "".join(draw(st.lists(lines, max_size=12)))
    return body + draw(st.one_of(st.just(""), line_bodies))


@st.composite
def edits(draw) -> tuple[str, str]:
    """A (before, after) pair: lines of ``before`` deleted, replaced, inserted or kept."""
    from copyedit_lsp.core.resolver import split_lines

    before = draw(documents())
    after = []
    for line in split_lines(before):
        action = draw(st.sampled_from(["keep", "keep", "keep", "drop", "replace", "insert"]))
        if action == "keep":
            after.append(line)
        elif action == "replace":
            after.append(draw(lines))
        elif action == "insert":
            after.extend([draw(lines), line])
    if draw(st.booleans()):
        after.append(draw(documents()))
    return before, "".join(after)


@st.composite
def programs(draw) -> Program:
    """A valid program over some number of lines (copies in range, gens of whole lines)."""
    n = draw(st.integers(1, 200))
    ops = []
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            start = draw(st.integers(1, n))
            ops.append(Copy(start, draw(st.integers(start, n))))
        else:
            ops.append(Gen("".join(draw(st.lists(lines, min_size=1, max_size=3)))))
    last = draw(line_bodies)
    if last:
        ops.append(Gen("".join(draw(st.lists(lines, max_size=2))) + last))
    return Program(tuple(ops))
