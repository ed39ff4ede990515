// Wires src/logic.ts to the VS Code API: the language client, the client commands, the status bar.

import * as vscode from "vscode";
import {
  ApplyWorkspaceEditParams,
  ApplyWorkspaceEditRequest,
  ApplyWorkspaceEditResult,
  DidChangeConfigurationNotification,
  LanguageClient,
  RevealOutputChannelOn,
  State,
  TextDocumentEdit,
} from "vscode-languageclient/node";
import * as logic from "./logic";
import { LiveView, Review } from "./review";
import { SETTINGS } from "./settings";

let client: LanguageClient | undefined;
let status: logic.Status;
let output: vscode.OutputChannel;
let restarting: Promise<void> = Promise.resolve();
let review: Review;
let live: LiveView;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 0);
  output = vscode.window.createOutputChannel("copyedit");
  status = new logic.Status(() => render(item));
  review = new Review((line) => output.appendLine(`copyedit: ${line}`));
  live = new LiveView(status);
  render(item);
  item.show();
  context.subscriptions.push(
    item,
    output,
    review.register(),
    vscode.commands.registerCommand(logic.EDIT_WITH_INSTRUCTION, editWithInstruction),
    vscode.commands.registerCommand(logic.REFACTOR_WITH_INSTRUCTION, refactorWorkspace),
    vscode.commands.registerCommand(logic.CANCEL_EDITS, cancelEdits),
    vscode.commands.registerCommand(logic.APPLY_FROM_CLIPBOARD, applyFromClipboard),
    vscode.commands.registerCommand(logic.APPLY_SELECTION_TO, applySelectionToFile),
    vscode.languages.registerCodeActionsProvider(
      logic.LANGUAGES.map((language) => ({ language })),
      { provideCodeActions: clipboardActions },
      { providedCodeActionKinds: [APPLY_KIND] },
    ),
    vscode.workspace.onDidChangeConfiguration(configurationChanged),
  );
  await start();
}

export async function deactivate(): Promise<void> {
  const old = client;
  client = undefined;
  if (!old) return;
  // only a running client can stop: let one that is starting finish first
  if (old.state === State.Starting) await old.start().catch(() => undefined);
  if (old.isRunning()) await old.dispose();
}

function readConfig(): logic.Config {
  const config = vscode.workspace.getConfiguration("copyedit");
  const values: logic.Config = {
    serverCommand: config.get<string[]>("server.command"),
    pythonPath: config.get<string>("server.pythonPath"),
  };
  for (const setting of SETTINGS) values[setting.key] = config.get(setting.key);
  // a renamed setting set only under its old key keeps working (VS Code marks the old key deprecated)
  const set = (key: string) => {
    const found = config.inspect(key);
    return [found?.globalValue, found?.workspaceValue, found?.workspaceFolderValue].some((v) => v !== undefined);
  };
  for (const setting of SETTINGS) {
    if (setting.was !== undefined && set(setting.was) && !set(setting.key)) values[setting.key] = config.get(setting.was);
  }
  return values;
}

async function start(): Promise<void> {
  const server = logic.serverCommand(readConfig(), vscode.workspace.workspaceFolders?.[0]?.uri.fsPath);
  const started = new LanguageClient(
    "copyedit",
    "copyedit",
    server,
    {
      documentSelector: logic.LANGUAGES.flatMap((language) => [
        { scheme: "file", language },
        { scheme: "untitled", language },
      ]),
      initializationOptions: () => logic.initializationOptions(readConfig()),
      outputChannel: output,
      // command failures are shown by the middleware, with the server's message
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      middleware: { executeCommand: logic.executeCommandMiddleware(status, { prompt: askInstruction, failed }) },
    },
  );
  client = started;
  started.onRequest(ApplyWorkspaceEditRequest.type, (params) => applyEdit(started, params));
  started.onNotification("copyedit/op", (notice: logic.OpNotice) => live.show(notice));
  started.onNotification("copyedit/provenance", (notice: logic.ProvenanceNotice) => review.provenanceSent(notice));
  started.onDidChangeState(({ newState }) => {
    if (client !== started) return; // an old client, stopped on purpose
    if (newState === State.Starting) status.starting();
    else if (newState === State.Running) status.ready();
    else status.error("the server stopped; see the copyedit output");
  });
  status.starting();
  try {
    await started.start();
  } catch (error) {
    const problem = `the server did not start (${[server.command, ...server.args].join(" ")}); set copyedit.server.pythonPath or copyedit.server.command`;
    output.appendLine(`copyedit: ${problem}: ${messageOf(error)}`);
    status.error(problem);
  }
}

/** `workspace/applyEdit`: an edit the server wants confirmed is reviewed in a diff editor; any
 * other is applied as vscode-languageclient would (its annotations open VS Code's refactor preview). */
async function applyEdit(from: LanguageClient, params: ApplyWorkspaceEditParams): Promise<ApplyWorkspaceEditResult> {
  const label = (params.label ?? "edit").replace(/^copyedit: /, "");
  if (logic.needsReview(params.edit)) {
    const change = params.edit.documentChanges?.[0];
    if (change && TextDocumentEdit.is(change)) return review.propose(label, change);
  }
  for (const change of params.edit.documentChanges ?? []) {
    if (!TextDocumentEdit.is(change) || typeof change.textDocument.version !== "number") continue;
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === from.protocol2CodeConverter.asUri(change.textDocument.uri).toString());
    if (open && open.version !== change.textDocument.version) return { applied: false, failureReason: "Version mismatch" };
  }
  const edit = await from.protocol2CodeConverter.asWorkspaceEdit(params.edit);
  return { applied: await vscode.workspace.applyEdit(edit) };
}

function configurationChanged(event: vscode.ConfigurationChangeEvent): void {
  if (event.affectsConfiguration("copyedit.server")) {
    restarting = restarting.then(async () => {
      await deactivate();
      await start();
    });
  } else if (event.affectsConfiguration("copyedit") && client?.isRunning()) {
    void client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: logic.changedSettings(readConfig()),
    });
  }
}

function render(item: vscode.StatusBarItem): void {
  item.text = status.text;
  item.tooltip = status.tooltip;
  item.command = status.state === "editing" ? logic.CANCEL_EDITS : undefined;
  item.backgroundColor = status.state === "error" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
}

function askInstruction(): Thenable<string | undefined> {
  return vscode.window.showInputBox({
    title: "copyedit",
    prompt: "What should change?",
    placeHolder: "e.g. add type hints",
    ignoreFocusOut: true,
  });
}

function failed(command: string, error: unknown): void {
  if (!(error instanceof vscode.CancellationError)) void vscode.window.showErrorMessage(logic.failureMessage(command, error));
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Whether the server can take a command; says why not otherwise. */
function serverRunning(): boolean {
  if (client?.isRunning()) return true;
  void vscode.window.showErrorMessage("copyedit: the server is not running; see the copyedit output");
  return false;
}

async function editWithInstruction(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor || !logic.LANGUAGES.includes(editor.document.languageId)) {
    void vscode.window.showWarningMessage(`copyedit: open a ${logic.LANGUAGES.join(", ")} file to edit`);
    return;
  }
  if (!serverRunning()) return;
  const instruction = (await askInstruction())?.trim();
  if (!instruction) return;
  const { document, selection } = editor;
  const argument = logic.editArguments(document.uri.toString(), document.version, selection, instruction);
  await vscode.commands.executeCommand(logic.EDIT, argument);
}

async function refactorWorkspace(): Promise<void> {
  if (!vscode.workspace.workspaceFolders?.length) {
    void vscode.window.showWarningMessage("copyedit: open a folder to refactor");
    return;
  }
  if (!serverRunning()) return;
  const instruction = (await askInstruction())?.trim();
  if (!instruction) return;
  await vscode.commands.executeCommand(logic.REFACTOR, logic.refactorArguments(instruction));
}

async function cancelEdits(): Promise<void> {
  if (!serverRunning()) return;
  const text = logic.summary(logic.CANCEL, await vscode.commands.executeCommand(logic.CANCEL));
  if (text) void vscode.window.showInformationMessage(`copyedit: ${text}`);
}

const APPLY_KIND = vscode.CodeActionKind.Refactor.append("copyedit.apply");

/** The editor a change is applied to: the active one, if it holds a language the server edits. */
function editorToApplyTo(): vscode.TextEditor | undefined {
  const editor = vscode.window.activeTextEditor;
  if (!editor || !logic.LANGUAGES.includes(editor.document.languageId)) {
    void vscode.window.showWarningMessage(`copyedit: open a ${logic.LANGUAGES.join(", ")} file to apply a change to`);
    return undefined;
  }
  return editor;
}

async function applyChange(document: vscode.TextDocument, change: string): Promise<void> {
  if (change.trim() === "") {
    void vscode.window.showWarningMessage("copyedit: no change to apply (it is empty)");
    return;
  }
  if (!serverRunning()) return;
  await vscode.commands.executeCommand(logic.APPLY, logic.applyArguments(document.uri.toString(), document.version, change));
}

/** "Apply Change from Clipboard": the clipboard's change merged into the active editor's file. */
async function applyFromClipboard(): Promise<void> {
  const editor = editorToApplyTo();
  if (editor) await applyChange(editor.document, await vscode.env.clipboard.readText());
}

/** "Apply Selection to File...": the active editor's selection (all of it when none: a chat
 * answer, an untitled buffer) merged into another open file, picked from a list. */
async function applySelectionToFile(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return;
  const change = editor.selection.isEmpty ? editor.document.getText() : editor.document.getText(editor.selection);
  const targets = vscode.workspace.textDocuments.filter(
    (document) => document !== editor.document && logic.LANGUAGES.includes(document.languageId) && !document.uri.scheme.startsWith("copyedit"),
  );
  if (targets.length === 0) {
    void vscode.window.showWarningMessage("copyedit: open the file the change is for first");
    return;
  }
  const items = targets.map((document) => ({ label: vscode.workspace.asRelativePath(document.uri), document }));
  const picked = await vscode.window.showQuickPick(items, { title: "copyedit: apply the change to which file?" });
  if (picked) await applyChange(picked.document, change);
}

/** A code action where the clipboard holds a change for the file (code it shares, or markers). */
async function clipboardActions(document: vscode.TextDocument): Promise<vscode.CodeAction[]> {
  const clipboard = await vscode.env.clipboard.readText();
  if (!logic.looksLikeChange(clipboard, document.getText())) return [];
  const action = new vscode.CodeAction("copyedit: Apply change from clipboard", APPLY_KIND);
  action.command = { command: logic.APPLY_FROM_CLIPBOARD, title: "Apply change from clipboard" };
  return [action];
}
