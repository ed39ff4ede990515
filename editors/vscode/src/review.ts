// Review before apply, and the live view of a running edit: the VS Code side of the server's
// `review` setting and of its `copyedit/op` notifications.  The pure parts are in logic.ts.

import * as vscode from "vscode";
import * as logic from "./logic";

export const SCHEME = "copyedit-review";
export const ACCEPT = "copyedit.review.accept";
export const REJECT = "copyedit.review.reject";
export const ACCEPT_HUNK = "copyedit.review.acceptHunk";
const REVIEWING = "copyedit.reviewing";

type Answer = ReturnType<typeof logic.reviewAnswer>;

interface Proposal {
  document: vscode.TextDocument;
  version: number;
  edits: logic.TextEdit[];
  sources?: logic.HunkSources[]; // an apply's: where each hunk's new lines come from
  uri: vscode.Uri; // the proposed text, shown against the document in a diff editor
  text: string;
  taken: Set<number>; // 0-based hunks accepted so far
  resolve: (answer: Answer) => void;
}

/** The proposals under review, one diff editor each: accept all, reject the rest, or accept hunk by hunk. */
export class Review implements vscode.TextDocumentContentProvider {
  private readonly proposals = new Map<string, Proposal>(); // by proposal URI
  private readonly provenance = new Map<string, logic.HunkSources[]>(); // copyedit/provenance, by document URI
  private count = 0;

  constructor(private readonly log: (line: string) => void) {}

  register(): vscode.Disposable {
    return vscode.Disposable.from(
      vscode.workspace.registerTextDocumentContentProvider(SCHEME, this),
      vscode.commands.registerCommand(ACCEPT, (uri?: vscode.Uri) => this.decide(uri, "all")),
      vscode.commands.registerCommand(REJECT, (uri?: vscode.Uri) => this.decide(uri, "rest")),
      vscode.commands.registerCommand(ACCEPT_HUNK, (uri?: vscode.Uri, hunk?: number) => this.acceptHunk(uri, hunk)),
      vscode.window.tabGroups.onDidChangeTabs((event) => this.closed(event.closed)),
    );
  }

  /** `copyedit/provenance`: where the lines of the next review of its document come from. */
  provenanceSent(notice: logic.ProvenanceNotice): void {
    this.provenance.set(notice.uri, notice.hunks);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.proposals.get(uri.toString())?.text ?? "";
  }

  /** Show the edit of one document as a diff against its text; the answer once the user decides. */
  async propose(label: string, change: { textDocument: { uri: string; version?: number | null }; edits: logic.TextEdit[] }): Promise<Answer> {
    const document = await vscode.workspace.openTextDocument(vscode.Uri.parse(change.textDocument.uri));
    if (typeof change.textDocument.version === "number" && change.textDocument.version !== document.version) {
      return logic.reviewAnswer([], "the document changed before the review");
    }
    const sources = this.provenance.get(change.textDocument.uri);
    this.provenance.delete(change.textDocument.uri);
    const ordered = change.edits.map((edit, i) => ({ edit, sources: sources?.[i] }));
    ordered.sort((a, b) => a.edit.range.start.line - b.edit.range.start.line || a.edit.range.start.character - b.edit.range.start.character);
    const edits = ordered.map((hunk) => hunk.edit);
    const name = document.uri.path.split("/").pop() ?? "document";
    const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${name}`, query: `review=${++this.count}` });
    const answer = new Promise<Answer>((resolve) => {
      this.proposals.set(uri.toString(), {
        document,
        version: document.version,
        edits,
        sources: sources && ordered.map((hunk) => hunk.sources ?? { removes: 0, lines: [] }),
        uri,
        text: logic.applyTextEdits(document.getText(), edits),
        taken: new Set(),
        resolve,
      });
    });
    await this.setContext();
    const hunks = edits.length === 1 ? "1 hunk" : `${edits.length} hunks`;
    await vscode.commands.executeCommand("vscode.diff", document.uri, uri, `copyedit: ${label} (${hunks}, review)`, {
      preview: false,
    });
    vscode.window.setStatusBarMessage(`copyedit: review ${hunks}: Accept Edit, Accept Hunk or Reject Edit (the diff's title bar)`, answer);
    const proposal = this.proposals.get(uri.toString());
    if (proposal) this.showSources(proposal);
    return answer;
  }

  /** Beside each new line of an apply's proposal, where it came from; a removal says so. */
  private showSources(proposal: Proposal): void {
    if (!proposal.sources) return;
    const marks: vscode.DecorationOptions[] = [];
    const end = Number.MAX_SAFE_INTEGER; // the end of the line, once VS Code clamps it
    proposal.sources.forEach((hunk, index) => {
      const first = logic.proposalLine(proposal.edits, index);
      const words = hunk.lines.length > 0 ? hunk.lines.map(logic.sourceWords) : [`a deletion: ${hunk.removes} line${hunk.removes === 1 ? "" : "s"} removed here`];
      words.forEach((text, j) => {
        const line = hunk.lines.length > 0 ? first + j : Math.max(first - 1, 0);
        marks.push({ range: new vscode.Range(line, end, line, end), renderOptions: { after: { contentText: `← ${text}` } } });
      });
    });
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.uri.toString() === proposal.uri.toString()) editor.setDecorations(source, marks);
    }
  }

  private find(uri?: vscode.Uri): Proposal | undefined {
    if (uri) return this.proposals.get(uri.toString());
    const active = vscode.window.activeTextEditor?.document.uri.toString();
    return (active && this.proposals.get(active)) || [...this.proposals.values()].pop();
  }

  /** Accept one hunk: the argument's, else one picked from those not taken yet (the hunk under the
   * cursor in the proposal first). */
  private async acceptHunk(uri?: vscode.Uri, hunk?: number): Promise<void> {
    const proposal = this.find(uri);
    if (!proposal) return;
    let index = typeof hunk === "number" ? hunk - 1 : undefined;
    if (index === undefined) {
      const editor = vscode.window.activeTextEditor;
      const here = editor?.document.uri.toString() === proposal.uri.toString() ? logic.hunkAtProposalLine(proposal.edits, editor.selection.active.line) : undefined;
      const items = proposal.edits
        .map((edit, i) => ({ label: `hunk ${i + 1} of ${proposal.edits.length}`, description: hunkWords(edit, proposal.sources?.[i]), index: i }))
        .filter((item) => !proposal.taken.has(item.index));
      const pick = vscode.window.createQuickPick<(typeof items)[number]>();
      pick.title = "copyedit: accept which hunk?";
      pick.items = items;
      pick.activeItems = items.filter((item) => item.index === here);
      index = await new Promise<number | undefined>((resolve) => {
        pick.onDidAccept(() => resolve(pick.selectedItems[0]?.index ?? pick.activeItems[0]?.index));
        pick.onDidHide(() => resolve(undefined));
        pick.show();
      });
      pick.dispose();
    }
    if (index === undefined || index < 0 || index >= proposal.edits.length) return;
    proposal.taken.add(index);
    this.log(`review: hunk ${index + 1} of ${proposal.edits.length} accepted`);
    if (proposal.taken.size === proposal.edits.length) await this.finish(proposal);
  }

  /** Accept every hunk ("all"), or only those accepted so far ("rest": the others rejected). */
  private async decide(uri: vscode.Uri | undefined, what: "all" | "rest"): Promise<void> {
    const proposal = this.find(uri);
    if (!proposal) return;
    if (what === "all") proposal.edits.forEach((_, i) => proposal.taken.add(i));
    await this.finish(proposal);
  }

  private async finish(proposal: Proposal, problem?: string): Promise<void> {
    if (!this.proposals.delete(proposal.uri.toString())) return; // decided already
    await this.setContext();
    let answer = logic.reviewAnswer(proposal.taken, problem);
    if (answer.applied && proposal.document.version !== proposal.version) {
      answer = logic.reviewAnswer([], "the document changed during the review");
    }
    if (answer.applied) {
      const edit = new vscode.WorkspaceEdit();
      for (const hunk of answer.hunks) {
        const { range, newText } = proposal.edits[hunk - 1];
        edit.replace(
          proposal.document.uri,
          new vscode.Range(range.start.line, range.start.character, range.end.line, range.end.character),
          newText,
        );
      }
      if (!(await vscode.workspace.applyEdit(edit))) answer = logic.reviewAnswer([], "VS Code did not apply the edit");
    }
    this.log(`review: applied: ${answer.applied}, hunks taken: [${answer.hunks.join(", ")}]${answer.failureReason ? ` (${answer.failureReason})` : ""}`);
    const tabs = vscode.window.tabGroups.all.flatMap((group) => group.tabs);
    const tab = tabs.find((t) => t.input instanceof vscode.TabInputTextDiff && t.input.modified.toString() === proposal.uri.toString());
    if (tab) await vscode.window.tabGroups.close(tab);
    proposal.resolve(answer);
  }

  /** A proposal's diff closed by the user: the hunks not accepted are rejected. */
  private closed(tabs: readonly vscode.Tab[]): void {
    for (const tab of tabs) {
      if (tab.input instanceof vscode.TabInputTextDiff) {
        const proposal = this.proposals.get(tab.input.modified.toString());
        if (proposal) void this.finish(proposal);
      }
    }
  }

  private setContext(): Thenable<unknown> {
    return vscode.commands.executeCommand("setContext", REVIEWING, this.proposals.size > 0);
  }
}

function firstLine(text: string): string {
  return text.trim().split(/\r?\n/)[0] || "(lines removed)";
}

/** A hunk in the pick of hunks: its first new line, and for an apply where its lines come from. */
function hunkWords(edit: logic.TextEdit, sources?: logic.HunkSources): string {
  if (!sources) return firstLine(edit.newText);
  const kinds = [...new Set(sources.lines.map((line) => line.source))];
  const from = kinds.map((kind) => ({ change: "the change", file: "the file", gen: "the model" })[kind]).join(", ");
  const removed = `a deletion of ${sources.removes} line${sources.removes === 1 ? "" : "s"}`;
  return sources.lines.length === 0 ? removed : `${firstLine(edit.newText)} (from ${from})`;
}

const source = vscode.window.createTextEditorDecorationType({
  after: { color: new vscode.ThemeColor("editorCodeLens.foreground"), margin: "0 0 0 2em" },
});

const copied = vscode.window.createTextEditorDecorationType({ opacity: "0.5" });
const generated = vscode.window.createTextEditorDecorationType({
  after: { color: new vscode.ThemeColor("gitDecoration.addedResourceForeground"), margin: "0 0 0 2em" },
});

/** The live view: copied lines dimmed, the lines a gen writes marked, as each op closes. */
export class LiveView {
  private readonly copies = new Map<string, vscode.Range[]>();
  private readonly gens = new Map<string, vscode.DecorationOptions[]>();

  constructor(private readonly status: logic.Status) {}

  show(notice: logic.OpNotice): void {
    const key = notice.uri;
    if (notice.index === 0 || notice.done) {
      this.copies.set(key, []);
      this.gens.set(key, []);
    }
    if (notice.op?.kind === "copy") {
      this.copies.get(key)?.push(new vscode.Range(notice.op.start, 0, Math.max(notice.op.start, notice.op.end - 1), Number.MAX_SAFE_INTEGER));
    } else if (notice.op?.kind === "gen") {
      // marked at the end of the line before the new ones (of the first line, for new ones above it)
      const line = Math.max(notice.op.line - 1, 0);
      const where = notice.op.line > 0 ? "after" : "above";
      const text = `+ ${notice.op.lines} line${notice.op.lines === 1 ? "" : "s"} written ${where} this line`;
      const end = Number.MAX_SAFE_INTEGER; // the end of the line, once VS Code clamps it
      this.gens.get(key)?.push({ range: new vscode.Range(line, end, line, end), renderOptions: { after: { contentText: text } } });
    }
    this.status.progress(notice.done ? undefined : logic.liveText(notice));
    for (const editor of vscode.window.visibleTextEditors) {
      if (editor.document.uri.toString() !== key) continue;
      editor.setDecorations(copied, this.copies.get(key) ?? []);
      editor.setDecorations(generated, this.gens.get(key) ?? []);
    }
  }
}
