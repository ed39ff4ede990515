"""How an edit's prompt is laid out (prompt.Layout) and how a rewrite's code is read from its answer."""

import pytest

from copyedit_lsp.decode.edit import answer_code
from copyedit_lsp.decode.prompt import FIRST_LAYOUT, Layout, program_messages, rewrite_messages


def test_a_layout_reads_from_its_parts_and_writes_them_back():
    assert Layout.parse("") == Layout() == Layout("code-first", "plain", True)
    assert Layout.parse("nofence,instruction-first") == Layout("instruction-first", "plain", False)
    assert Layout.parse(FIRST_LAYOUT.text()) == FIRST_LAYOUT
    with pytest.raises(ValueError, match="unknown layout part 'sideways'"):
        Layout.parse("code-first,sideways")


def test_code_first_puts_the_instruction_between_the_code_and_the_answers_heading():
    system, user = rewrite_messages("Rename x to y.", "x = 1", "python", examples="none")
    assert system["content"] == "Reply with the complete changed code in one python code block."
    assert user["content"] == "## Code before\n```python\nx = 1\n```\n## Instruction\nRename x to y.\n\n## Code after"
    first = rewrite_messages("Rename x to y.", "x = 1\n", "python", examples="none", layout=FIRST_LAYOUT)
    assert first[1]["content"] == "Instruction: Rename x to y.\n\nCode:\n```python\nx = 1\n```"
    assert first[0]["content"].startswith("You edit code.")
    program = program_messages("Rename x to y.", "x = 1\n", splice=True, examples="none", layout=Layout())
    assert program[-1]["content"] == "## Code before\n1| x = 1\n\n## Instruction\nRename x to y.\n\n## Program"


@pytest.mark.parametrize(
    ("answer", "fenced", "expected"),
    [
        (b"x = 2\n```\nmore", True, (b"x = 2\n", True)),
        (b"x = 2\n", True, (b"x = 2\n", False)),  # still writing
        (b"Here it is:\n```python\nx = 2\n```\nIt renames.", False, (b"x = 2\n", True)),
        (b"Here it is:\n```python\nx = 2\n", False, (b"x = 2\n", False)),
        (b"Here it is:\n```pyth", False, (b"", False)),  # the fence line not yet ended
        (b"x = 2\n", False, (b"x = 2\n", False)),  # no fence at all: the answer is the code
    ],
)
def test_a_rewrites_code_is_read_from_its_answer(answer, fenced, expected):
    assert answer_code(answer, fenced) == expected
