"""The edit contract's fallback, on a scripted editor (plumbing: which attempt's text and figures
come back); the real decoders' fallback is tested in test_decoder.py."""

from dataclasses import dataclass, field

from copyedit_lsp.core.program import Copy, Gen, Program
from copyedit_lsp.decode.edit import EditOptions, EditResult, EditStats, fall_back

BEFORE = "const add = (a, b) => {\n  return a + b;\n}\n"
UNBALANCED = "const add = (a, b) => {\n  return a - b;\n"  # the closing brace left out
BALANCED = "const add = (a, b) => {\n  return a - b;\n}\n"


@dataclass
class ScriptedRewrite:
    """An editor whose rewrites return ``text``, recording what it was asked."""

    text: str
    calls: list = field(default_factory=list)

    def warm(self, options: EditOptions) -> None:
        self.calls.append(("warm", options))

    def edit(self, source, instruction, options=EditOptions(), *, stop=None, on_progress=None) -> EditResult:
        self.calls.append(("edit", options))
        return EditResult(None, self.text, EditStats(mode=options.mode, decode_steps=7, total_seconds=0.5), (1, 2))

    def close(self) -> None:
        pass


def program_result(text: str, cut: str | None = None) -> EditResult:
    program = Program((Copy(1, 1), Gen("  return a - b;\n")))
    return EditResult(program, text, EditStats(decode_steps=3, spliced_tokens=9, total_seconds=0.25), cut=cut)


def test_a_program_that_parses_worse_gives_way_to_the_rewrite_with_both_costs():
    editor = ScriptedRewrite(BALANCED)
    first = program_result(UNBALANCED)
    options = EditOptions(language="javascript", examples="none", max_new_tokens=99)
    result = fall_back(editor, first, BEFORE, "Subtract.", options, mode="lookup")
    assert (result.text, result.program, result.replaced) == (BALANCED, None, first.program)
    assert result.stats.fallback == "syntax" and result.stats.mode == "program"
    assert (result.stats.decode_steps, result.stats.spliced_tokens) == (10, 9)
    assert result.stats.total_seconds >= 0.25 and result.tokens == (1, 2)
    (_, warmed), (_, asked) = editor.calls
    assert warmed == asked and asked.mode == "lookup" and asked.examples is None  # the rewrite's own prompt
    assert not asked.fallback and asked.max_new_tokens == 99 and asked.language == "javascript"


def test_a_program_cut_short_gives_way_too():
    editor = ScriptedRewrite(BALANCED)
    result = fall_back(
        editor, program_result(BALANCED, cut="max_new_tokens"), BEFORE, "Subtract.", EditOptions(), mode="lookup"
    )
    assert result.stats.fallback == "cut" and result.text == BALANCED and result.cut is None


def test_a_program_that_changes_nothing_gives_way_too():
    """An edit asked for and a program that resolves to the input unchanged (but whitespace at the
    ends of lines or of the text): the rewrite gets its turn."""
    for same in (BEFORE, BEFORE.rstrip("\n"), BEFORE.replace(" {", " {  ") + "\n"):
        editor = ScriptedRewrite(BALANCED)
        result = fall_back(editor, program_result(same), BEFORE, "Subtract.", EditOptions(), mode="lookup")
        assert result.stats.fallback == "unchanged" and result.text == BALANCED and len(editor.calls) == 2


def test_a_sound_program_an_unknown_language_or_fallback_off_keep_the_programs_text():
    editor = ScriptedRewrite(BALANCED)
    sound = program_result(BALANCED)
    assert fall_back(editor, sound, BEFORE, "Subtract.", EditOptions(language="javascript"), mode="lookup") is sound
    broken = program_result(UNBALANCED)
    assert fall_back(editor, broken, BEFORE, "Subtract.", EditOptions(language="cobol"), mode="lookup") is broken
    off = EditOptions(language="javascript", fallback=False)
    assert fall_back(editor, broken, BEFORE, "Subtract.", off, mode="lookup") is broken
    rewrite = EditOptions(mode="rewrite", language="javascript")
    assert fall_back(editor, broken, BEFORE, "Subtract.", rewrite, mode="lookup") is broken
    assert editor.calls == []


def test_a_program_without_the_definition_asked_for_gives_way_and_the_rewrite_is_checked():
    source = "def kilometers_to_miles(distance):\n    return distance * 0.621371\n"
    added = source + "\n\ndef miles_to_kilometers(distance):\n    return distance / 0.621371\n"
    asked = "Add a function called `miles_to_kilometers`."
    first = EditResult(Program((Copy(1, 1), Gen("    return distance / 0.621371\n"))), source.replace("*", "/"),
                       EditStats())  # fmt: skip
    result = fall_back(ScriptedRewrite(added), first, source, asked, EditOptions(language="python"), mode="lookup")
    assert result.stats.fallback == "mismatch" and result.text == added and result.mismatch is None
    again = fall_back(ScriptedRewrite(source.replace("*", "/")), first, source, asked, EditOptions(language="python"),
                      mode="lookup")  # fmt: skip
    assert again.stats.fallback == "mismatch" and "miles_to_kilometers" in again.mismatch
