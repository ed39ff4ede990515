// Drives a real VS Code (code-server, in Debian's chromium through playwright-core) with the
// packaged copyedit extension, as a user would: the command palette edit, the review (reject,
// accept, accept one hunk), a `# copyedit:` code action, cancel, the status bar, a change applied
// from the clipboard (its review marks where each new line comes from) and one from a selection
// in another editor, a setting change that restarts the server.  tests/test_vscode_ui.py starts
// code-server and reads what this records (observations.json) and the files on disk; screenshots
// go to the folder it names.
//
//   node drive.mjs CONFIG.json     CONFIG: see tests/test_vscode_ui.py

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { chromium } from "playwright-core";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const seen = { steps: [], status: {} };
const WAIT = 300_000; // a bound on each wait: the model runs on this machine's CPU

let page; // the one browser page, for the screenshot of each step

function record(step, data = {}) {
  seen.steps.push({ step, ...data });
  writeFileSync(config.out, JSON.stringify(seen, null, 2));
  if (config.everyStep) void page.screenshot({ path: join(config.shots, `step-${seen.steps.length}.png`) });
}

async function shot(page, name) {
  await page.screenshot({ path: join(config.shots, `${name}.png`) });
}

/** Run a command from the palette by its title (the row whose label starts with it, not the
 * first the fuzzy filter ranks: "File: Save" ranks "Compare Active File with Saved" first). */
async function command(page, title) {
  await page.keyboard.press("F1"); // (no Escape first: in the editor it clears the selection)
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: 30_000 });
  await input.fill(`>${title}`);
  const rows = page.locator(".quick-input-widget .monaco-list-row");
  await rows.first().waitFor({ timeout: 30_000 });
  for (let i = 0; i < 20; i++) {
    const focused = await page.locator(".quick-input-widget .monaco-list-row.focused").getAttribute("aria-label");
    if (focused?.startsWith(title)) return page.keyboard.press("Enter");
    await page.keyboard.press("ArrowDown");
  }
  throw new Error(`no command "${title}" in the palette`);
}

/** Answer the quick input (an input box or a pick) with `text`, then Enter. */
async function answer(page, text) {
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: 30_000 });
  if (text) await input.fill(text);
  await page.keyboard.press("Enter");
}

async function openFile(page, name) {
  await command(page, "Go to File...");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ state: "visible", timeout: 30_000 });
  await input.fill(name);
  await page.locator(".quick-input-widget .monaco-list-row", { hasText: name }).first().waitFor({ timeout: 30_000 });
  await page.keyboard.press("Enter");
  await page.locator(".tab.active", { hasText: name }).waitFor({ timeout: 30_000 });
  await page.waitForTimeout(300); // the editor takes the focus
}

async function goToLine(page, line) {
  await command(page, "Go to Line/Column...");
  await answer(page, `:${line}`);
}

async function statusText(page) {
  const items = await page.locator(".statusbar-item").allInnerTexts();
  return items.find((text) => text.includes("copyedit")) ?? "";
}

/** Wait until the copyedit status bar item says `pattern`; return its text. */
async function statusMatching(page, pattern) {
  const deadline = Date.now() + WAIT;
  while (Date.now() < deadline) {
    const text = await statusText(page);
    if (pattern.test(text)) return text;
    await page.waitForTimeout(100);
  }
  throw new Error(`the status bar never matched ${pattern}: "${await statusText(page)}"`);
}

/** The review's diff editor, once open. */
async function reviewOpened(page) {
  await page.locator(".tab", { hasText: "review" }).first().waitFor({ timeout: WAIT });
  await page.locator(".monaco-diff-editor").first().waitFor({ timeout: 30_000 });
  await page.waitForTimeout(500);
}

async function reviewClosed(page) {
  await page.locator(".tab", { hasText: "review" }).first().waitFor({ state: "detached", timeout: 30_000 });
}

/** In a review of two hunks or more: accept the first (the pick of hunks), reject the rest, save. */
async function takeFirstHunk(page) {
  await command(page, "copyedit: Accept Hunk");
  await answer(page, ""); // the pick of hunks: the first
  await command(page, "copyedit: Reject Edit");
  await reviewClosed(page);
  await save(page);
}

async function edit(page, instruction) {
  await command(page, "copyedit: Edit with instruction...");
  await answer(page, instruction);
}

async function save(page) {
  await page.keyboard.press("Control+S");
  await page.waitForTimeout(500);
}

async function main() {
  const browser = await chromium.launch({ executablePath: config.chromium, args: ["--no-sandbox"] });
  // the clipboard: written by the page, read by "Apply Change from Clipboard" (127.0.0.1 is a secure context)
  const context = await browser.newContext({ viewport: { width: 1400, height: 850 }, permissions: ["clipboard-read", "clipboard-write"] });
  page = await context.newPage();
  try {
    await page.goto(`${config.url}/?folder=${encodeURIComponent(config.workspace)}`);
    await page.locator(".monaco-workbench").waitFor({ timeout: 120_000 });
    record("workbench");

    // 1. the palette edit, rejected in review: nothing changes (a Python file activates the extension)
    await openFile(page, "stats.py");
    seen.status.start = await statusMatching(page, /copyedit: ready/);
    await goToLine(page, 4);
    await edit(page, config.instruction);
    await reviewOpened(page);
    await shot(page, "review");
    record("review opened");
    await command(page, "copyedit: Reject Edit");
    await reviewClosed(page);
    seen.status.rejected = await statusMatching(page, /not applied|rejected/);
    await save(page);
    record("rejected");

    // 2. the same edit, accepted, saved
    await goToLine(page, 4);
    await edit(page, config.instruction);
    await reviewOpened(page);
    await command(page, "copyedit: Accept Edit");
    await reviewClosed(page);
    seen.status.accepted = await statusMatching(page, /copyedit: \d+ ops?/);
    await save(page);
    record("accepted");

    // 3. two hunks, one taken: the whole file selected, "Accept Hunk" picks the first, then reject the rest
    await openFile(page, "shop.py");
    await page.keyboard.press("Control+A");
    await edit(page, config.twoHunks);
    await reviewOpened(page);
    await takeFirstHunk(page);
    record("one hunk");

    // 4. a `# copyedit:` comment's code action, accepted
    await openFile(page, "scale.py");
    await goToLine(page, config.commentLine);
    await page.keyboard.press("Control+Shift+R"); // Refactor... (the palette would match "Refactor workspace...")
    const action = page.getByText("copyedit: rename x to value", { exact: true }).last(); // the menu's, not the line's
    await action.waitFor({ timeout: 60_000 });
    const box = await action.boundingBox(); // (a click by locator waits on the menu's animation)
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    await reviewOpened(page);
    await command(page, "copyedit: Accept Edit");
    await reviewClosed(page);
    await save(page);
    record("code action");

    // 5. the live view and cancel: a long edit shows its ops in the status bar, then is cancelled
    await openFile(page, "steps.py");
    await page.keyboard.press("Control+A");
    await edit(page, "Add a docstring to every function that explains its parameters in detail.");
    seen.status.live = await statusMatching(page, /ops?, \d+ tok\/s/);
    await shot(page, "live");
    await command(page, "copyedit: Cancel");
    seen.status.cancelled = await statusMatching(page, /cancelled/);
    record("cancelled");

    // 6. a change from the clipboard, applied: the review marks each new line with where it came
    //    from; the first hunk taken, the rest rejected
    await openFile(page, "variance.py");
    await page.evaluate((text) => navigator.clipboard.writeText(text), config.snippet);
    await command(page, "copyedit: Apply Change from Clipboard");
    await reviewOpened(page);
    await page.waitForTimeout(1000); // the decorations follow the diff
    seen.sources = await page.evaluate(() =>
      [...document.querySelectorAll(".monaco-diff-editor .editor.modified .view-lines span")]
        .map((span) => getComputedStyle(span, "::after").content)
        .filter((content) => content.includes("←")),
    );
    await shot(page, "apply");
    await takeFirstHunk(page);
    record("applied from the clipboard");

    // 7. a selection in another editor (a chat answer's code block), applied to a file picked from
    //    the open ones, accepted whole, saved
    await openFile(page, "mean.py");
    await openFile(page, "answer.md");
    await goToLine(page, config.answerChange.line);
    for (let i = 0; i < config.answerChange.lines; i++) await page.keyboard.press("Shift+ArrowDown");
    await command(page, "copyedit: Apply Selection to File...");
    await answer(page, "mean.py");
    await reviewOpened(page);
    await command(page, "copyedit: Accept Edit");
    await reviewClosed(page);
    await command(page, "File: Save All"); // mean.py, not active: no tab to bring back first
    await page.waitForTimeout(500);
    record("applied from a selection");

    // 8. a setting change restarts the server: copyedit.server.pythonPath, in the Settings editor
    //    (the server's command is set, so the same server starts again: a second start in its log;
    //    code-server lists this machine-overridable setting under its Remote tab)
    const starts = () => (readFileSync(config.serverLog, "utf8").match(/Language server initialized/g) ?? []).length;
    const before = starts();
    await command(page, "Preferences: Open Settings (UI)");
    await page.locator(".settings-editor").waitFor({ timeout: 30_000 });
    await page.waitForTimeout(500);
    await page.keyboard.type("copyedit.server.pythonPath");
    await page.locator(".settings-editor .settings-tabs-widget .action-label", { hasText: "Remote" }).first().click(); // a machine setting
    const item = page.locator(".settings-editor .setting-item-contents", { hasText: "Python Path" }).first();
    const field = item.locator("input").first();
    await field.waitFor({ timeout: 30_000 });
    await field.fill(config.restartPython);
    await page.keyboard.press("Tab");
    const deadline = Date.now() + 120_000;
    while (starts() === before && Date.now() < deadline) await page.waitForTimeout(200);
    seen.status.restarted = await statusMatching(page, /copyedit: ready/);
    await shot(page, "restarted");
    record("restarted", { starts: starts() - before });
    seen.ok = true;
  } catch (error) {
    seen.ok = false;
    seen.error = String(error && error.stack ? error.stack : error);
    await shot(page, "failure").catch(() => undefined);
  } finally {
    writeFileSync(config.out, JSON.stringify(seen, null, 2));
    await browser.close();
  }
}

await main();
