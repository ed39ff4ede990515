"""The settings, written once (:class:`~copyedit_lsp.serve.config.Settings`) and generated everywhere
else: VS Code's ``contributes.configuration``, the extension's ``src/settings.ts``, and the settings
tables of the README and the Neovim README (``copyedit settings write``; ``--check`` says which
file is stale)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import Field, fields
from pathlib import Path
from typing import Any

from ..serve.config import Settings, camel

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "editors/vscode/package.json"
TYPES = "editors/vscode/src/settings.ts"
TABLES = ("README.md", "editors/nvim/README.md")
BEGIN = "<!-- The settings table is written by `copyedit settings write`: do not edit it by hand. -->"
END = "<!-- End of the settings table. -->"
CLIENT = ("copyedit.server.command", "copyedit.server.pythonPath")  # the extension's own, before the server's
JSON_TYPES = {"str": "string", "bool": "boolean", "int": "integer", "float": "number"}


def vscode_key(field: Field) -> str:
    """A field's key under ``copyedit.`` in VS Code."""
    return field.metadata["vscode"] or camel(field.name)


def json_types(field: Field) -> list[str]:
    """The JSON Schema types of a field, the value's first (``int | None``: integer, null)."""
    kinds = [part.strip() for part in str(field.type).split("|")]
    return [JSON_TYPES[kind] for kind in kinds if kind != "None"] + (["null"] if "None" in kinds else [])


def settings_table(settings: Sequence[Field]) -> str:
    """The Markdown table of every setting: key, default, one line of meaning."""
    rows = ["| key | default | meaning |", "|---|---|---|"]
    for field in settings:
        default = field.default if isinstance(field.default, str) else json.dumps(field.default)
        shown = "unset" if field.default is None else "empty" if default == "" else f"`{default}`"
        meaning = field.metadata["doc"]
        if field.metadata["choices"]:
            meaning += ": " + ", ".join(f"`{choice}`" for choice in field.metadata["choices"])
        rows.append(f"| `{camel(field.name)}` | {shown} | {meaning} |")
    return "\n".join(rows)


def package_properties(settings: Sequence[Field], old: dict[str, Any]) -> dict[str, Any]:
    """``contributes.configuration.properties``: the extension's own settings as they are, then one
    entry a server setting, then the rest of the old ones (``trace.server``)."""
    server = {f"copyedit.{vscode_key(field)}": _schema(field) for field in settings}
    server |= {
        f"copyedit.{camel(field.metadata['was'])}": _renamed(field) for field in settings if field.metadata["was"]
    }
    tail = {key: value for key, value in old.items() if key not in CLIENT and key not in server}
    return {key: old[key] for key in CLIENT if key in old} | server | tail


def settings_ts(settings: Sequence[Field]) -> str:
    """``src/settings.ts``: the server's settings object and, a setting each, its VS Code key, type
    and the values it takes (for the extension's ``initializationOptions``)."""
    lines = ["// Written by `copyedit settings write` from copyedit_lsp/serve/config.py: do not edit by hand.", ""]
    lines += ["/** The server's settings (camelCase keys of copyedit_lsp.serve.config.Settings). */"]
    lines += ["export interface ServerSettings {"]
    for field in settings:
        ts = " | ".join(_TS[kind] for kind in json_types(field))
        lines.append(f"  {camel(field.name)}?: {ts};")
    lines += ["}", "", "/** A server setting as VS Code holds it under `copyedit.`. */", "export interface Setting {"]
    lines += ["  name: keyof ServerSettings;", "  key: string;", '  type: "string" | "boolean" | "integer" | "number";']
    lines += ["  choices?: readonly string[];", "  empty?: boolean; // an empty string is a value, not unset"]
    lines += ["  minimum?: number;", "  exclusiveMinimum?: number;", "  exclusiveMaximum?: number;"]
    lines += ["  pattern?: string;", "  was?: string; // its VS Code key before a rename, still read", "}", ""]
    lines += ["export const SETTINGS: readonly Setting[] = ["]
    for field in settings:
        entry: dict[str, Any] = {"name": camel(field.name), "key": vscode_key(field), "type": json_types(field)[0]}
        if field.metadata["choices"]:
            entry["choices"] = list(field.metadata["choices"])
        if field.default == "":
            entry["empty"] = True
        entry |= field.metadata["schema"]
        if field.metadata["was"]:
            entry["was"] = camel(field.metadata["was"])
        lines.append(f"  {_ts_object(entry)},")
    return "\n".join([*lines, "];", ""])


def generated(root: Path = ROOT, settings: Sequence[Field] | None = None) -> dict[str, str]:
    """Each generated file's path (relative to ``root``) and the text it must hold."""
    settings = fields(Settings) if settings is None else settings
    package = json.loads((root / PACKAGE).read_text(encoding="utf-8"))
    configuration = package["contributes"]["configuration"]
    configuration["properties"] = package_properties(settings, configuration["properties"])
    texts = {PACKAGE: json.dumps(package, indent=2) + "\n", TYPES: settings_ts(settings)}
    table = f"{BEGIN}\n\n{settings_table(settings)}\n\n{END}"
    for name in TABLES:
        text = (root / name).read_text(encoding="utf-8")
        texts[name] = re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: table, text, flags=re.S)
    return texts


def stale(root: Path = ROOT, settings: Sequence[Field] | None = None) -> list[str]:
    """The generated files whose text is not what ``copyedit settings write`` would write."""
    return [name for name, text in generated(root, settings).items() if _read(root / name) != text]


def write(root: Path = ROOT, settings: Sequence[Field] | None = None) -> list[str]:
    """Write every stale generated file; returns their names."""
    texts = generated(root, settings)
    changed = [name for name, text in texts.items() if _read(root / name) != text]
    for name in changed:
        (root / name).write_text(texts[name], encoding="utf-8")
    return changed


_TS = {"string": "string", "boolean": "boolean", "integer": "number", "number": "number", "null": "null"}


def _schema(field: Field) -> dict[str, Any]:
    """One VS Code setting's JSON Schema entry."""
    types = json_types(field)
    schema: dict[str, Any] = {"type": types if len(types) > 1 else types[0]}
    choices = field.metadata["choices"]
    if choices:
        schema |= {"enum": list(choices), "enumDescriptions": list(choices.values())}
    schema |= field.metadata["schema"]
    schema["default"] = field.default
    schema["markdownDescription"] = field.metadata["detail"]
    return schema


def _renamed(field: Field) -> dict[str, Any]:
    """The VS Code entry of a setting's old key: its type, no default, deprecated in favour of the new key."""
    types = json_types(field)
    return {
        "type": types if len(types) > 1 else types[0],
        "markdownDescription": field.metadata["detail"],
        "markdownDeprecationMessage": f"Renamed: use `copyedit.{vscode_key(field)}` (this key is still read).",
    }


def _ts_object(entry: dict[str, Any]) -> str:
    return "{ " + ", ".join(f"{key}: {json.dumps(value)}" for key, value in entry.items()) + " }"


def _read(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None
