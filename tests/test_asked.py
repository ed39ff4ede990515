"""The definitions an instruction asks to add, and a result that lacks them (copyedit_lsp.core.asked)."""

import pytest

from copyedit_lsp.core.asked import asked_definitions, code_changed, documentation_only, mismatch, missing_definitions

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


JSDOC = "Add a JSDoc comment to mergeDeep like the one on flagsToConfig, documenting both parameters"


def test_documentation_alone_is_asked_where_no_other_change_is_named():
    assert documentation_only(JSDOC) and documentation_only("Add docstrings to every function.")
    assert not documentation_only("Fix the off-by-one in last and add a comment about it.")
    assert not documentation_only("Add type hints and docstrings.")  # annotations change the code
    assert not documentation_only("Make parse faster.")


def test_a_result_that_changes_code_where_documentation_alone_is_asked_is_a_mismatch():
    source = "def add(a, b):\n    return a + b\n"
    documented = 'def add(a, b):\n    """The sum."""\n    return a + b  # plain\n'
    assert mismatch(source, documented, "python", "Add a docstring to add.") is None
    changed = 'def add(a, b):\n    """The sum."""\n    return a - b\n'
    assert mismatch(source, changed, "python", "Add a docstring to add.") == (
        "it changes code, where the instruction asks for documentation alone"
    )
    js = "function add(a, b) {\n  const sum = a + b;\n  return sum;\n}\n"
    commented = "/** Adds. */\nfunction add(a, b) {\n  // const sum = a + b;\n  return sum;\n}\n"  # code made a comment
    assert code_changed(js, commented, "javascript") and mismatch(js, commented, "javascript", JSDOC)
    assert mismatch(source, changed, "python", "Fix add.") is None  # a change was asked for
    assert not code_changed(source, changed, None)  # an unknown language: nothing to tell
