"""The definitions an instruction asks to add, and a result that lacks them (copyedit_lsp.asked)."""

import pytest

from copyedit_lsp.asked import asked_definitions, missing_definitions

UNITS = "def kilometers_to_miles(distance):\n    return distance * 0.621371\n"
ADD = "Add a function called `miles_to_kilometers` that returns distance / 0.621371."


@pytest.mark.parametrize(
    ("instruction", "names"),
    [
        (ADD, ["miles_to_kilometers"]),
        ("Create a class named Stack with push and pop.", ["Stack"]),
        ("Write a helper parse_date(text) and use it in load.", ["parse_date"]),
        ("Implement a method `toJSON` on Config; add a function makeConfig too.", ["toJSON", "makeConfig"]),
        ("Add a function that sorts the list.", []),  # no name said
        ("Add a method area to Circle.", []),  # a plain word: not marked as a name
        ("Add a JSDoc comment to mergeDeep.", []),  # no definition asked for
    ],
)
def test_the_names_an_instruction_asks_to_add(instruction, names):
    assert asked_definitions(instruction) == names


def test_a_result_lacks_an_asked_definition_unless_it_or_the_source_defines_it():
    rewritten = UNITS.replace("*", "/")  # the 0.5B's program once changed the one function instead
    assert missing_definitions(UNITS, rewritten, "python", ADD) == ("miles_to_kilometers",)
    added = UNITS + "\n\ndef miles_to_kilometers(distance):\n    return distance / 0.621371\n"
    assert missing_definitions(UNITS, added, "python", ADD) == ()
    assert missing_definitions(added, added.replace("0.621371", "0.62"), "python", ADD) == ()  # it was there
    assert missing_definitions(UNITS, rewritten, None, ADD) == ()  # an unknown language tells no definitions
    js = "function a() {}\n"
    assert missing_definitions(js, js + "const b = () => 1;\n", "javascript", "Add a function called `b`.") == ()
