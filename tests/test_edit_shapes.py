"""Two shapes of edit the harness once lost, through ``copyedit apply`` with the real models in every
mode: the result is right, or it is refused (exit 3 cut short, 4 loses code, 6 changes nothing, 7
lacks the definition asked for) and nothing is written; never a wrong result reported as applied.

* adding a function to a two-line file (rewrite and program mode once returned the file unchanged,
  exit 0; the 0.5B's program rewrote the one function instead: :mod:`copyedit_lsp.core.asked` refuses
  a result that lacks the definition asked for);
* a JSDoc comment asked for one function of a module, the instruction naming it (``mergeDeep``: the
  loss guard once read its first letters as the verb "merge", so a result that dropped the
  function whole was applied).
"""

import json
import math
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from copyedit_lsp.cli.main import main
from copyedit_lsp.core.loss import lost_code
from copyedit_lsp.core.scope import adds_syntax_errors

SHAPES = Path(__file__).parent / "shapes"
MODELS = ("qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b")
MODES = ("program", "rewrite", "lookup")
REFUSED = {3, 4, 6, 7}  # cut short, loses code, changes nothing, lacks the definition asked for

ADD = "Add a function called `miles_to_kilometers` that takes a distance in miles and returns distance / 0.621371."
JSDOC = (
    "Add a JSDoc comment to mergeDeep like the one on flagsToConfig, documenting both parameters and the return value"
)


def added_function_right(text: str, before: str, folder: Path) -> None:
    space: dict = {}
    exec(compile(text, "units.py", "exec"), space)
    assert math.isclose(space["miles_to_kilometers"](0.621371), 1.0)
    assert math.isclose(space["kilometers_to_miles"](10), 6.21371)


def jsdoc_right(text: str, before: str, folder: Path) -> None:
    assert lost_code(before, text, "javascript") is None
    assert not adds_syntax_errors(before, text, "javascript")
    comment = re.search(r"/\*\*((?:(?!\*/).)*)\*/\s*function mergeDeep\(", text, re.DOTALL)
    assert comment is not None and comment.group(1).count("@param") >= 2
    assert re.search(r"@returns?\b", comment.group(1))
    run = "const c = require('./config.js'); console.log(JSON.stringify(c.resolveConfig({port: 1}, ['--a.b=2'])))"
    out = subprocess.run(["node", "-e", run], cwd=folder, capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == {"port": 1, "host": "localhost", "logging": {"level": "info", "file": None},
                               "a": {"b": "2"}}  # fmt: skip


# shape file -> the instruction, and what checks a result offered as applied
CASES = {"units.py": (ADD, added_function_right), "config.js": (JSDOC, jsdoc_right)}


@pytest.mark.model
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", CASES)
def test_an_edit_the_harness_once_lost_is_right_or_refused(tmp_path, capsys, model, mode, shape):
    """Exit 0 with the file written right, or refused with nothing written."""
    instruction, right = CASES[shape]
    path = tmp_path / shape
    shutil.copy(SHAPES / shape, path)
    before = path.read_text()
    status = main(["apply", str(path), "-i", instruction, "--mode", mode, "--model", model, "--json", "--write"])
    text = json.loads(capsys.readouterr().out)["text"]
    assert status in {0} | REFUSED
    if status == 0:
        assert path.read_text() == text
        right(text, before, tmp_path)
    else:
        assert path.read_text() == before
