// Unit tests of src/logic.ts (no VS Code needed), plus checks that package.json and src/extension.ts agree with it.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { describe, test } from "node:test";
import * as logic from "../src/logic";
import { SETTINGS } from "../src/settings";

const root = path.resolve(__dirname, "..", "..");
const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
const properties: Record<string, { default: unknown; markdownDeprecationMessage?: string }> = manifest.contributes.configuration.properties;

/** The server's defaults as camelCase keys, read from copyedit_lsp/serve/config.py by the project's Python. */
function serverDefaults(): Record<string, unknown> {
  const repository = path.resolve(root, "..", "..");
  const python = process.env.COPYEDIT_PYTHON ?? path.join(repository, ".venv", "bin", "python");
  const script = [
    "import dataclasses, json",
    "from copyedit_lsp.serve.config import Settings",
    "camel = lambda name: name.split('_')[0] + ''.join(p.title() for p in name.split('_')[1:])",
    "print(json.dumps({camel(f.name): getattr(Settings(), f.name) for f in dataclasses.fields(Settings)}))",
  ].join("\n");
  return JSON.parse(execFileSync(python, ["-c", script], { cwd: repository, encoding: "utf8" }));
}

const STATS = { ops: 12, generatedTokens: 35, decodeSteps: 9, splicedTokens: 240, outputTokens: 275, seconds: 1.834 };

describe("settings -> initializationOptions", () => {
  test("camelCase server keys; unset threads omitted", () => {
    const options = logic.initializationOptions({
      model: "qwen2.5-coder-1.5b",
      mode: "rewrite",
      splice: "none",
      threads: null,
      gpuLayers: -1,
      batchInvariant: true,
      selector: "none",
      copyCheck: 0,
      fallback: false,
      nCtx: 8192,
      syntaxGuard: false,
    });
    assert.deepEqual(options, {
      model: "qwen2.5-coder-1.5b",
      mode: "rewrite",
      splice: "none",
      nGpuLayers: -1,
      batchInvariant: true,
      selector: "none",
      copyCheck: 0,
      fallback: false,
      nCtx: 8192,
      syntaxGuard: false,
    });
  });

  test("threads set", () => {
    assert.deepEqual(logic.initializationOptions({ threads: 4 }), { nThreads: 4 });
  });

  test("empty, missing or invalid values are omitted", () => {
    assert.deepEqual(logic.initializationOptions({ model: "", threads: 0, nCtx: -5, gpuLayers: 1.5, copyCheck: 1 }), {});
    assert.deepEqual(logic.initializationOptions({}), {});
  });

  test("remote backend settings", () => {
    assert.deepEqual(
      logic.initializationOptions({
        backend: "remote",
        "remote.url": "http://gpu:8000/v1",
        "remote.model": "",
        "remote.engine": "vllm",
        "remote.timeout": 0,
      }),
      { backend: "remote", remoteUrl: "http://gpu:8000/v1", remoteModel: "", remoteEngine: "vllm" },
    );
  });

  test("package.json defaults map to the server's defaults (copyedit_lsp/serve/config.py)", () => {
    const defaults: logic.Config = {};
    for (const setting of SETTINGS) defaults[setting.key] = properties[`copyedit.${setting.key}`].default;
    const options = logic.initializationOptions(defaults);
    const server = serverDefaults();
    for (const [key, value] of Object.entries(options)) assert.deepEqual(value, server[key], key);
    // every setting but threads (unset: every core, the server's own default) reaches the server
    assert.equal(Object.keys(options).length, SETTINGS.length - 1);
    assert.deepEqual(Object.keys(server).sort(), SETTINGS.map((setting) => setting.name).sort());
  });

  test("a configuration change resets unset threads to every core", () => {
    assert.deepEqual(logic.changedSettings({ mode: "program" }), { mode: "program", nThreads: null });
    assert.deepEqual(logic.changedSettings({ threads: 2 }), { nThreads: 2 });
  });

  test("package.json declares the extension's own settings, every server setting and the old keys", () => {
    const own = ["copyedit.server.command", "copyedit.server.pythonPath", "copyedit.trace.server"];
    const server = SETTINGS.map((setting) => `copyedit.${setting.key}`);
    const renamed = SETTINGS.flatMap((setting) => (setting.was ? [`copyedit.${setting.was}`] : []));
    assert.ok(renamed.length > 0);
    assert.deepEqual(Object.keys(properties).sort(), [...own, ...server, ...renamed].sort());
    for (const key of renamed) assert.match(properties[key].markdownDeprecationMessage ?? "", /Renamed: use `copyedit\./);
  });

  test("values outside a setting's choices or bounds are omitted", () => {
    assert.deepEqual(logic.initializationOptions({ mode: "fast", review: "sometimes", "remote.timeout": -1 }), {});
    assert.deepEqual(logic.initializationOptions({ maxNewTokens: 512, gpuLayers: -2 }), { maxNewTokens: 512 });
  });
});

describe("server command", () => {
  test("default: python3 -m copyedit_lsp.serve.server, with no transport (the server takes no --stdio)", () => {
    assert.deepEqual(logic.serverCommand({}), { command: "python3", args: ["-m", "copyedit_lsp.serve.server"] });
    assert.deepEqual(logic.serverCommand({ serverCommand: [], pythonPath: "" }), {
      command: "python3",
      args: ["-m", "copyedit_lsp.serve.server"],
    });
  });

  test("pythonPath", () => {
    assert.deepEqual(logic.serverCommand({ pythonPath: "/opt/py/bin/python" }), {
      command: "/opt/py/bin/python",
      args: ["-m", "copyedit_lsp.serve.server"],
    });
  });

  test("server.command wins over pythonPath", () => {
    assert.deepEqual(logic.serverCommand({ serverCommand: ["copyedit-lsp", "--log-file", "/tmp/l"], pythonPath: "py" }), {
      command: "copyedit-lsp",
      args: ["--log-file", "/tmp/l"],
    });
  });

  test("${workspaceFolder} and relative program paths resolve against the folder", () => {
    assert.deepEqual(logic.serverCommand({ pythonPath: ".venv/bin/python" }, "/w/proj"), {
      command: "/w/proj/.venv/bin/python",
      args: ["-m", "copyedit_lsp.serve.server"],
    });
    assert.deepEqual(logic.serverCommand({ serverCommand: ["${workspaceFolder}/bin/lsp", "--log-file", "${workspaceFolder}/l"] }, "/w"), {
      command: "/w/bin/lsp",
      args: ["--log-file", "/w/l"],
    });
    assert.equal(logic.serverCommand({ pythonPath: "python3.12" }, "/w").command, "python3.12");
  });
});

describe("command arguments", () => {
  // vscode.Selection carries more than line and character; only those may reach the server
  const at = (line: number, character: number) => ({ line, character, isBefore: () => false });

  test("a selection becomes an LSP range", () => {
    const argument = logic.editArguments("file:///a.py", 7, { start: at(2, 4), end: at(5, 0) }, "add types");
    assert.deepEqual(JSON.parse(JSON.stringify(argument)), {
      uri: "file:///a.py",
      version: 7,
      range: { start: { line: 2, character: 4 }, end: { line: 5, character: 0 } },
      instruction: "add types",
    });
  });

  test("an empty selection is the cursor (the server edits the enclosing definition)", () => {
    const argument = logic.editArguments("file:///a.py", 1, { start: at(3, 8), end: at(3, 8) }, "fix it");
    assert.deepEqual(argument.range, { start: { line: 3, character: 8 }, end: { line: 3, character: 8 } });
  });

  test("refactor", () => {
    assert.deepEqual(logic.refactorArguments("rename foo to bar"), { instruction: "rename foo to bar" });
  });
});

describe("does a command need a prompt", () => {
  test("copyedit.edit without an instruction does", () => {
    assert.equal(logic.needsInstruction(logic.EDIT, [{ uri: "file:///a.py", version: 1 }]), true);
    assert.equal(logic.needsInstruction(logic.EDIT, [{ uri: "file:///a.py", instruction: "  " }]), true);
  });

  test("copyedit.edit with an instruction, other commands, odd arguments do not", () => {
    assert.equal(logic.needsInstruction(logic.EDIT, [{ uri: "file:///a.py", instruction: "fix" }]), false);
    assert.equal(logic.needsInstruction(logic.REFACTOR, [{}]), false);
    assert.equal(logic.needsInstruction(logic.CANCEL, []), false);
    assert.equal(logic.needsInstruction(logic.EDIT, []), false);
  });
});

describe("status text", () => {
  test("an edit's figures", () => {
    assert.equal(logic.summary(logic.EDIT, { applied: true, edits: 2, stats: STATS }), "12 ops, 240 copied / 35 generated, 1.8 s");
    assert.equal(
      logic.summary(logic.EDIT, { applied: false, reason: "the result has more syntax errors", stats: { ...STATS, ops: 1 } }),
      "not applied (the result has more syntax errors)",
    );
    assert.equal(logic.summary(logic.EDIT, { applied: false, stats: STATS }), "12 ops, 240 copied / 35 generated, 1.8 s, not applied");
    assert.equal(
      logic.summary(logic.EDIT, { applied: true, stats: { ...STATS, fallback: "syntax" } }),
      "12 ops, 240 copied / 35 generated, 1.8 s, rewritten (program broke the syntax)",
    );
    assert.equal(
      logic.summary(logic.EDIT, { applied: true, stats: { ...STATS, fallback: "unchanged" } }),
      "12 ops, 240 copied / 35 generated, 1.8 s, rewritten (program changed nothing)",
    );
  });

  test("rewrite mode has no ops", () => {
    assert.equal(logic.summary(logic.EDIT, { applied: true, stats: { ...STATS, ops: 0, splicedTokens: 0 } }), "0 copied / 35 generated, 1.8 s");
    assert.equal(
      logic.summary(logic.EDIT, { applied: true, stats: { ...STATS, splicedTokens: 0, requests: 13 } }),
      "12 ops, 13 requests / 35 generated, 1.8 s",
    );
  });

  test("refactor, cancel, nothing", () => {
    assert.equal(logic.summary(logic.REFACTOR, { applied: true, files: 10, changed: 3, skipped: [] }), "3 of 10 files changed");
    assert.equal(logic.summary(logic.REFACTOR, { applied: false, files: 1, changed: 1, skipped: [] }), "1 of 1 file changed, not applied");
    assert.equal(logic.summary(logic.REFACTOR, { applied: false, reason: "cancelled" }), "not applied (cancelled)");
    assert.equal(logic.summary(logic.CANCEL, { cancelled: 1 }), "cancelled 1 edit");
    assert.equal(logic.summary(logic.EDIT, undefined), undefined);
  });

  test("states", () => {
    let renders = 0;
    const status = new logic.Status(() => renders++);
    assert.equal(status.text, "copyedit: starting");
    status.ready();
    assert.equal(status.text, "copyedit: ready");
    status.begin();
    status.begin();
    assert.equal(status.text, "$(sync~spin) copyedit: editing (2)");
    status.end("1 op, 3 copied / 4 generated, 0.2 s");
    assert.equal(status.state, "editing");
    status.end(undefined);
    assert.equal(status.text, "copyedit: 1 op, 3 copied / 4 generated, 0.2 s");
    status.error("the server stopped");
    assert.equal(status.text, "$(error) copyedit: error");
    assert.equal(status.tooltip, "copyedit: the server stopped");
    status.starting();
    status.ready();
    assert.equal(status.text, "copyedit: ready", "a new server has no last edit");
    assert.equal(renders, 8);
  });

  test("edits that start or end after the server failed leave the error", () => {
    const status = new logic.Status();
    status.ready();
    status.begin();
    status.error("crashed");
    status.end(undefined);
    assert.equal(status.state, "error");
    status.begin();
    assert.equal(status.state, "error");
  });
});

describe("execute-command middleware", () => {
  function setup(answer: string | undefined, next: logic.Next) {
    const status = new logic.Status();
    status.ready();
    const calls = { prompts: 0, sent: [] as unknown[][], failures: [] as unknown[] };
    const middleware = logic.executeCommandMiddleware(status, {
      prompt: async () => {
        calls.prompts++;
        return answer;
      },
      failed: (_command, error) => calls.failures.push(error),
    });
    const run = (command: string, args: unknown[]) =>
      middleware(command, args, (c, a) => {
        calls.sent.push([c, ...a]);
        return next(c, a);
      });
    return { status, calls, run };
  }

  test("prompts for a missing instruction and adds it", async () => {
    const { status, calls, run } = setup(" add docstrings ", () => ({ applied: true, stats: STATS }));
    const argument = { uri: "file:///a.py", version: 3, range: { start: { line: 1, character: 0 }, end: { line: 1, character: 0 } } };
    const result = await run(logic.EDIT, [argument]);
    assert.equal(calls.prompts, 1);
    assert.deepEqual(calls.sent, [[logic.EDIT, { ...argument, instruction: "add docstrings" }]]);
    assert.deepEqual(result, { applied: true, stats: STATS });
    assert.equal(status.text, "copyedit: 12 ops, 240 copied / 35 generated, 1.8 s");
  });

  test("a dismissed or blank prompt sends nothing", async () => {
    for (const answer of [undefined, "   "]) {
      const { status, calls, run } = setup(answer, () => assert.fail("sent"));
      assert.equal(await run(logic.EDIT, [{ uri: "file:///a.py" }]), undefined);
      assert.deepEqual(calls.sent, []);
      assert.equal(status.state, "ready");
    }
  });

  test("an instruction that is there is not asked for; the status says editing meanwhile", async () => {
    let during = "";
    const { status, calls, run } = setup("never", () => {
      during = status.text;
      return { applied: true, files: 4, changed: 2, skipped: [] };
    });
    await run(logic.REFACTOR, [{ instruction: "use f-strings" }]);
    await run(logic.EDIT, [{ uri: "file:///a.py", instruction: "fix" }]);
    assert.equal(calls.prompts, 0);
    assert.equal(during, "$(sync~spin) copyedit: editing");
    assert.equal(calls.sent.length, 2);
  });

  test("cancel passes through untracked", async () => {
    const { status, calls, run } = setup(undefined, () => ({ cancelled: 2 }));
    assert.deepEqual(await run(logic.CANCEL, []), { cancelled: 2 });
    assert.deepEqual(calls.sent, [[logic.CANCEL]]);
    assert.equal(status.text, "copyedit: ready");
  });

  test("a failure's message loses the server's command prefix", () => {
    assert.equal(logic.failureMessage(logic.EDIT, new Error("copyedit.edit: no instruction")), "copyedit: no instruction");
    assert.equal(logic.failureMessage(logic.REFACTOR, "boom"), "copyedit: boom");
  });

  test("a failed command is reported once, not thrown", async () => {
    const error = new Error("copyedit.edit: the document changed");
    const { status, calls, run } = setup(undefined, () => Promise.reject(error));
    assert.equal(await run(logic.EDIT, [{ uri: "file:///a.py", instruction: "x" }]), undefined);
    assert.deepEqual(calls.failures, [error]);
    assert.equal(status.text, "copyedit: edit failed");
  });
});

describe("package.json agrees with the logic", () => {
  test("activation events: the languages and the client commands", () => {
    assert.deepEqual(manifest.activationEvents, [
      ...logic.LANGUAGES.map((language) => `onLanguage:${language}`),
      ...[logic.EDIT_WITH_INSTRUCTION, logic.REFACTOR_WITH_INSTRUCTION, logic.CANCEL_EDITS, logic.APPLY_FROM_CLIPBOARD, logic.APPLY_SELECTION_TO].map((c) => `onCommand:${c}`),
    ]);
  });

  test("src/extension.ts registers the client commands and none of the server's", () => {
    const source = readFileSync(path.join(root, "src", "extension.ts"), "utf8");
    const registered = [...source.matchAll(/registerCommand\(logic\.(\w+)/g)].map((m) => m[1]);
    assert.deepEqual(registered, ["EDIT_WITH_INSTRUCTION", "REFACTOR_WITH_INSTRUCTION", "CANCEL_EDITS", "APPLY_FROM_CLIPBOARD", "APPLY_SELECTION_TO"]);
    assert.doesNotMatch(source, /registerCommand\((logic\.(EDIT|REFACTOR|CANCEL|APPLY)\b|"copyedit\.(edit|refactorWorkspace|cancel|apply)")/);
  });
});

describe("apply", () => {
  const file = "import math\n\n\ndef area(r):\n    return math.pi * r * r\n";
  test("the clipboard holds a change: code the file shares, or markers", () => {
    assert.ok(logic.looksLikeChange("def area(r):\n    return math.pi * r ** 2\n", file)); // shares its def line
    assert.ok(logic.looksLikeChange("# ... existing code ...\nx = 1\n", file));
    assert.ok(logic.looksLikeChange("<<<<<<< SEARCH\nx\n=======\ny\n>>>>>>> REPLACE\n", file));
    assert.ok(logic.looksLikeChange("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n", file));
  });
  test("a word, one line, the file itself or unrelated text is not a change", () => {
    for (const text of ["area", "return 1\n", file, "Dear reader,\nthanks for writing.\n", "f(...args);\ng(a);\n"]) {
      assert.equal(logic.looksLikeChange(text, file), false, text);
    }
  });
  test("the argument and the words beside a line", () => {
    assert.deepEqual(logic.applyArguments("file:///a.py", 3, "x\n"), { uri: "file:///a.py", version: 3, change: "x\n" });
    assert.equal(logic.sourceWords({ source: "change", line: 5 }), "from the change, line 5");
    assert.equal(logic.sourceWords({ source: "file", line: 12 }), "kept from the file, line 12");
    assert.equal(logic.sourceWords({ source: "gen" }), "written by the model");
  });
  test("an apply's figures in the status bar, and a failure that says apply", async () => {
    assert.equal(logic.summary(logic.APPLY, { applied: true, stats: STATS }), "12 ops, 240 copied / 35 generated, 1.8 s");
    const status = new logic.Status();
    status.ready();
    const failed: string[] = [];
    const middleware = logic.executeCommandMiddleware(status, { prompt: async () => undefined, failed: (c) => failed.push(c) });
    await middleware(logic.APPLY, [{}], () => Promise.reject(new Error("copyedit.apply: not placed")));
    assert.deepEqual([failed, status.text], [[logic.APPLY], "copyedit: apply failed"]);
  });
});

describe("review", () => {
  const edit = (line: number, end: number, newText: string): logic.TextEdit => ({
    range: { start: { line, character: 0 }, end: { line: end, character: 0 } },
    newText,
  });
  const text = "a\nb\nc\nd\ne\n";
  const edits = [edit(1, 2, "B1\nB2\n"), edit(3, 4, "")]; // b -> two lines; d removed

  test("only an edit of one document with an annotation that needs confirmation is reviewed", () => {
    const one = [{ textDocument: { uri: "file:///a.py", version: 1 }, edits }];
    assert.equal(logic.needsReview({ documentChanges: one, changeAnnotations: { "hunk-1": { needsConfirmation: true } } }), true);
    assert.equal(logic.needsReview({ documentChanges: one, changeAnnotations: { "hunk-1": { needsConfirmation: false } } }), false);
    assert.equal(logic.needsReview({ documentChanges: one }), false);
    assert.equal(logic.needsReview({ documentChanges: [...one, ...one], changeAnnotations: { a: { needsConfirmation: true } } }), false);
    assert.equal(logic.needsReview(undefined), false);
  });

  test("the proposal is the text with every hunk applied; hunks are found by its lines", () => {
    assert.equal(logic.applyTextEdits(text, edits), "a\nB1\nB2\nc\ne\n");
    assert.equal(logic.applyTextEdits("x\r\ny\r\n", [edit(1, 2, "Y\r\n")]), "x\r\nY\r\n");
    assert.equal(logic.applyTextEdits("x", [{ range: { start: { line: 0, character: 1 }, end: { line: 5, character: 0 } }, newText: "!" }]), "x!");
    assert.deepEqual([logic.proposalLine(edits, 0), logic.proposalLine(edits, 1)], [1, 4]);
    assert.deepEqual([0, 1, 2, 3, 4].map((line) => logic.hunkAtProposalLine(edits, line)), [undefined, 0, 0, undefined, 1]);
  });

  test("the answer says what was taken, 1-based and in order, or why nothing was", () => {
    assert.deepEqual(logic.reviewAnswer([1, 0, 1]), { applied: true, hunks: [1, 2] });
    assert.deepEqual(logic.reviewAnswer([]), { applied: false, hunks: [], failureReason: "rejected in review" });
    assert.deepEqual(logic.reviewAnswer([0], "the document changed"), { applied: false, hunks: [], failureReason: "the document changed" });
  });

  test("the live view's figures show in the status bar while editing, and go when the edit ends", () => {
    const status = new logic.Status();
    status.ready();
    status.begin();
    status.progress(logic.liveText({ uri: "file:///a.py", index: 2, ops: 3, tokensPerSecond: 118.6 }));
    assert.equal(status.text, "$(sync~spin) copyedit: editing · 3 ops, 119 tok/s");
    status.end("done");
    assert.equal(status.text, "copyedit: done");
  });
});
