"""The guard against lost code (model-free): what a result drops that its instruction did not ask to drop."""

import textwrap
from pathlib import Path

import pytest

from copyedit_lsp.core.loss import lost_code
from copyedit_lsp.core.program import Copy, Gen, Program
from copyedit_lsp.core.resolver import resolve, split_lines
from copyedit_lsp.decode.edit import EditOptions, EditResult, EditStats, fall_back

# A request router of 96 lines: imports, three classes, helpers and the app factory at line 77.
ROUTER = textwrap.dedent(
    '''\
    """A tiny request router."""
    import json
    import logging
    import os
    import re
    from urllib.parse import unquote


    class Request:
        def __init__(self, method, path, body=b""):
            self.method = method
            self.path = path
            self.body = body

        def json(self):
            return json.loads(self.body or b"null")


    class Response:
        def __init__(self, status=200, body="", headers=None):
            self.status = status
            self.body = body
            self.headers = headers or {}

        def encoded(self):
            return self.body.encode("utf-8")


    class Router:
        def __init__(self):
            self.routes = []

        def add(self, method, pattern, handler):
            self.routes.append((method, re.compile(pattern + "$"), handler))

        def dispatch(self, request):
            for method, pattern, handler in self.routes:
                match = pattern.match(request.path.split("?")[0])
                if match and method == request.method:
                    return handler(request, **match.groupdict())
            return Response(404, "not found")


    def parse_query(path):
        if "?" not in path:
            return {}
        query = path.split("?", 1)[1]
        pairs = {}
        for part in query.split("&"):
            key, _, value = part.partition("=")
            pairs[unquote(key)] = unquote(value)
        return pairs


    def echo(request):
        pairs = parse_query(request.path)
        return Response(200, json.dumps(pairs))


    def health(request):
        return Response(200, "ok")


    def user(request, name):
        return Response(200, f"user {name}")


    def not_allowed(request):
        return Response(405, "method not allowed")


    def with_header(response, key, value):
        response.headers[key] = value
        return response


    def make_app():
        router = Router()
        router.add("GET", "/echo", echo)
        router.add("GET", "/health", health)
        router.add("GET", "/users/(?P<name>[a-z]+)", user)
        router.add("POST", "/echo", not_allowed)
        return router


    def serve(app, requests):
        answers = []
        for request in requests:
            answers.append(app.dispatch(request))
        return answers


    if __name__ == "__main__":
        app = make_app()
        for answer in serve(app, [Request("GET", "/health")]):
            print(answer.status, answer.body)
    '''
)
SYMPTOM = "requests like /echo?token=abc==&debug come back with an empty query; fix it"


def test_the_router_program_that_deleted_lines_2_to_77_is_a_loss_that_names_what_it_drops():
    """The default program of the report: the first line, a gen, the last nineteen lines."""
    assert len(split_lines(ROUTER)) == 96 and split_lines(ROUTER)[76] == "def make_app():\n"
    program = Program((Copy(1, 1), Gen("def make_app():\n"), Copy(78, 96)))
    loss = lost_code(ROUTER, resolve(program, ROUTER), "python", SYMPTOM)
    assert loss is not None
    assert set(loss.definitions) == {"Request", "Response", "Router", "parse_query", "echo", "health", "user",
                                     "not_allowed", "with_header"}  # fmt: skip
    assert loss.runs == ((2, 74),) and loss.lines > 50  # to the last line of with_header
    assert "Request" in loss.describe() and "lines 2-74" in loss.describe()


def test_the_fix_itself_loses_nothing():
    fixed = ROUTER.replace(
        'key, _, value = part.partition("=")', 'key, _, value = part.partition("=") if part else ("", "", "")'
    )
    assert fixed != ROUTER and lost_code(ROUTER, fixed, "python", SYMPTOM) is None


def line_of(start: str, text: str = ROUTER) -> int:
    """The number (1-based) of the line of ``text`` (the router's) that starts with ``start``."""
    return next(n for n, line in enumerate(split_lines(text), 1) if line.startswith(start))


def without(text: str, first: int, last: int) -> str:
    """``text`` without lines ``first``..``last`` (1-based)."""
    lines = split_lines(text)
    return "".join(lines[: first - 1] + lines[last:])


def test_deleted_statements_are_a_loss_unless_the_instruction_asks_for_them_by_name():
    loop = line_of("    for part in query")
    dropped = without(ROUTER, loop, loop + 2)  # parse_query's loop, three lines
    loss = lost_code(ROUTER, dropped, "python", "Make parse_query faster.")
    assert loss is not None and loss.definitions == () and loss.runs == ((loop, loop + 2),) and loss.lines == 3
    assert lost_code(ROUTER, dropped, "python", "Remove the loop over the parts in parse_query.") is None
    assert lost_code(ROUTER, without(ROUTER, loop, loop + 1), "python", "Make parse_query faster.") is None  # two


def test_a_definition_deleted_is_a_loss_unless_asked_for_by_a_removal_and_its_name():
    first = line_of("def not_allowed")
    dropped = without(ROUTER, first, first + 2)  # not_allowed and the blank line after it
    assert lost_code(ROUTER, dropped, "python", "Tidy up the handlers.").definitions == ("not_allowed",)
    assert lost_code(ROUTER, dropped, "python", "Delete not_allowed; POST /echo is fine.") is None
    assert lost_code(ROUTER, dropped, "python", "Delete the unused handler.") is not None  # no name said


def test_a_definition_renamed_in_place_or_rewritten_in_place_is_no_loss():
    renamed = ROUTER.replace("def with_header(", "def add_header(")
    assert lost_code(ROUTER, renamed, "python", "Give with_header a better name.") is None
    rewritten = ROUTER.replace(
        "    answers = []\n    for request in requests:\n        answers.append(app.dispatch(request))\n"
        "    return answers\n",
        "    return [app.dispatch(request) for request in requests]\n",
    )
    assert rewritten != ROUTER and lost_code(ROUTER, rewritten, "python", "Use a comprehension in serve.") is None


def test_one_line_written_for_many_is_a_loss():
    lines, first = split_lines(ROUTER), line_of("def parse_query")
    one = "    return dict(p.split('=') for p in path.split('?')[1].split('&'))\n"
    squashed = "".join(lines[:first] + [one] + lines[first + 8 :])
    loss = lost_code(ROUTER, squashed, "python", "Shorten parse_query.")
    assert loss is not None and loss.definitions == () and loss.runs


def test_moved_code_is_kept():
    lines, first = split_lines(ROUTER), line_of("def parse_query") - 1
    moved = "".join(lines[:first] + lines[first + 11 :] + ["\n", "\n"] + lines[first : first + 11])  # to the end
    assert lost_code(ROUTER, moved, "python", "Move parse_query to the end.") is None


def test_javascript_definitions_and_an_unknown_language():
    source = (
        "const f = (a) => a + 1;\n\nclass C {\n  m() {\n    return 2;\n  }\n}\n\nfunction g() {\n  return f(1);\n}\n"
    )
    loss = lost_code(source, without(source, 3, 8), "javascript", "Make g shorter.")
    assert loss is not None and loss.definitions == ("C",)
    assert lost_code(source, without(source, 3, 8), None, "Make g shorter.").definitions == ()  # the lines still count


BEFORE = "def area(r):\n    return 3.14 * r * r\n\n\ndef perimeter(r):\n    return 2 * 3.14 * r\n"


@pytest.mark.parametrize("rewrite_loses", [False, True])
def test_a_program_that_loses_code_gives_way_to_the_rewrite_and_a_lossy_rewrite_is_marked(rewrite_loses):
    """Program mode's result that drops ``perimeter`` gives way to the rewrite (``fallback`` "loss");
    where the rewrite drops it too, the result says what it loses (and is not offered as it is)."""
    kept = BEFORE.replace("3.14", "math.pi")
    rewritten = "def area(r):\n    return math.pi * r * r\n" if rewrite_loses else kept
    calls = []

    class Rewriter:
        def warm(self, options):
            pass

        def edit(self, source, instruction, options=EditOptions(), *, stop=None, on_progress=None):
            calls.append(options.mode)
            return EditResult(None, rewritten, EditStats(mode=options.mode, total_seconds=0.5))

        def close(self):
            pass

    program = Program((Copy(1, 1), Gen("    return math.pi * r * r\n")))
    lossy = EditResult(program, resolve(program, BEFORE), EditStats(total_seconds=0.25))
    result = fall_back(Rewriter(), lossy, BEFORE, "Use math.pi.", EditOptions(language="python"), mode="lookup")
    assert calls == ["lookup"] and result.stats.fallback == "loss" and result.replaced == program
    assert result.text == rewritten
    assert (result.loss is not None and result.loss.definitions == ("perimeter",)) == rewrite_loses


def test_a_result_that_no_longer_parses_keeps_the_definitions_whose_headers_it_holds():
    """The closing brace left out: tree-sitter finds no ``add`` in the result, but its header line
    is there; one line gone is no loss (the syntax guard speaks for the brace)."""
    source = "function add(a, b) {\n  return a + b;\n}\n"
    assert lost_code(source, "function add(a, b) {\n  return a - b;\n", "javascript", "Subtract.") is None
    assert lost_code(source, "\n", "javascript", "Subtract.").definitions == ("add",)


def test_a_name_that_starts_with_a_removal_verb_asks_for_no_removal():
    source = (Path(__file__).parent / "shapes" / "config.js").read_text()
    start = line_of("function mergeDeep", source)
    dropped = without(source, start, start + 10)  # mergeDeep and the blank line after it
    jsdoc = "Add a JSDoc comment to mergeDeep like the one on flagsToConfig, documenting both parameters"
    loss = lost_code(source, dropped, "javascript", jsdoc)
    assert loss is not None and loss.definitions == ("mergeDeep",)
    assert lost_code(source, dropped, "javascript", "Inline mergeDeep into resolveConfig.") is None
    assert lost_code(source, dropped, "javascript", "Document mergeDeep. Drop the unused imports.") is not None
    python = "def remove(items, item):\n    items.remove(item)\n    return items\n\n\ndef size(items):\n    return len(items)\n"
    assert lost_code(python, without(python, 1, 5), "python", "Fix remove so it returns a copy.") is not None
    assert lost_code(python, without(python, 1, 5), "python", "Remove remove.") is None


def test_a_definition_replaced_by_the_one_asked_for_is_lost_not_renamed():
    """Asked to add ``miles_to_kilometers``, the 0.5B's rewrite wrote it where
    ``kilometers_to_miles`` was: not a rename (the instruction asks for the new name as an addition)."""
    before = "def kilometers_to_miles(distance):\n    return distance * 0.621371\n"
    replaced = "def miles_to_kilometers(distance):\n    return distance / 0.621371\n"
    asked = "Add a function called `miles_to_kilometers` that returns distance / 0.621371."
    assert lost_code(before, replaced, "python", asked).definitions == ("kilometers_to_miles",)
    assert lost_code(before, replaced, "python", "Rename kilometers_to_miles and invert it.") is None
