"""Training edits built deterministically from code on this machine, never from evaluation data.

Sources: the Python standard library and the packages of the running environment, and the
JavaScript under the VS Code extension's ``node_modules`` (after ``npm ci``).  Regions are the
sizes the server edits: a function (in JavaScript also one bound to a name, ``const f = (a) => {``),
a class, a run of a file's top-level definitions; a share of them comes with the lines around it
in its file (:func:`with_context`), so line 1 of an edit is not always its definition.  Edit kinds
(:data:`KINDS`), each with several phrasings of its instruction:

* ``bug``: a synthetic bug (an operator, a comparison, an off-by-one, a wrong variable, swapped
  arguments, a deleted condition or line, a negated test, a wrong return value) whose reversal is
  the fix; ``bugs``: two of them; ``file-bug``: one in a run of a file's definitions; a share of
  the Python bugs says what the function must do in its docstring's words (:func:`with_intent`);
* ``docstring``, ``comments``, ``types``: what real code has and the before-text lacks;
* ``rename``: a local name, or the function itself, renamed everywhere in the region;
* ``distill`` (:mod:`.distill`): the base model's own rewrites of real code, kept where they parse;
* ``module-*`` (:mod:`.modules`): whole-module edits over 40 to 150 lines of a file (a bug told by
  its symptom, a rename everywhere, docstrings or types of several functions, a constant).

:func:`check_no_leak` refuses any edit that holds three lines in a row (whitespace aside) of an
evaluation item's before- or after-text, CanItEdit's included.
The data is built by a command, never committed: it is other people's code.
"""

from __future__ import annotations

import hashlib
import random
import re
import sysconfig
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from ..core.scope import parse, syntax_errors
from .bugs import inject_bug, local_names

NEW_NAMES = (
    "result",
    "total",
    "item",
    "value",
    "index",
    "items",
    "data",
    "entry",
    "node",
    "size",
    "current",
    "buffer",
    "record",
    "names",
    "count",
    "source",
    "target",
    "parts",
    "output",
    "options",
)

BUG_PHRASES = (
    "Fix bugs in {name}.",
    "Fix the bug in {name}.",
    "{name} has a bug: fix it.",
    "Find and fix the bug in {name}.",
    "Correct the error in {name}.",
    "Fix {name}.",
)
# a bug's instruction that says what the function must do, in its docstring's words
INTENT_PHRASES = (
    "Fix the bug in {name}: it must {intent}.",
    "{name} should {intent}. Fix it.",
    "Fix {name}: it is meant to {intent}.",
)
INTENT_VERBS = set(
    "return compute calculate get set create make build check convert find load read write parse add remove"
    " update run apply generate initialize process handle call resolve register validate yield raise test"
    " determine count format split join append insert delete open close send receive copy move sort filter"
    " merge extract encode decode replace reset clear start stop wait print emit save fetch push pop shift"
    " rotate compare construct produce enable disable solve evaluate transform normalize wrap select collect"
    " prepare execute iterate ensure give take decide use define estimate compile render draw dispatch assign"
    " distribute invoke strip truncate pad escape lookup look map multiply divide sum scale round"
    " tell verify match search scan flatten group reduce unwrap serialize deserialize"
    " report log mark store cache install configure connect bind accept listen schedule".split()
)
PHRASES = {
    "docstring": ("Add a docstring to {name}.", "Document {name} with a docstring.", "Write a docstring for {name}."),
    "jsdoc": ("Add a JSDoc comment to {name}.", "Document {name} with a JSDoc comment."),
    "comments": ("Add comments to {name}.", "Comment the code of {name}.", "Explain {name} with comments."),
    "types": ("Add type hints to {name}.", "Annotate {name} with type hints.", "Add type annotations to {name}."),
    "rename": ("Rename {old} to {new} in {name}.", "Rename the variable {old} to {new}.", "Call {old} {new} instead."),
    "rename-function": ("Rename the function {old} to {new}.", "Rename {old} to {new}."),
}


@dataclass(frozen=True)
class Example:
    """One training edit: the instruction and the region before and after; for an apply (kind
    ``apply-<form>``), the change that turns one into the other (:mod:`.changes`)."""

    kind: str
    language: str
    instruction: str
    before: str
    after: str
    origin: str  # the file and line the region came from
    change: str = ""

    def to_dict(self) -> dict:
        return self.__dict__.copy()


@dataclass(frozen=True)
class Region:
    """A definition's text (whole lines), its name, its file and first line, and the import lines
    at the head of its file (the lines an edited range may start with)."""

    text: str
    name: str
    language: str
    origin: str
    imports: str = ""


@dataclass(frozen=True)
class Recipe:
    """How many edits of each kind to build, and the region sizes (lines)."""

    seed: int = 0
    counts: tuple[tuple[str, int], ...] = (
        ("bug", 560),
        ("bugs", 110),
        ("file-bug", 60),
        ("docstring", 70),
        ("comments", 60),
        ("types", 60),
        ("rename", 80),
    )
    javascript_share: float = 0.45  # of every kind a JavaScript region can take
    # of the function edits, those whose region comes with the lines around it in a file: a blank
    # line or the file's imports before it, maybe a blank line after (line 1 is not always the def)
    context_share: float = 0.4
    min_lines: int = 3
    max_lines: int = 45
    max_file_lines: int = 90
    # of the Python bugs whose function has a docstring summary, those whose instruction restates it
    # (:func:`with_intent`); 0 keeps the recipes of the shipped selectors
    intent_share: float = 0.0


# --- sources -------------------------------------------------------------------------------------


def python_files() -> list[Path]:
    """The standard library's and this environment's site-packages' Python files, sorted."""
    roots = {Path(sysconfig.get_paths()["stdlib"]), Path(sysconfig.get_paths()["purelib"])}
    files: set[Path] = set()
    for root in roots:
        skip = {"test", "tests"} | ({"idlelib", "lib2to3", "site-packages"} if root.name != "site-packages" else set())
        files |= {path for path in root.rglob("*.py") if not skip & set(path.relative_to(root).parts)}
    return sorted(files)


def javascript_files(node_modules: Path) -> list[Path]:
    """Plain (not minified) JavaScript files under ``node_modules``, sorted."""
    if not node_modules.is_dir():
        return []
    return sorted(p for p in node_modules.rglob("*.js") if not p.name.endswith(".min.js") and p.is_file())


_PY_DEFS = {"function_definition", "class_definition"}
_JS_DEFS = {"function_declaration", "class_declaration", "method_definition", "generator_function_declaration"}
_JS_BINDINGS = {"lexical_declaration", "variable_declaration"}  # const f = (...) => {...}; var g = function ...
_JS_FUNCTIONS = {"arrow_function", "function_expression", "function"}
_IMPORT = {
    "python": re.compile(r"(import|from) [\w.]+"),
    "javascript": re.compile(r"(import [\w{*]|(const|let|var) \w+ = require\()"),
}


def _name_of(node, language: str):
    """The name node of a definition, or of a binding of one function (JavaScript); else None."""
    if language == "javascript" and node.type in _JS_BINDINGS:
        declarators = [child for child in node.children if child.type == "variable_declarator"]
        value = declarators[0].child_by_field_name("value") if len(declarators) == 1 else None
        return declarators[0].child_by_field_name("name") if value is not None and value.type in _JS_FUNCTIONS else None
    kinds = _PY_DEFS if language == "python" else _JS_DEFS
    return node.child_by_field_name("name") if node.type in kinds else None


def imports_of(lines: list[str], language: str, most: int = 3) -> str:
    """The first import lines at the head of a file (at most ``most``), as whole lines."""
    found = [line for line in lines[:80] if _IMPORT[language].match(line) and line.endswith("\n")]
    return "".join(found[:most])


def regions_of(text: str, language: str, origin: str, recipe: Recipe) -> list[Region]:
    """Definitions of ``text`` between the recipe's line bounds, each as whole lines."""
    if any(len(line) > 200 for line in text.splitlines()[:200]):
        return []  # generated or minified
    source = text.encode()
    parsed = parse(text, language)
    lines = parsed.lines
    imports = imports_of(lines, language)
    out = []
    stack = [parsed.tree.root_node]
    while stack:
        node = stack.pop()
        stack.extend(reversed(node.children))
        name = _name_of(node, language)
        if name is None or node.has_error:
            continue
        first, last = node.start_point[0], node.end_point[0]
        if not recipe.min_lines <= last - first + 1 <= recipe.max_lines:
            continue
        line_start = source.rfind(b"\n", 0, node.start_byte) + 1
        if source[line_start : node.start_byte].strip():
            continue  # the definition does not start its line
        region = "".join(lines[first : last + 1])
        if not region.endswith("\n") or "\t" in region or "\r" in region:
            continue
        out.append(Region(_dedent(region), name.text.decode(), language, f"{origin}:{first + 1}", imports))
    return out


def with_context(example: Example, imports: str, rng: random.Random, share: float) -> Example:
    """``example``, or (with probability ``share``) its region with the lines around it in a file
    on both sides: a blank line or the file's ``imports`` and blank lines before it, maybe a blank
    line after.  The edit is the same; only the line numbers of its region move."""
    if rng.random() >= share:
        return example
    gap = "\n\n" if example.language == "python" else "\n"
    lead = imports + gap if imports and rng.random() < 0.5 else "\n"
    trail = "\n" if rng.random() < 0.5 else ""
    return replace(example, before=lead + example.before + trail, after=lead + example.after + trail)


def _dedent(text: str) -> str:
    lines = text.splitlines(True)
    indent = min((len(line) - len(line.lstrip(" ")) for line in lines if line.strip()), default=0)
    return "".join(line[indent:] if line.strip() else line.lstrip(" ") for line in lines)


def top_level_run(text: str, language: str, origin: str, rng: random.Random, max_lines: int) -> list[Region]:
    """A run of consecutive top-level functions of a file (at most ``max_lines``), as regions of
    the file's text; empty when the file has fewer than three."""
    parsed = parse(text, language)
    root = parsed.tree.root_node
    kinds = {"function_definition"} if language == "python" else {"function_declaration"}
    nodes = [n for n in root.children if n.type in kinds and not n.has_error]
    if len(nodes) < 3 or root.has_error:
        return []
    lines = parsed.lines
    start = rng.randrange(0, len(nodes) - 2)
    run = [nodes[start]]
    for node in nodes[start + 1 :]:
        if node.end_point[0] - run[0].start_point[0] + 1 > max_lines:
            break
        run.append(node)
    if len(run) < 3:
        return []
    return [
        Region(
            "".join(lines[n.start_point[0] : n.end_point[0] + 1]),
            n.child_by_field_name("name").text.decode(),
            language,
            f"{origin}:{n.start_point[0] + 1}",
        )
        for n in run
    ]


# --- what real code has and the before-text lacks ------------------------------------------------


def strip_docstring(region: Region) -> str | None:
    """A Python function without its docstring (None if it has none, or it spans one line only)."""
    lines = region.text.splitlines(True)
    if region.language != "python" or len(lines) < 3:
        return None
    first = next((i for i in range(1, len(lines)) if lines[i].strip()), None)
    if first is None:
        return None
    stripped = lines[first].strip()
    quote = stripped[:3]
    if quote not in ('"""', "'''"):
        return None
    end = (
        first
        if stripped.count(quote) >= 2 and len(stripped) > 3
        else next((i for i in range(first + 1, len(lines)) if quote in lines[i]), None)
    )
    if end is None or end + 1 >= len(lines) or not "".join(lines[end + 1 :]).strip():
        return None
    return "".join(lines[:first] + lines[end + 1 :])


def intent(text: str, name: str) -> str | None:
    """What the function ``name`` in ``text`` must do, from its docstring's summary sentence (one
    line, or wrapped onto a second) as a verb phrase ("Returns the mean." gives "return the mean"),
    or None where there is none or it does not begin with a verb of :data:`INTENT_VERBS`."""
    lines = text.splitlines()
    header = re.compile(rf"\s*(async\s+)?def\s+{re.escape(name)}\b")
    at = next((i for i, line in enumerate(lines) if header.match(line)), None)
    colon = at if at is None else next((i for i in range(at, len(lines)) if lines[i].rstrip().endswith(":")), None)
    if colon is None:
        return None
    body = [line.strip() for line in lines[colon + 1 :]]
    first = next((i for i, line in enumerate(body) if line), len(body))
    opening = re.match(r"[rRuU]?(\"{3}|'{3})\s*", body[first] if first < len(body) else "")
    if opening is None:
        return None
    summary = " ".join(body[first : first + 2])[opening.end() :]
    end = re.search(r"\.(\s|$)|" + opening.group(1), summary)
    sentence = re.fullmatch(r"([A-Z][a-z]+)\b([^\"'\\]*?)\.?", summary[: end.start()].strip() if end else "")
    if sentence is None or sentence.group(2).count("(") != sentence.group(2).count(")"):
        return None
    verb = sentence.group(1).lower()
    verb = next((v for v in (verb, verb[:-1], verb[:-2]) if v in INTENT_VERBS), None)  # "returns", "pushes"
    return None if verb is None else verb + sentence.group(2)


def with_intent(example: Example, name: str, rng: random.Random, share: float) -> Example:
    """``example`` (a Python bug) with an instruction that also says what the function must do, in
    its docstring's words, for ``share`` of the bugs that have one: the words point at the
    docstring, the fix still goes to the code."""
    summary = intent(example.after, name) if example.language == "python" else None
    if summary is None or rng.random() >= share:
        return example
    return replace(example, instruction=_phrase(rng, INTENT_PHRASES, name=name, intent=summary))


def strip_comments(region: Region) -> str | None:
    """The region without its full-line comments (None if it has none)."""
    marker = "#" if region.language == "python" else "//"
    lines = region.text.splitlines(True)
    kept = [line for i, line in enumerate(lines) if i == 0 or not line.lstrip().startswith(marker)]
    return "".join(kept) if len(kept) < len(lines) else None


def strip_types(region: Region) -> str | None:
    """A Python function without its parameter and return annotations (None if it has none)."""
    if region.language != "python":
        return None
    source = region.text.encode()
    root = parse(region.text, "python").tree.root_node
    node = root.children[0] if root.children else None
    if node is None or node.type != "function_definition":
        return None
    cuts: list[tuple[int, int, bytes]] = []
    params = node.child_by_field_name("parameters")
    for param in params.named_children if params else ():
        if param.type == "typed_parameter":
            name = param.named_children[0]
            cuts.append((param.start_byte, param.end_byte, name.text))
        elif param.type == "typed_default_parameter":
            name, value = param.child_by_field_name("name"), param.child_by_field_name("value")
            cuts.append((param.start_byte, param.end_byte, name.text + b"=" + value.text))
    returns = node.child_by_field_name("return_type")
    if returns is not None:
        start = source.rfind(b"->", params.end_byte, returns.start_byte)
        cuts.append((params.end_byte, returns.end_byte, b""))
    if not cuts:
        return None
    for start, end, text in sorted(cuts, reverse=True):
        source = source[:start] + text + source[end:]
    result = source.decode()
    return result if syntax_errors(result, "python") == 0 and result.count("\n") == region.text.count("\n") else None


def rename(region: Region, rng: random.Random) -> tuple[str, str, str] | None:
    """The region with a local name (or, one time in three, the function) renamed: text, old, new."""
    names = sorted(n for n in local_names(region.text, region.language) if len(n) > 2)
    if rng.random() < 0.33 and re.fullmatch(r"[a-z_]\w*", region.name):
        old = region.name
    elif names:
        old = rng.choice(names)
    else:
        return None
    taken = set(re.findall(r"\w+", region.text))
    new = rng.choice([n for n in NEW_NAMES if n not in taken] or ["renamed"])
    if old == region.name:
        new = f"{new}_{old}" if rng.random() < 0.5 else re.sub(r"^_*", "", old) + "_impl"
    pattern = re.compile(rf"(?<![\w.'\"]){re.escape(old)}\b")
    text = pattern.sub(new, region.text)
    if text == region.text or syntax_errors(text, region.language) != 0:
        return None
    return text, old, new


# --- the builder ---------------------------------------------------------------------------------


def seeded_rng(seed: int, *parts: str) -> random.Random:
    digest = hashlib.sha256("\0".join((str(seed), *parts)).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _phrase(rng: random.Random, phrases: tuple[str, ...], **values: str) -> str:
    return rng.choice(phrases).format(**values)


def make_example(kind: str, region: Region, rng: random.Random) -> Example | None:
    """One edit of ``kind`` on ``region`` (``file-bug`` takes :func:`top_level_run` output), or None."""
    language, name = region.language, region.name
    before = after = None
    instruction = ""
    if kind == "bug":
        bugged = inject_bug(region.text, language, rng)
        if bugged:
            before, after, instruction = bugged[0], region.text, _phrase(rng, BUG_PHRASES, name=name)
    elif kind == "bugs":
        first = inject_bug(region.text, language, rng)
        second = first and inject_bug(first[0], language, rng, avoid={first[1]})
        if second:
            before, after = second[0], region.text
            instruction = _phrase(
                rng, ("Fix bugs in {name}.", "Fix the bugs in {name}.", "{name} has bugs: fix them."), name=name
            )
    elif kind == "docstring":
        before, after = strip_docstring(region), region.text
        instruction = _phrase(rng, PHRASES["docstring"], name=name)
    elif kind == "comments":
        before, after = strip_comments(region), region.text
        instruction = _phrase(rng, PHRASES["comments"], name=name)
    elif kind == "types":
        before, after = strip_types(region), region.text
        instruction = _phrase(rng, PHRASES["types"], name=name)
    elif kind == "rename":
        renamed = rename(region, rng)
        if renamed:
            before, (after, old, new) = region.text, renamed
            phrases = PHRASES["rename-function" if old == name else "rename"]
            instruction = _phrase(rng, phrases, old=old, new=new, name=name)
    if before is None or after is None or before == after:
        return None
    return Example(kind, language, instruction, before, after, region.origin)


def file_example(run: list[Region], rng: random.Random) -> Example | None:
    """A bug in one function of a run of a file's top-level functions."""
    target = rng.randrange(len(run))
    bugged = inject_bug(run[target].text, run[target].language, rng)
    if not bugged:
        return None
    joined = lambda texts: "\n\n".join(t.rstrip("\n") for t in texts) + "\n"
    before = joined([bugged[0] if i == target else r.text for i, r in enumerate(run)])
    after = joined([r.text for r in run])
    name = run[target].name
    return Example("file-bug", run[0].language, _phrase(rng, BUG_PHRASES, name=name), before, after, run[target].origin)


def _read(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None
    return text if len(text) < 400_000 else None


def collect_regions(
    files: Iterable[Path], language: str, recipe: Recipe, per_file: int = 4
) -> Iterator[tuple[Path, str, list[Region]]]:
    """Each readable file's text and up to ``per_file`` regions, drawn by the recipe's seed."""
    for path in files:
        text = _read(path)
        if text is None:
            continue
        regions = regions_of(text, language, path.name, recipe)
        rng = seeded_rng(recipe.seed, str(path.name), "regions")
        rng.shuffle(regions)
        yield path, text, regions[:per_file]


def sources(node_modules: Path) -> dict[str, list[Path]]:
    """The files training edits are drawn from, by language."""
    return {"python": python_files(), "javascript": javascript_files(node_modules)}


WINDOW_LINES = 3
WINDOW_CHARS = 30  # windows shorter than this (``}`` ``});`` ``return x``) are everyone's code, no one's item


def forbidden_windows() -> frozenset[str]:
    """Every window of :data:`WINDOW_LINES` consecutive non-blank lines (whitespace normalized) of the
    before- and after-texts of every evaluation set of `data/` (CanItEdit's both styles too)."""
    from ..common.datasets import PRESETS, data_dir, load_items

    texts: set[str] = set()
    for name in PRESETS:
        texts |= {text for item in load_items(name) for text in (item.before, item.after)}
    canitedit = data_dir() / "canitedit" / "test.jsonl"
    if canitedit.is_file():
        texts |= {text for item in load_items(str(canitedit), format="canitedit") for text in (item.before, item.after)}
    return frozenset(window for text in texts for window in windows(text))


def windows(text: str) -> set[str]:
    """The whitespace-normalized windows of :data:`WINDOW_LINES` consecutive non-blank lines of
    ``text`` at least :data:`WINDOW_CHARS` long."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    lines = [line for line in lines if line]
    found = ("\n".join(lines[i : i + WINDOW_LINES]) for i in range(len(lines) - WINDOW_LINES + 1))
    return {window for window in found if len(window) >= WINDOW_CHARS}


def leaks(example: Example, forbidden: frozenset[str]) -> bool:
    """Whether a window of an evaluation text occurs in the example's before- or after-text."""
    return not forbidden.isdisjoint(windows(example.before) | windows(example.after))


def check_no_leak(examples: list[Example], forbidden: frozenset[str]) -> None:
    """Raise ValueError if any example holds a window of an evaluation item's text."""
    bad = [e.origin for e in examples if leaks(e, forbidden)]
    if bad:
        raise ValueError(f"{len(bad)} training edits hold evaluation text, e.g. {bad[0]}")


def node_modules_default() -> Path:
    return Path(__file__).resolve().parents[2] / "editors" / "vscode" / "node_modules"
