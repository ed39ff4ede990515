"""The snippet benchmark's cases: modules built from HumanEvalFix's functions (evaluation data,
used as code to edit, never as training data), each with a snippet written the way chat
assistants write one, in one of :data:`STYLES`, and the module it should make.

A module is a list of units (one function each, or a class, object or closure around functions)
rendered with the language's blank-line gaps; a case changes it (the unit's bug fixed, a function
added, renamed or deleted, an import added) and writes the snippet from the units it touches,
elision markers standing for the rest.  Python's functions come from ``humanevalfix-python``,
JavaScript's from ``humanevalfix-js``, TypeScript's from the same, given typed ``function``
headers.
"""

from __future__ import annotations

import random
import re
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tqdm import tqdm

from ..common.datasets import EditItem, load_items
from ..common.reports import markdown_table, write_json
from ..core.change import read_change
from .apply import timed_merge
from .changes import MARKERS, score

if TYPE_CHECKING:
    from ..decode.edit import Editor

LANGUAGES = ("python", "javascript", "typescript")
STYLES = (
    "whole",  # (a) one changed definition, whole, no marker
    "several",  # (b) several changed definitions, markers between
    "class",  # (c) a class with markers around one changed method
    "new",  # (d) a new function
    "imports",  # (e) an import added with the change that uses it
    "nested",  # (f) a change inside a closure (Python) or an object's method (JavaScript, TypeScript)
    "markers",  # (g) unusual markers: bare ..., /* ... */, markers inside a body
    "renamed",  # (h) a renamed or re-signatured definition
    "twice",  # (i) a name defined twice: one method name in two classes, TypeScript overloads
    "deleted",  # (j) a definition the snippet deletes (absent between two shown neighbours)
)
UNITS = 5  # functions per module

_PY_DEF = re.compile(r"def (\w+)\((.*)\)(.*):$")
_JS_CONST = re.compile(r"const (\w+) = \(([\w, ]*)\) => \{$")


@dataclass(frozen=True)
class Function:
    """One function in its buggy and fixed versions (lines ended, no imports), and its imports."""

    name: str
    params: str
    buggy: tuple[str, ...]
    fixed: tuple[str, ...]
    imports: tuple[str, ...] = ()


@dataclass(frozen=True)
class SnippetCase:
    """A module, the snippet a chat assistant would write for the edit, and the module it should make."""

    id: str
    style: str
    language: str
    before: str
    after: str
    snippet: str

    def item(self) -> EditItem:
        """The case as an edit (tests left out: the score is exact match)."""
        return EditItem(self.id, self.before, self.after, f"apply the {self.style} snippet", self.language)


def functions(language: str) -> list[Function]:
    """The preset's functions that read as one function of simple parameters, buggy and fixed."""
    preset = "humanevalfix-python" if language == "python" else "humanevalfix-js"
    found = []
    for item in load_items(preset):
        function = (_python if language == "python" else _javascript)(item, typed=language == "typescript")
        if function is not None and function.buggy != function.fixed:
            found.append(function)
    return found


def _python(item: EditItem, typed: bool = False) -> Function | None:
    imports, codes = [], []
    for text in (item.before, item.after):
        lines = [line for line in text.splitlines(keepends=True)]
        imports = [line for line in lines if line.startswith(("import ", "from "))]
        code = [line for line in lines if not line.startswith(("import ", "from "))]
        while code and not code[0].strip():
            code.pop(0)
        while code and not code[-1].strip():
            code.pop()
        codes.append(tuple(_ended(code)))
    top = [line for line in codes[0] if line.strip() and not line[0].isspace()]
    match = _PY_DEF.match(top[0].rstrip()) if len(top) == 1 else None
    if match is None or any('"""' in line or "'''" in line for line in codes[0] + codes[1]):
        return None
    return Function(match.group(1), match.group(2), codes[0], codes[1], tuple(_ended(imports)))


def _javascript(item: EditItem, typed: bool = False) -> Function | None:
    codes = []
    for text in (item.before, item.after):
        code = [line for line in text.splitlines(keepends=True) if line.strip()]
        if not code or code[-1].rstrip() != "}" or any(not line[0].isspace() for line in code[1:-1]):
            return None
        codes.append(tuple(_ended(code)))
    match = _JS_CONST.match(codes[0][0].rstrip())
    if match is None or codes[0][0] != codes[1][0] or "`" in "".join(codes[0] + codes[1]):
        return None
    name, params = match.groups()
    if typed:
        header = f"function {name}({', '.join(f'{p.strip()}: any' for p in params.split(',') if p.strip())}): any {{\n"
        codes = [(header, *code[1:]) for code in codes]
    return Function(name, params, codes[0], codes[1])


def _ended(lines: list[str]) -> list[str]:
    return [line if line.endswith("\n") else line + "\n" for line in lines]


class _Module:
    """A module's imports and units (each a tuple of ended lines), rendered with ``language``'s gaps."""

    def __init__(self, language: str, imports: list[str], units: list[tuple[str, ...]]):
        self.language, self.imports, self.units = language, imports, units

    @property
    def gap(self) -> str:
        return "\n\n" if self.language == "python" else "\n"

    def render(self) -> str:
        parts = ["".join(self.imports)] if self.imports else []
        parts += ["".join(unit) for unit in self.units]
        return self.gap.join(parts)


def _comment(language: str) -> str:
    return "#" if language == "python" else "//"


def _marker(language: str, rng: random.Random, indent: str = "") -> str:
    return f"{indent}{_comment(language)} {rng.choice(MARKERS)}\n"


def _indented(lines: tuple[str, ...], by: str) -> tuple[str, ...]:
    return tuple(by + line if line.strip() else line for line in lines)


def _method(language: str, function: Function, lines: tuple[str, ...], prefix: str = "static ") -> tuple[str, ...]:
    """``function``'s ``lines`` as a method of a class (Python: a static method; JS/TS ``prefix``
    ``static `` in a class, ``""`` in an object literal)."""
    if language == "python":
        return ("    @staticmethod\n", *_indented(lines, "    "))
    typed = f"({', '.join(f'{p.strip()}: any' for p in function.params.split(',') if p.strip())}): any"
    header = f"  {prefix}{function.name}{typed if language == 'typescript' else f'({function.params})'} {{\n"
    return (header, *_indented(lines[1:-1], "  "), "  }\n")


def _container(language: str, name: str, members: list[tuple[str, ...]], *, object_literal: bool = False) -> tuple:
    """A class (or, in JS/TS with ``object_literal``, a ``const`` object) holding ``members``."""
    if language == "python":
        body: list[str] = []
        for k, member in enumerate(members):
            body += (["\n"] if k else []) + list(member)
        return (f"class {name}:\n", *body)
    head = f"const {name} = {{\n" if object_literal else f"class {name} {{\n"
    body = []
    for k, member in enumerate(members):
        if object_literal:
            member = (*member[:-1], member[-1].rstrip("\n") + ",\n")
        body += (["\n"] if k else []) + list(member)
    return (head, *body, "};\n" if object_literal else "}\n")


class _Builder:
    """Builds one case of each style from a draw of ``functions``."""

    def __init__(self, language: str, functions: list[Function], rng: random.Random, units: int = UNITS):
        self.language, self.functions, self.rng, self.units = language, functions, rng, units

    def draw(self) -> list[Function]:
        return self.rng.sample(self.functions, self.units)

    def module(self, units: list[tuple[str, ...]], drawn: list[Function], extra: tuple[str, ...] = ()) -> _Module:
        imports = list(dict.fromkeys(line for f in drawn for line in f.imports)) + list(extra)
        return _Module(self.language, imports, units)

    def marker(self, indent: str = "") -> str:
        return _marker(self.language, self.rng, indent)

    def snippet(self, shown: dict[int, tuple[str, ...]], count: int, gap: str) -> str:
        """Units ``shown`` (index -> lines) of ``count``, a marker wherever units are left out."""
        parts, cursor = [], 0
        for index in sorted(shown):
            if index > cursor:
                parts.append(self.marker())
            parts.append("".join(shown[index]))
            cursor = index + 1
        if cursor < count:
            parts.append(self.marker())
        return gap.join(parts)

    def class_ends(self, name: str) -> tuple[str, str]:
        """The opening and closing lines of a class ``name`` in a snippet."""
        return (f"class {name}:\n", "") if self.language == "python" else (f"class {name} {{\n", "}\n")

    def member(self, ends: tuple[str, str], lines: str, k: int, count: int) -> str:
        """A container's snippet (its ``ends``): the ``k``-th of its ``count`` members, ``lines``,
        with a marker for the members before it and one for those after it (at a member's indent)."""
        indent = "    " if self.language == "python" else "  "
        body = ([self.marker(indent)] if k else []) + [lines]
        if k < count - 1:
            body.append(self.marker(indent))
        return ends[0] + "\n".join(body) + ends[1]

    def fixed_module(self, drawn: list[Function], broken: set[int]) -> tuple[_Module, _Module]:
        units_before = [f.buggy if k in broken else f.fixed for k, f in enumerate(drawn)]
        return self.module(units_before, drawn), self.module([f.fixed for f in drawn], drawn)

    def whole(self) -> tuple[str, str, str]:
        drawn = self.draw()
        k = self.rng.randrange(len(drawn))
        before, after = self.fixed_module(drawn, {k})
        return before.render(), after.render(), "".join(drawn[k].fixed)

    def several(self) -> tuple[str, str, str]:
        drawn = self.draw()
        broken = set(self.rng.sample(range(len(drawn)), 2))
        before, after = self.fixed_module(drawn, broken)
        snippet = self.snippet({k: drawn[k].fixed for k in broken}, len(drawn), before.gap)
        return before.render(), after.render(), snippet

    def in_class(self) -> tuple[str, str, str]:
        drawn = self.draw()
        k = self.rng.randrange(len(drawn))
        methods = [_method(self.language, f, f.buggy if i == k else f.fixed) for i, f in enumerate(drawn)]
        fixed = _method(self.language, drawn[k], drawn[k].fixed)
        before = self.module([_container(self.language, "Solutions", methods)], drawn)
        after = self.module([_container(self.language, "Solutions", methods[:k] + [fixed] + methods[k + 1 :])], drawn)
        return before.render(), after.render(), self.member(self.class_ends("Solutions"), "".join(fixed), k, len(drawn))

    def new(self) -> tuple[str, str, str]:
        drawn = self.draw()
        imported = {line for f in drawn for line in f.imports}
        added = self.rng.choice([f for f in self.functions if f not in drawn and set(f.imports) <= imported])
        before = self.module([f.fixed for f in drawn], drawn)
        if self.rng.random() < 0.5:  # at the end of the module
            after = self.module([f.fixed for f in drawn] + [added.fixed], [*drawn, added])
            return before.render(), after.render(), self.marker() + before.gap + "".join(added.fixed)
        k = self.rng.randrange(len(drawn) - 1)  # after the function the snippet shows before it
        units = [f.fixed for f in drawn]
        after = self.module(units[: k + 1] + [added.fixed] + units[k + 1 :], [*drawn, added])
        snippet = self.snippet({k: drawn[k].fixed, k + 1: added.fixed}, len(drawn) + 1, before.gap)
        return before.render(), after.render(), snippet

    def imports(self) -> tuple[str, str, str]:
        drawn = self.draw()
        k = self.rng.randrange(len(drawn))
        function = drawn[k]
        if self.language == "python":
            added, use = "import logging\n", f'    logging.debug("{function.name} called")\n'
        else:
            added, use = "const util = require('util');\n", f"  util.debuglog('solutions')('{function.name} called');\n"
        changed = (function.fixed[0], use, *function.fixed[1:])
        units = [f.fixed for f in drawn]
        before = self.module(units, drawn)
        after = self.module(units[:k] + [changed] + units[k + 1 :], drawn, extra=(added,))
        snippet = self.snippet({k: changed}, len(drawn), before.gap)
        return before.render(), after.render(), added + before.gap + snippet

    def nested(self) -> tuple[str, str, str]:
        drawn = self.draw()
        k = self.rng.randrange(len(drawn))
        if self.language == "python":

            def closure(lines: tuple[str, ...]) -> tuple[str, ...]:
                name = drawn[k].name
                return (f"def make_{name}():\n", *_indented(lines, "    "), f"    return {name}\n")

            units = [closure(f.buggy) if i == k else f.fixed for i, f in enumerate(drawn)]
            before = self.module(units, drawn)
            after = self.module(units[:k] + [closure(drawn[k].fixed)] + units[k + 1 :], drawn)
            shown = (f"def make_{drawn[k].name}():\n", *_indented(drawn[k].fixed, "    "), self.marker("    "))
            return before.render(), after.render(), self.snippet({k: shown}, len(drawn), before.gap)
        methods = [_method(self.language, f, f.buggy if i == k else f.fixed, "") for i, f in enumerate(drawn)]
        fixed = _method(self.language, drawn[k], drawn[k].fixed, "")
        before = self.module([_container(self.language, "solutions", methods, object_literal=True)], drawn)
        after_methods = methods[:k] + [fixed] + methods[k + 1 :]
        after = self.module([_container(self.language, "solutions", after_methods, object_literal=True)], drawn)
        shown = self.member(("const solutions = {\n", "};\n"), "".join((*fixed[:-1], "  },\n")), k, len(drawn))
        return before.render(), after.render(), shown

    def markers(self) -> tuple[str, str, str]:
        drawn = self.draw()
        k = self.rng.randrange(len(drawn))
        before, after = self.fixed_module(drawn, {k})
        kind = self.rng.choice(("bare", "block", "in-body"))
        if kind == "in-body" and (shown := self._in_body(drawn[k])) is not None:
            return before.render(), after.render(), self.snippet({k: shown}, len(drawn), before.gap)
        snippet = self.snippet({k: drawn[k].fixed}, len(drawn), before.gap)
        bare = "...\n" if kind == "bare" or self.language == "python" else "/* ... */\n"
        return (
            before.render(),
            after.render(),
            re.sub(rf"(?m)^{re.escape(_comment(self.language))} .*\n", bare, snippet),
        )

    def _in_body(self, function: Function) -> tuple[str, ...] | None:
        """``function`` fixed, as its header, its changed lines with a line of context on each
        side, markers inside the body for the rest, and (JS, TS) its closing brace; None where the
        fix changes the header or deletes lines only."""
        buggy, fixed = function.buggy, function.fixed
        same = next(i for i in range(len(fixed) + 1) if i == min(len(buggy), len(fixed)) or buggy[i] != fixed[i])
        tail = next(i for i in range(len(fixed) + 1) if i == len(fixed) - same or buggy[-1 - i] != fixed[-1 - i])
        closing = 0 if self.language == "python" else 1
        start, end = max(same - 1, 1), min(len(fixed) - tail + 1, len(fixed) - closing)
        if same == 0 or start >= end:
            return None
        indent = re.match(r"\s*", next(line for line in fixed[1:] if line.strip())).group()  # type: ignore[union-attr]
        lines = [fixed[0], *([self.marker(indent)] if start > 1 else []), *fixed[start:end]]
        if end < len(fixed) - closing:
            lines.append(self.marker(indent))
        return (*lines, *fixed[len(fixed) - closing :])

    def renamed(self) -> tuple[str, str, str]:
        drawn = self.draw()
        k = self.rng.randrange(len(drawn))
        function = drawn[k]
        header = function.fixed[0]
        if self.rng.random() < 0.5:
            new = function.name + ("_checked" if self.language == "python" else "Checked")
            header = header.replace(f" {function.name}", f" {new}", 1)
        else:
            extra = "strict=False" if self.language == "python" else "strict = false"
            if self.language == "typescript":
                extra = "strict: boolean = false"
            header = re.sub(r"\)(?=[^()]*$)", (", " if function.params.strip() else "") + extra + ")", header, count=1)
        changed = (header, *function.fixed[1:])
        before, _ = self.fixed_module(drawn, {k})
        units = [f.fixed for f in drawn]
        after = self.module(units[:k] + [changed] + units[k + 1 :], drawn)
        return before.render(), after.render(), self.snippet({k: changed}, len(drawn), before.gap)

    def twice(self) -> tuple[str, str, str]:
        if self.language == "typescript" and self.rng.random() < 0.5:
            return self._overloads()
        drawn = self.draw()
        shared, firsts, seconds = drawn[0], drawn[1:3], drawn[3:]
        first = [_method(self.language, f, f.fixed) for f in firsts] + [_method(self.language, shared, shared.fixed)]
        k = self.rng.randrange(len(seconds) + 1)
        second = [_method(self.language, f, f.fixed) for f in seconds]
        buggy, fixed = (_method(self.language, shared, lines) for lines in (shared.buggy, shared.fixed))
        units_before = [
            _container(self.language, "First", first),
            _container(self.language, "Second", second[:k] + [buggy] + second[k:]),
        ]
        units_after = [units_before[0], _container(self.language, "Second", second[:k] + [fixed] + second[k:])]
        shown = self.member(self.class_ends("Second"), "".join(fixed), k, len(second) + 1)
        snippet = self.marker() + self.module([], drawn).gap + shown
        return self.module(units_before, drawn).render(), self.module(units_after, drawn).render(), snippet

    def _overloads(self) -> tuple[str, str, str]:
        drawn = self.draw()
        k = self.rng.randrange(len(drawn))
        function = drawn[k]
        params = [p.strip() for p in function.params.split(",") if p.strip()]
        signatures = tuple(
            f"function {function.name}({', '.join(f'{p}: {kind}' for p in params)}): {kind};\n"
            for kind in ("number", "string")
        )
        units = [f.fixed for f in drawn]
        before = self.module(units[:k] + [(*signatures, *function.buggy)] + units[k + 1 :], drawn)
        after = self.module(units[:k] + [(*signatures, *function.fixed)] + units[k + 1 :], drawn)
        return (
            before.render(),
            after.render(),
            self.snippet({k: (*signatures, *function.fixed)}, len(drawn), before.gap),
        )

    def deleted(self) -> tuple[str, str, str]:
        drawn = self.draw()
        k = self.rng.randrange(1, len(drawn) - 1)
        units = [f.fixed for f in drawn]
        before = self.module(units, drawn)
        after = self.module(units[:k] + units[k + 1 :], drawn)  # its imports kept: the snippet does not say
        snippet = self.snippet({k - 1: units[k - 1], k: units[k + 1]}, len(drawn) - 1, before.gap)
        return before.render(), after.render(), snippet

    def build(self, style: str) -> tuple[str, str, str]:
        builders: dict[str, Callable[[], tuple[str, str, str]]] = {
            "whole": self.whole,
            "several": self.several,
            "class": self.in_class,
            "new": self.new,
            "imports": self.imports,
            "nested": self.nested,
            "markers": self.markers,
            "renamed": self.renamed,
            "twice": self.twice,
            "deleted": self.deleted,
        }
        return builders[style]()


def build_cases(
    languages: tuple[str, ...] = LANGUAGES,
    styles: tuple[str, ...] = STYLES,
    per_style: int = 7,
    seed: int = 0,
    units: int = UNITS,
) -> list[SnippetCase]:
    """``per_style`` cases of each style in each language, drawn by ``seed``, in modules of
    ``units`` functions (50 make modules of about 500 lines: what an apply costs in a long file)."""
    cases = []
    for language in languages:
        builder = _Builder(language, functions(language), random.Random(f"{seed}/{language}"), units)
        for style in styles:
            for n in range(per_style):
                before, after, snippet = builder.build(style)
                cases.append(SnippetCase(f"{language}/{style}/{n}", style, language, before, after, snippet))
    return cases


def snippets_benchmark(
    cases: list[SnippetCase], *, modes: Sequence[str], editors: Mapping[str, Editor], progress: bool = True
) -> dict:
    """Each case's snippet merged by each mode (:data:`~copyedit_lsp.bench.apply.MODES`), case
    by case, scored against the module it should make; rows and a summary per style."""
    rows = []
    with tqdm(total=len(cases) * len(modes), desc="bench snippets", unit=" snippets", file=sys.stderr,
              disable=not progress) as bar:  # fmt: skip
        for case in cases:
            change = read_change(case.snippet)
            for mode in modes:
                applied, _, figures, seconds = timed_merge(case.item(), change, mode, editors, fallback=True)
                scored = score(case.before, case.after, change, applied)
                rows.append(
                    {"id": case.id, "style": case.style, "language": case.language, "mode": mode, "form": change.form,
                     "applied": applied is not None, "exact": scored.exact, "lines_lost": scored.lines_lost,
                     "invented": scored.invented, "seconds": seconds} | figures
                )  # fmt: skip
                bar.update()
    return {"modes": list(modes), "rows": rows, "summary": summarize(rows, modes)}


def summarize(rows: list[dict], modes: Sequence[str]) -> dict[str, dict[str, dict]]:
    """Per mode, per style (and ``all``): cases, exact, refused, wrong (offered, not exact), lines
    lost and invented by what is offered, median seconds; the choices the model was asked to make
    and how many of those came out exact; the cases the model's own program placed."""
    summary: dict[str, dict[str, dict]] = {}
    for mode in modes:
        mine = [row for row in rows if row["mode"] == mode]
        summary[mode] = {}
        for style in ("all", *dict.fromkeys(row["style"] for row in mine)):
            some = [row for row in mine if style in ("all", row["style"])]
            asked = [row for row in some if (row.get("candidates") or 0) > 1]
            summary[mode][style] = {
                "cases": len(some),
                "exact": sum(row["exact"] for row in some),
                "refused": sum(not row["applied"] for row in some),
                "wrong": sum(row["applied"] and not row["exact"] for row in some),
                "lines_lost": sum(row["lines_lost"] for row in some if row["applied"]),
                "invented": sum(row["invented"] for row in some if row["applied"]),
                "median_seconds": statistics.median(row["seconds"] for row in some),
                "chooser_asked": len(asked),
                "chooser_exact": sum(row["exact"] for row in asked),
                "by_model": sum(row.get("by") not in (None, "structure", "merge") for row in some),
            }
    return summary


def format_tables(result: dict) -> str:
    """Exact per style and mode; then per mode: refused, wrong, lines lost and invented, median
    time, the model's choices and its own programs."""
    modes, summary = result["modes"], result["summary"]
    styles = [style for style in summary[modes[0]] if style != "all"] + ["all"]
    exact = [
        [style, summary[modes[0]][style]["cases"], *(f"{summary[m][style]['exact']}" for m in modes)]
        for style in styles
    ]
    table = markdown_table(["style", "cases", *(f"{m}: exact" for m in modes)], exact, right=range(1, len(modes) + 2))
    totals = []
    for mode in modes:
        e = summary[mode]["all"]
        totals.append(
            [mode, f"{e['exact']}/{e['cases']}", e["refused"], e["wrong"], e["lines_lost"], e["invented"],
             f"{1000 * e['median_seconds']:.1f} ms", f"{e['chooser_exact']}/{e['chooser_asked']}", e["by_model"]]
        )  # fmt: skip
    headers = ["mode", "exact", "refused", "wrong", "lines lost", "lines invented", "median time",
               "the model's choices: exact/asked", "placed by the model's program"]  # fmt: skip
    return table + "\n\n" + markdown_table(headers, totals, right=range(1, 9))


def write_outputs(result: dict, out_dir: Path, stem: str) -> tuple[Path, Path]:
    """``<stem>.json.gz`` (every row, no texts) and ``<stem>.md`` (the tables)."""
    json_path = write_json(result, out_dir, stem, indent=None, compress=True)
    md_path = Path(out_dir) / f"{stem}.md"
    md_path.write_text(format_tables(result) + "\n", encoding="utf-8")
    return json_path, md_path
