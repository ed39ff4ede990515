// Opens the packaged copyedit-lsp.vsix (run after `npm run package`) and checks what VS Code would install.

import assert from "node:assert/strict";
import * as path from "node:path";
import { test } from "node:test";
import AdmZip from "adm-zip";

const vsix = new AdmZip(path.resolve(__dirname, "..", "..", "copyedit-lsp.vsix"));
const names = vsix.getEntries().map((entry) => entry.entryName);
const read = (name: string): string => {
  const entry = vsix.getEntry(name);
  assert.ok(entry, `${name} is in the .vsix`);
  return entry.getData().toString("utf8");
};
const manifest = JSON.parse(read("extension/package.json"));
const CLIENT_COMMANDS = [
  "copyedit.editWithInstruction",
  "copyedit.refactorWorkspaceWithInstruction",
  "copyedit.cancelEdits",
  "copyedit.applyFromClipboard",
  "copyedit.applySelectionToFile",
];
const REVIEW_COMMANDS = ["copyedit.review.accept", "copyedit.review.acceptHunk", "copyedit.review.reject"];

test("the client's commands and the review's, none of the server's", () => {
  const commands = manifest.contributes.commands.map((c: { command: string }) => c.command);
  assert.deepEqual(commands.sort(), [...CLIENT_COMMANDS, ...REVIEW_COMMANDS].sort());
  // the review's buttons show on its diff (the proposal's scheme), its palette entries only during a review
  const title = manifest.contributes.menus["editor/title"];
  assert.deepEqual(title.map((m: { command: string }) => m.command), REVIEW_COMMANDS);
  assert.ok(title.every((m: { when: string }) => m.when === "resourceScheme == copyedit-review"));
  const palette = manifest.contributes.menus.commandPalette.filter((m: { command: string }) => REVIEW_COMMANDS.includes(m.command));
  assert.ok(palette.length === 3 && palette.every((m: { when: string }) => m.when === "copyedit.reviewing"));
  assert.ok(read("extension/out/extension.js").includes("copyedit-review"));
});

test("the menus: command palette and editor context", () => {
  const context = manifest.contributes.menus["editor/context"].map((m: { command: string }) => m.command);
  assert.deepEqual(context, ["copyedit.editWithInstruction", "copyedit.applyFromClipboard", "copyedit.refactorWorkspaceWithInstruction"]);
  assert.ok(Array.isArray(manifest.contributes.menus.commandPalette));
});

test("activation events and engine", () => {
  for (const language of ["python", "javascript", "typescript", "javascriptreact", "typescriptreact"]) {
    assert.ok(manifest.activationEvents.includes(`onLanguage:${language}`), language);
  }
  for (const command of CLIENT_COMMANDS) assert.ok(manifest.activationEvents.includes(`onCommand:${command}`), command);
  assert.match(manifest.engines.vscode, /^\^1\.\d+\.\d+$/);
});

test("main is a bundled file in the package, with the language client inside", () => {
  const main = `extension/${path.posix.normalize(manifest.main)}`;
  const code = read(main.endsWith(".js") ? main : `${main}.js`);
  assert.ok(code.length > 100_000, `${main} is ${code.length} bytes: not bundled`);
  assert.ok(code.includes("copyedit.editWithInstruction"));
  assert.ok(code.includes("node_modules/vscode-languageclient/lib/node/main.js"), "vscode-languageclient is bundled");
  assert.ok(code.includes("couldn't create connection to server"), "the language client's code is there");
  assert.ok(code.includes("Content-Length"), "vscode-jsonrpc's code is there");
  assert.match(code, /require\("vscode"\)/, "vscode stays external");
  assert.doesNotMatch(code, /require\("vscode-languageclient/, "nothing is left to node_modules");
});

test("no node_modules, sources or tests; README and LICENSE", () => {
  assert.deepEqual(names.filter((n) => /(^|\/)node_modules\//.test(n)), []);
  assert.deepEqual(names.filter((n) => /^extension\/(src|test|out\/test)\/|\.ts$|\.map$/.test(n)), []);
  for (const name of ["extension/readme.md", "extension/LICENSE.txt", "extension.vsixmanifest"]) {
    assert.ok(names.some((n) => n.toLowerCase() === name.toLowerCase()), `${name} in ${names.join(", ")}`);
  }
});
