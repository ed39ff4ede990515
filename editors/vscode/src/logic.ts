// The extension's pure logic: no runtime import of `vscode`, so node can unit-test it.

import * as path from "node:path";

import { SETTINGS, type ServerSettings, type Setting } from "./settings";

/** The server's commands; vscode-languageclient registers them, the extension never does. */
export const EDIT = "copyedit.edit";
export const REFACTOR = "copyedit.refactorWorkspace";
export const CANCEL = "copyedit.cancel";
export const APPLY = "copyedit.apply";

/** The extension's own (client) commands. */
export const EDIT_WITH_INSTRUCTION = "copyedit.editWithInstruction";
export const REFACTOR_WITH_INSTRUCTION = "copyedit.refactorWorkspaceWithInstruction";
export const CANCEL_EDITS = "copyedit.cancelEdits";
export const APPLY_FROM_CLIPBOARD = "copyedit.applyFromClipboard";
export const APPLY_SELECTION_TO = "copyedit.applySelectionToFile";

/** The languageIds the server edits (and the extension activates on). */
export const LANGUAGES = ["python", "javascript", "typescript", "javascriptreact", "typescriptreact"];

/** The `copyedit.*` settings, as `WorkspaceConfiguration.get` returns them: the extension's own
 * and, under their VS Code keys (`SETTINGS`), the server's. */
export interface Config {
  serverCommand?: string[];
  pythonPath?: string;
  [key: string]: unknown;
}

export type { ServerSettings };

/** `initializationOptions`: the settings that are set and valid; the rest keep the server's defaults. */
export function initializationOptions(config: Config): ServerSettings {
  const options: Record<string, unknown> = {};
  for (const setting of SETTINGS) {
    const value = config[setting.key];
    if (valid(value, setting)) options[setting.name] = value;
  }
  return options as ServerSettings;
}

/** `workspace/didChangeConfiguration` settings: as at start, but unset threads reset to every core. */
export function changedSettings(config: Config): ServerSettings {
  const settings = initializationOptions(config);
  return "nThreads" in settings ? settings : { ...settings, nThreads: null };
}

/** Whether a setting's value is one the server takes (null and undefined are unset). */
function valid(value: unknown, setting: Setting): boolean {
  if (setting.type === "string") {
    if (typeof value !== "string") return false;
    if (setting.pattern !== undefined && !new RegExp(setting.pattern).test(value)) return false;
    return setting.choices ? setting.choices.includes(value) : value !== "" || setting.empty === true;
  }
  if (setting.type === "boolean") return typeof value === "boolean";
  if (typeof value !== "number" || !Number.isFinite(value)) return false;
  if (setting.type === "integer" && !Number.isInteger(value)) return false;
  return (
    (setting.minimum === undefined || value >= setting.minimum) &&
    (setting.exclusiveMinimum === undefined || value > setting.exclusiveMinimum) &&
    (setting.exclusiveMaximum === undefined || value < setting.exclusiveMaximum)
  );
}

/** How to start the server: `copyedit.server.command`, else `<pythonPath> -m copyedit_lsp.serve.server`.
 * `${workspaceFolder}` is replaced and a relative program path is taken from `root`.
 * The result is the client's Executable: stdio without a `transport`, which would add `--stdio`. */
export function serverCommand(config: Config, root?: string): { command: string; args: string[] } {
  const given = (config.serverCommand ?? []).filter((part) => typeof part === "string" && part !== "");
  const parts = given.length > 0 ? given : [config.pythonPath || "python3", "-m", "copyedit_lsp.serve.server"];
  const [program, ...args] = parts.map((part) => (root ? part.split("${workspaceFolder}").join(root) : part));
  const relative = root !== undefined && /[\\/]/.test(program) && !path.isAbsolute(program);
  return { command: relative ? path.resolve(root, program) : program, args };
}

export interface Position {
  line: number;
  character: number;
}

/** An editor selection, reduced to what the arguments need (vscode.Selection fits). */
export interface Selection {
  start: Position;
  end: Position;
}

export interface EditArguments {
  uri: string;
  version?: number;
  range?: { start: Position; end: Position };
  instruction?: string;
  commentLine?: number;
}

/** `copyedit.edit`'s argument: an empty selection is the cursor, so the server edits the enclosing definition. */
export function editArguments(uri: string, version: number, selection: Selection, instruction: string): EditArguments {
  const position = (p: Position): Position => ({ line: p.line, character: p.character });
  return { uri, version, range: { start: position(selection.start), end: position(selection.end) }, instruction };
}

/** `copyedit.apply`'s argument: the change an assistant wrote, merged into the whole document. */
export function applyArguments(uri: string, version: number, change: string): { uri: string; version: number; change: string } {
  return { uri, version, change };
}

/** Whether `text` (the clipboard) reads as a change for `document`: two or more lines, not the
 * document itself, and either marked as a change (an elision marker, a SEARCH block, a diff's
 * header) or sharing a line of code with the document. */
export function looksLikeChange(text: string, document: string): boolean {
  const lines = text.split(/\r?\n/).map((line) => line.trim()).filter((line) => line !== "");
  if (lines.length < 2 || text.trim() === document.trim()) return false;
  const marked = (line: string) => /^(<{7} SEARCH|@@ |--- |\+\+\+ )/.test(line) || /^(#|\/\/|\/\*)?\s*\.\.\.(\s|$)/.test(line);
  if (lines.some(marked)) return true;
  const known = new Set(document.split(/\r?\n/).map((line) => line.trim()).filter((line) => line.length > 3));
  return lines.some((line) => known.has(line));
}

/** Where a new line of an applied change comes from (`copyedit/provenance`). */
export interface LineSource {
  source: "file" | "change" | "gen";
  line?: number;
}

/** One hunk of an apply: the lines it removes, where each of its new lines comes from. */
export interface HunkSources {
  removes: number;
  lines: LineSource[];
}

/** The server's `copyedit/provenance`, sent before an apply's review. */
export interface ProvenanceNotice {
  uri: string;
  version?: number | null;
  hunks: HunkSources[];
}

/** The words a review shows beside a new line of an apply. */
export function sourceWords(line: LineSource): string {
  if (line.source === "change") return `from the change, line ${line.line}`;
  if (line.source === "file") return `kept from the file, line ${line.line}`;
  return "written by the model";
}

/** `copyedit.refactorWorkspace`'s argument. */
export function refactorArguments(instruction: string): { instruction: string } {
  return { instruction };
}

/** Whether a server command must be asked for its instruction first: `copyedit.edit` from "Edit with instruction...". */
export function needsInstruction(command: string, args: unknown[]): boolean {
  if (command !== EDIT) return false;
  const [argument] = args;
  if (typeof argument !== "object" || argument === null) return false;
  const instruction = (argument as { instruction?: unknown }).instruction;
  return typeof instruction !== "string" || instruction.trim() === "";
}

/** What the status bar shows for a finished command, or undefined when the result says nothing. */
export function summary(command: string, result: unknown): string | undefined {
  if (typeof result !== "object" || result === null) return undefined;
  const r = result as Record<string, unknown>;
  if (command === CANCEL) return typeof r.cancelled === "number" ? `cancelled ${plural(r.cancelled, "edit")}` : undefined;
  if (r.applied === false && typeof r.reason === "string") return `not applied (${r.reason})`;
  if (command === REFACTOR && typeof r.changed === "number" && typeof r.files === "number") {
    return `${r.changed} of ${plural(r.files, "file")} changed${r.applied === false && r.changed > 0 ? ", not applied" : ""}`;
  }
  const stats = r.stats as Record<string, unknown> | undefined;
  if ((command === EDIT || command === APPLY) && stats && typeof stats === "object") {
    const ops = Number(stats.ops) > 0 ? `${plural(Number(stats.ops), "op")}, ` : ""; // rewrite mode has none
    // a remote server's copies are prefix-cache hits it does not count: its requests instead
    const copied = Number(stats.requests) > 0 ? plural(Number(stats.requests), "request") : `${Number(stats.splicedTokens)} copied`;
    // program mode's program gave way to a rewrite by the base model (stats.fallback says why)
    const rewritten = typeof stats.fallback === "string" ? `, rewritten (program ${FALLBACK_WORDS[stats.fallback] ?? stats.fallback})` : "";
    const figures = `${ops}${copied} / ${Number(stats.generatedTokens)} generated, ${Number(stats.seconds).toFixed(1)} s${rewritten}`;
    return r.applied === false ? `${figures}, not applied` : figures;
  }
  return undefined;
}

// Why program mode's program gave way to a rewrite (the server's stats.fallback, edit.FALLBACKS).
const FALLBACK_WORDS: Record<string, string> = { cut: "cut short", syntax: "broke the syntax", loss: "lost code", unchanged: "changed nothing" };

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

export type State = "starting" | "ready" | "editing" | "error";

/** The status bar's model: the server's state, the running edits, the last result. */
export class Status {
  state: State = "starting";
  running = 0;
  last?: string; // the summary of the last finished edit
  problem?: string; // why the state is "error"
  live?: string; // the running edit's ops and speed (copyedit/op)

  constructor(private readonly changed: () => void = () => undefined) {}

  starting(): void {
    this.problem = undefined;
    this.last = undefined;
    this.update("starting");
  }

  ready(): void {
    this.problem = undefined;
    this.update(this.running > 0 ? "editing" : "ready");
  }

  error(problem: string): void {
    this.running = 0;
    this.problem = problem;
    this.update("error");
  }

  begin(): void {
    this.running += 1;
    if (this.state !== "error") this.update("editing");
  }

  /** The running edit's live figures (undefined: none). */
  progress(live: string | undefined): void {
    this.live = live;
    this.changed();
  }

  end(last: string | undefined): void {
    this.running = Math.max(this.running - 1, 0);
    this.live = undefined;
    if (last !== undefined) this.last = last;
    if (this.state === "editing") this.update(this.running > 0 ? "editing" : "ready");
  }

  get text(): string {
    if (this.state === "editing") {
      const count = this.running > 1 ? ` (${this.running})` : "";
      return `$(sync~spin) copyedit: editing${count}${this.live ? ` · ${this.live}` : ""}`;
    }
    if (this.state === "error") return "$(error) copyedit: error";
    if (this.state === "ready" && this.last !== undefined) return `copyedit: ${this.last}`;
    return `copyedit: ${this.state}`;
  }

  get tooltip(): string {
    if (this.state === "editing") return "copyedit is editing: click to cancel";
    if (this.state === "error") return `copyedit: ${this.problem ?? "the server stopped"}`;
    return this.state === "ready" ? "copyedit: the server is running" : "copyedit: starting the server";
  }

  private update(state: State): void {
    this.state = state;
    this.changed();
  }
}

export type Next = (command: string, args: unknown[]) => unknown;

/** What the execute-command middleware needs from the editor. */
export interface Hooks {
  prompt(): PromiseLike<string | undefined>;
  failed(command: string, error: unknown): void;
}

/** Whether a command is an edit the status bar follows. */
function tracked(command: string): boolean {
  return command === EDIT || command === REFACTOR || command === APPLY;
}

/** A failed command's message for the user, without the server's "copyedit.edit: " prefix. */
export function failureMessage(command: string, error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return `copyedit: ${message.startsWith(`${command}: `) ? message.slice(command.length + 2) : message}`;
}

/** `middleware.executeCommand`: asks for a missing instruction (a dismissed prompt sends nothing),
 * follows edits in `status`, and reports a failure through `hooks` instead of throwing. */
export function executeCommandMiddleware(status: Status, hooks: Hooks) {
  return async (command: string, args: unknown[], next: Next): Promise<unknown> => {
    let sent = args;
    if (needsInstruction(command, args)) {
      const instruction = (await hooks.prompt())?.trim();
      if (!instruction) return undefined;
      sent = [{ ...(args[0] as object), instruction }, ...args.slice(1)];
    }
    if (tracked(command)) status.begin();
    try {
      const result = await next(command, sent);
      if (tracked(command)) status.end(summary(command, result));
      return result;
    } catch (error) {
      if (tracked(command)) status.end(`${command === REFACTOR ? "refactor" : command === APPLY ? "apply" : "edit"} failed`);
      hooks.failed(command, error);
      return undefined;
    }
  };
}

/** An LSP TextEdit (positions in UTF-16 code units, as JavaScript strings count them). */
export interface TextEdit {
  range: { start: Position; end: Position };
  newText: string;
  annotationId?: string;
}

/** The parts of a `workspace/applyEdit` the review reads. */
export interface ReviewedEdit {
  documentChanges?: unknown[];
  changeAnnotations?: Record<string, { needsConfirmation?: boolean }>;
}

/** Whether the server asks the user to confirm an edit: an annotation that needs confirmation,
 * on an edit of one document (a workspace refactor goes to VS Code's own refactor preview). */
export function needsReview(edit: ReviewedEdit | undefined): boolean {
  if (!edit || edit.documentChanges?.length !== 1) return false;
  return Object.values(edit.changeAnnotations ?? {}).some((annotation) => annotation.needsConfirmation === true);
}

function offsetAt(text: string, lineStarts: number[], position: Position): number {
  const line = Math.min(position.line, lineStarts.length - 1);
  const start = lineStarts[line];
  const lineEnd = line + 1 < lineStarts.length ? lineStarts[line + 1] : text.length;
  return position.line >= lineStarts.length ? text.length : Math.min(start + position.character, lineEnd);
}

/** `text` with non-overlapping LSP `edits` applied (the proposal a review shows). */
export function applyTextEdits(text: string, edits: TextEdit[]): string {
  const lineStarts = [0];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === "\n" || (c === "\r" && text[i + 1] !== "\n")) lineStarts.push(i + 1);
  }
  const spans = edits
    .map((edit) => ({ from: offsetAt(text, lineStarts, edit.range.start), to: offsetAt(text, lineStarts, edit.range.end), edit }))
    .sort((a, b) => b.from - a.from);
  let result = text;
  for (const { from, to, edit } of spans) result = result.slice(0, from) + edit.newText + result.slice(to);
  return result;
}

/** The line of the proposal where hunk `index` (0-based, edits in document order) begins. */
export function proposalLine(edits: TextEdit[], index: number): number {
  let shift = 0;
  for (let i = 0; i < index; i++) {
    const lines = edits[i].newText.split(/\r\n|\r|\n/).length - 1;
    shift += lines - (edits[i].range.end.line - edits[i].range.start.line);
  }
  return edits[index].range.start.line + shift;
}

/** The hunk (0-based) whose new lines hold line `line` of the proposal, or undefined. */
export function hunkAtProposalLine(edits: TextEdit[], line: number): number | undefined {
  for (let i = 0; i < edits.length; i++) {
    const first = proposalLine(edits, i);
    const count = Math.max(edits[i].newText.split(/\r\n|\r|\n/).length - 1, 1);
    if (line >= first && line < first + count) return i;
  }
  return undefined;
}

/** The answer to `workspace/applyEdit` after a review: the 1-based hunks taken, in order. */
export function reviewAnswer(taken: Iterable<number>, problem?: string): { applied: boolean; hunks: number[]; failureReason?: string } {
  const hunks = [...new Set(taken)].sort((a, b) => a - b).map((index) => index + 1);
  if (problem !== undefined) return { applied: false, hunks: [], failureReason: problem };
  return hunks.length > 0 ? { applied: true, hunks } : { applied: false, hunks, failureReason: "rejected in review" };
}

/** One `copyedit/op` notification: an op of a running edit as it closes, or the edit's end. */
export interface OpNotice {
  uri: string;
  index: number;
  op?: { kind: "copy"; start: number; end: number } | { kind: "gen"; line: number; lines: number; text: string };
  done?: boolean;
  ops: number;
  tokensPerSecond: number;
}

/** The status bar's text for a running edit's last op. */
export function liveText(notice: OpNotice): string {
  return `${plural(notice.ops, "op")}, ${Math.round(notice.tokensPerSecond)} tok/s`;
}
