/**
 * Every place that puts text on a screen goes through the one sanitiser of its medium
 * (src/common/untrusted.ts, and src/webview/reveal.ts built on it). The source is read with the
 * TypeScript parser: each call that writes to the terminal (the CLI), shows a notification, dialog or
 * progress title (VS Code), or sets an element's text (the panel) is found, and each value it shows is
 * followed down to its parts. A part is fine when it is text CodeAct wrote (a literal), a number, or the
 * result of a sanitiser; styling wrappers (`dim`, `red`) are looked through. Any other part must be in
 * {@link KNOWN} with the reason it is not text from outside, so a new unsanitised
 * `process.stdout.write(name)`, `showWarningMessage(message)` or `textContent = label` fails here.
 */
import * as assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '../..');

/** The sanitisers: what they return is safe to show in their medium. */
const SANITISERS = new Set(['forTerminal', 'forTerminalOutput', 'forDisplay', 'revealed', 'revealedPlain', 'one', 'shown', 'q.shown', 'warn']);
/** Wrappers that add CodeAct's own styling around what they are given: safe when what they are given is. */
const WRAPPERS = new Set(['dim', 'red', 'green', 'plain', 'indent']);
/** Calls that return a number or CodeAct's own wording of one. */
const NUMBERS = new Set(['formatCount', 'formatElapsed', 'Math.round', 'formatSize', 'relativeTime', 'formatTokens', 'formatCost']);
/** A stream's sanitiser (TerminalStream): `clean.stdout.write(x)`, `text.write(x)`, `….end()`. */
const STREAMS = /^(clean\.(stdout|stderr)|text)\.(write|end)$/;

interface Medium {
  dir: string;
  /** The calls that show their arguments: the callee's text as written (`process.stdout.write`). */
  sinks: RegExp;
  /** Which arguments are shown (index), or all. */
  args?: (callee: string) => number[] | 'all';
  /** Property assignments that show text (`el.textContent = …`). */
  assigns?: RegExp;
  /** Attribute objects whose property shows text (`h('span', { text: … })`). */
  textProps?: RegExp;
}

const MEDIA: Medium[] = [
  {
    dir: 'src/cli',
    // warn() is not listed: it shows its message through forTerminal itself.
    sinks: /^(process\.(stdout|stderr)\.write|out|line|output\.write|err\.write|streams\.output\.write|ask|rl\.question|q\.say|q\.line)$/,
    args: (callee) => (/question$|^ask$|^q\.line$/.test(callee) ? [0] : 'all'),
  },
  {
    dir: 'src/vscode',
    sinks: /(^|\.)(show(Warning|Error|Information)Message|withProgress|showQuickPick|showInputBox)$/,
    // The message (a modal's detail is checked where it is built: approvalDialog, installCommand,
    // elicitQuickInput); a quick pick's or input box's title, prompt and placeholder.
    args: (callee) => (/showQuickPick$/.test(callee) ? [1] : [0]),
  },
  {
    dir: 'src/webview',
    // The announcers, ./dom's setText and the composer's status line set an element's text too.
    sinks: /^(announce|ctx\.announce|this\.ctx\.announce|this\.announce|setText|this\.setStatus|this\.composer\.setStatus)$/,
    args: (callee) => (callee === 'setText' ? [1] : [0]),
    assigns: /^(textContent)$/,
    textProps: /^(text)$/,
  },
];

/**
 * Parts that are not text from outside, by file and as written, with the reason. An entry that no longer
 * matches anything fails too (the list stays true).
 */
const KNOWN: Record<string, string> = {
  'src/vscode/panelOutputs.apis.ts: message': "a sink wrapper's parameter: its callers are checked here",
  'src/webview/changesList.ts: label': "an action's label: CodeAct's own words (Diff, Open, Keep, Revert, Keep All, Revert All)",
  'src/webview/changesList.ts: this.labelText()': "CodeAct's wording with counts (formatChangeCount, and in review mode how many are still staged)",
  'src/webview/changesList.ts: KIND_LABEL[kind]': "CodeAct's own letter for a kind checked against KIND_LABEL",
  'src/webview/changesList.ts: c.kind': "one of CodeAct's kinds: a kind not in KIND_LABEL is shown as 'changed'",
  "src/webview/changesList.ts: (n - MAX_ROWS).toLocaleString('en-US')": 'a number',
  'src/webview/transcriptView.ts: asker.label': "who asked, CodeAct's own heading from ASKERS (You, Run with Tools, MCP client), picked by the turn's source",
  'src/webview/itemCards.ts: jobAsks(item.job)': "CodeAct's wording with a job number (the reducer keeps `job` only when it is a number)",
  'src/webview/elicitationCard.ts: jobAsks(view.job)': "CodeAct's wording with a job number (the reducer keeps `job` only when it is a number)",
  'src/vscode/approvals.apis.ts: options.title': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/approvals.apis.ts: options.placeHolder': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/elicitQuickInput.ts: i': 'the index of the field (a number)',
  "src/vscode/elicitQuickInput.ts: [problem ? `${one(f.title)} ${forDisplay(problem)}.` : '', forDisplay(f.description, { line: true })].filter(Boolean).join(' — ') || undefined":
    'each part goes through one() or forDisplay',
  'src/vscode/elicitQuickInput.ts: elicitFieldHint(f)': "CodeAct's wording of the field's kind and numeric range",
  'src/vscode/secrets.ts: whoStarting(picked)': "CodeAct's own provider table",
  "src/vscode/secrets.ts: providerInfo(picked).keyEnv.join(' or ') || 'no key'": "CodeAct's own provider table",
  "src/cli/mcpServe.ts: [ serveSynopsis('Usage: '), 'An MCP server on stdio: execute_tool_code and execute_code run Python in one live, sandboxed session per', \"MCP session, with the folder's managed tools (approvals are asked through the client's elicitation);\", 'list_variables and restart_session manage it. For example, in Claude Code:', ' claude mcp add codeact -- codeact mcp serve --workspace /path/to/project', '--http serves Streamable HTTP on 127.0.0.1 instead (--port N; default: a free port), with a bearer token', 'made for this start: both are printed on stderr. Ctrl+C ends the server and its sessions.', \"--keep-session NAME: every MCP session runs in the one Python session NAME, kept in the folder's session host\", 'when the server ends: the next server with that name finds its variables (codeact sessions end mcp-NAME ends it).', ...settingFlagsHelp('run'), ].join('\\n')":
    "CodeAct's own help text (its synopsis from the setting flags' table)",
  'src/cli/acp.ts: [ wrapUsage(`Usage: ${ACP_SYNOPSIS}`, [settingFlagsUsage(\'chat\'), [\'[--storage DIR]\', \'[--verbose]\']], \'Usage: codeact acp \'.length), \'An ACP agent on stdio, for an editor that hosts agents over the Agent Client Protocol. Each session works in\', "its folder (the cwd the editor gives), with that folder\'s settings, managed tools and trust: a folder that is", "not trusted gets no session (codeact trust DIR). Approvals, installs and code review are the editor\'s permission", \'requests. Conversations are saved as codeact chat saves them (codeact chat --continue ID). For example, in Zed:\', \' "agent_servers": { "CodeAct": { "type": "custom", "command": "codeact", "args": ["acp", "--provider", "anthropic", "--model", "claude-sonnet-4-6"] } }\', ...settingFlagsHelp(\'chat\'), ].join(\'\\n\')':
    "CodeAct's own help text (its synopsis from the setting flags' table)",
  'src/cli/mcpServe.ts: http.url': "the MCP server's own address: http://127.0.0.1, the port the kernel gave it, /mcp",
  "src/cli/mcpServe.ts: values['keep-session']": 'a --keep-session name, checked against SESSION_NAME (letters, digits, ".", "_", "-") before it is used',
  'src/cli/mcpServe.ts: http.token': "the MCP server's own bearer token: random hex made at start",
  'src/cli/sessions.ts: JSON.stringify(rows)': '--json: machine output, the events as they are (README: scripts read it)',
  'src/cli/sessions.ts: ago(now - r.startedAt)': "CodeAct's own text, ids or numbers",
  'src/cli/sessions.ts: ago(now - r.lastRunAt)': "CodeAct's own text, ids or numbers",
  'src/cli/sessions.ts: approxBytes(r.memoryBytes)': "CodeAct's own text, ids or numbers",
  'src/cli/sessions.ts: r.jobs': "CodeAct's own text, ids or numbers",
  'src/cli/earlierRun.ts: watched.item?.status': "CodeAct's own text, ids or numbers",
  'src/cli/earlierRun.ts: watched.dropped': "CodeAct's own text, ids or numbers",
  'src/cli/chat.ts: JSON.stringify(list)': '--json: machine output, the events as they are (README: scripts read it)',
  'src/cli/chat.ts: JSON.stringify(points)': '--json: machine output, the events as they are (README: scripts read it)',
  "src/cli/chat.ts: JSON.stringify({ type: 'error', message, code: 'rewind' })": '--json: machine output, the events as they are (README: scripts read it)',
  "src/cli/chat.ts: JSON.stringify({ type: 'codeact.rewound', execution: code ? point : at, ...(outcome ?? {}), ...(cut ? { conversation: cut } : {}) })":
    '--json: machine output, the events as they are (README: scripts read it)',
  'src/cli/chat.ts: String(i + 1).padStart(3)': 'a number',
  'src/cli/chat.ts: Number(values.rewind)': "a number (the person's own --rewind argument, checked to be an execution number)",
  'src/cli/chat.ts: items.findIndex((it) => it.id === first) + 1 || at': 'a number (an execution number)',
  'src/cli/chat.ts: formatChangeCount(it.changes.changes.length)': "CodeAct's wording with a count",
  "src/cli/chat.ts: said.filter(Boolean).join(' ')":
    "CodeAct's wording; the code's file names and reasons in it go through forTerminal (core/agent/rewindNote's `show`); the turn's number and the branch's id are ours",
  "src/webview/rewindControls.ts: m.lines.join(' ')": "the host's lines (vscode/panelOutputs): CodeAct's wording, the code's names in them through forDisplay",
  'src/cli/chat.ts: c.id': "CodeAct's own text, ids or numbers",
  "src/cli/chat.ts: new Date(c.updatedAt).toISOString().slice(0, 16).replace('T', ' ')": "CodeAct's own text, ids or numbers",
  'src/cli/chat.ts: conversation!.id': "CodeAct's own text, ids or numbers",
  'src/cli/chat.ts: JSON.stringify(e)': '--json: machine output, the events as they are (README: scripts read it)',
  "src/cli/chat.ts: JSON.stringify({ type: 'error', message: e.message, code: e.code })":
    '--json: machine output, the events as they are (README: scripts read it)',
  'src/cli/chat.ts: JSON.stringify(summary)': '--json: machine output, the events as they are (README: scripts read it)',
  'src/cli/chat.ts: convo.id': "CodeAct's own text, ids or numbers",
  'src/cli/chat.ts: result.status': "CodeAct's own text, ids or numbers",
  'src/cli/chat.ts: usageSummaryText(summary)': "CodeAct's wording of token counts and prices",
  "src/cli/approvalPrompt.ts: lines.map((l, i) => `${String(i + 1).padStart(width)} | ${q.shown(l)}`).join('\\n')":
    'each line of the code goes through q.shown (forTerminal)',
  'src/cli/elicitPrompt.ts: s': "a sink wrapper's parameter (out): its callers are checked here",
  'src/cli/terminalQuestions.ts: text': "a sink wrapper's parameter (Asking.say): its callers (q.say) are checked here",
  'src/cli/terminalQuestions.ts: prompt': "a sink wrapper's parameter (Asking.line): its callers (q.line) are checked here",
  "src/cli/elicitPrompt.ts: options.map((o, i) => ` ${i + 1}) ${one(o.label)}`).join('\\n')": 'each label goes through one() (forTerminal, one line)',
  'src/cli/elicitPrompt.ts: elicitFieldHint(f)': "CodeAct's wording of the field's kind and numeric range",
  'src/cli/mcpAuth.ts: JSON.stringify(servers.map(({ serverUrl, label, hasTokens }) => ({ serverUrl, label, signedIn: hasTokens })))':
    '--json: machine output, the events as they are (README: scripts read it)',
  'src/cli/print.ts: safe': "a sink wrapper's parameter: its callers are checked here",
  'src/cli/print.ts: displayModelText(bundle, DISPLAY_CHARS)': "resolved by name only: this `text` is not the one out() writes (out's callers are checked)",
  'src/cli/print.ts: JSON.stringify(args.get(e.call_id) ?? {})': 'resolved by name only: the arguments are shown through shown() (forTerminal)',
  'src/cli/print.ts: new TerminalStream({ plain: true })': "resolved by name only: the model's text stream is a TerminalStream",
  'src/cli/print.ts: compactedLine(e)': "CodeAct's wording of token counts",
  "src/cli/chat.ts: wrapUsage( `Usage: ${CHAT_SYNOPSIS}`, [ ['[--workspace DIR|FILE.code-workspace [--folder NAME|PATH]]', '[--continue SESSION]', '[--storage DIR]'], settingFlagsUsage('chat', ['provider', 'model']), ['[--outputs DIR]', '[--staged keep|revert]', '[--trust-workspace]', '[--json]', '[--verbose]'], ], 9, )":
    "CodeAct's usage text, its setting flags from core/config/keys.ts (SETTING_FLAGS)",
  "src/cli/chat.ts: [...settingFlagsHelp('chat'), OUTPUTS_HELP, STAGED_HELP].join('\\n')": "CodeAct's help lines, from core/config/keys.ts (SETTING_FLAGS)",
  "src/cli/main.ts: runSynopsis(' ')": "CodeAct's usage text, its setting flags from core/config/keys.ts (SETTING_FLAGS)",
  "src/cli/run.ts: [runSynopsis('Usage: '), ...settingFlagsHelp('run'), OUTPUTS_HELP, STAGED_HELP].join('\\n')":
    "CodeAct's usage text and help lines, from core/config/keys.ts (SETTING_FLAGS)",
  'src/cli/stagedReview.ts: text':
    "a sink wrapper's parameter (err): its callers pass CodeAct's lines, the code's paths and reasons through shown() (forTerminal)",
  'src/cli/stagedReview.ts: c': 'resolved by name only: a change is shown through line(), describeChange with shown() (forTerminal) on its paths',
  'src/cli/stagedReview.ts: line(c)': 'describeChange with shown() (forTerminal) on the paths',
  'src/cli/stagedReview.ts: q': 'resolved by name only: the question (Asking), not text',
  "src/cli/stagedReview.ts: JSON.stringify({ type: 'codeact.staged', ...out })": '--json: machine output, the paths as they are (README: scripts read it)',
  "src/cli/review.ts: JSON.stringify({ type: 'codeact.staged', kept: [], reverted: [], failed: [], left: [] })":
    "--json: machine output, CodeAct's own empty record",
  'src/vscode/stagedReview.ts: files(n)': 'a count of files in words',
  'src/vscode/stagedReview.ts: files(chosen.length)': 'a count of files in words',
  'src/vscode/stagedReview.ts: files(done.reverted.length)': 'a count of files in words',
  'src/vscode/stagedReview.ts: files(done.failed.length)': 'a count of files in words',
  'src/vscode/stagedReview.ts: shownPath(chosen[0])': "the code's path through forDisplay (shownPath)",
  'src/vscode/stagedReview.ts: describeChange(c, (p) => forDisplay(p, { line: true }))': 'describeChange with forDisplay on the paths',
  "src/vscode/stagedReview.ts: done.failed .slice(0, 3) .map((f) => `${forDisplay(f.path, { line: true })} (${forDisplay(f.why, { line: true })})`) .join('; ')":
    'each path and reason through forDisplay',
  'src/cli/run.ts: JSON.stringify(e)': '--json: machine output, the events as they are (README: scripts read it)',
  'src/cli/tools.ts: JSON.stringify({ workspace: ws.dir, trusted: ws.trust.trusted, tools: sorted.map((t) => ({ name: t.name, description: t.description, source: t.source, approval: t.approval, expose: t.expose, inputSchema: t.inputSchema, outputSchema: t.outputSchema ?? null, })), errors, })':
    '--json: machine output, the events as they are (README: scripts read it)',
  'src/cli/tools.ts: t.source': "one of CodeAct's source kinds ('command', 'http', 'mcp', …)",
  'src/cli/tools.ts: t.approval': "one of 'auto', 'ask', 'always': checked when the tool is declared",
  'src/cli/trust.ts: JSON.stringify(entries)': '--json: machine output, the events as they are (README: scripts read it)',
  "src/cli/trust.ts: e.trustedAt.slice(0, 16).replace('T', ' ')": 'an ISO time CodeAct wrote',
  "src/cli/trust.ts: obeyed.join(', ')": "CodeAct's own setting keys (restrictedKeys())",
  'src/vscode/approvals.apis.ts: message': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/approvals.ts: dialog.message': 'built through forDisplay (approvalDialog.ts, installCommand.ts)',
  "src/vscode/approvals.ts: dialog.message.replace(/\\?$/, '')": 'built through forDisplay (approvalDialog.ts)',
  'src/vscode/dialogs.ts: apis.relativePath(target)': 'the path the person picked in the save dialog',
  'src/vscode/commands.ts: providerInfo(provider).label': "CodeAct's own provider table",
  'src/vscode/commands.ts: providerInfo(p.id).label': "CodeAct's own provider table",
  'src/vscode/commands.ts: providerInfo(p.id).modelIdFrom': "CodeAct's own provider table",
  'src/vscode/controller.apis.ts: message': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/mcpAuth.apis.ts: m': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/panelHost.apis.ts: message': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/panelHost.apis.ts: title': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/mcpAuth.apis.ts: title': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/runtimeCache.apis.ts: message': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/trust.ts: untrustedMessage(what)': "CodeAct's own wording",
  'src/webview/execCard.ts: this.output.text()':
    '"Copy output" puts the output on the clipboard as the code wrote it (as every Copy in the panel does), not on the screen; the pane shows it with markers (outputNodes.ts)',
  // The panel: each place read one by one; what shows text from outside goes through ./reveal.
  'src/webview/app.ts: text': "a sink wrapper's parameter (the panel's announce): its callers (ctx.announce) are checked here",
  'src/webview/app.ts: this.model.turns.find((x) => x.id === c.id)':
    "resolved by name only: announce's parameter `t` is not this const (its callers are checked)",
  "src/webview/app.ts: action.closest('.md-code')?.querySelector('pre')?.textContent": 'posted to the host (the clipboard, the editor), not shown',
  'src/webview/app.ts: statusText(this.model, Boolean(this.host?.busy))':
    "CodeAct's wording; each outside part (a tool's or function's name) goes through revealedPlain (panelStatus.ts)",
  'src/webview/compactionCard.ts: METHOD_TEXT[item.method]': "CodeAct's own table of compaction methods",
  'src/webview/composer.ts: status': "a sink wrapper's parameter (setStatus): its callers are checked here",
  'src/webview/composer.ts: String(tools.length)': 'a count',
  'src/webview/composer.ts: String(broken.length)': 'a count',
  'src/webview/displayView.ts: b.more': "CodeAct's wording of how much was left out (bounded())",
  'src/webview/dom.ts: String(v)': "h()'s `text` attribute: each `text:` property is checked here where it is written",
  'src/webview/dom.ts: text': "a sink wrapper's parameter (setText): its callers are checked here",
  'src/webview/dom.ts: c': "h()'s children: each is checked here where h() is called",
  'src/webview/installApproval.ts: i.tool': "'pip' or 'uv' (the install request's tool)",
  'src/webview/reveal.ts: text.slice(at, m.index)': 'the sanitiser itself: the text between two marks, which has none',
  'src/webview/reveal.ts: revealInvisible(text.slice(at))': 'the sanitiser itself: past the styled marks, the rest with its markers as text',
  'src/webview/errorActions.ts: turn.prompt': "posted to the host (Retry sends the person's prompt as it was), not shown",
  'src/vscode/controller.ts: m': 'the notification of a job of a conversation that is not open: its parts through forDisplay in reattach.ts (elsewhere)',
  'src/webview/toolCallRow.ts: t.action': "CodeAct's own verb of a tool lookup (discoveryText: 'searched tools', 'looked up', …)",
  'src/webview/execCard.ts: this.item.code': 'posted to the host (Copy), not shown',
  'src/webview/execCard.ts: STATUS_TEXT[x.status]': "CodeAct's own table of statuses",
  'src/webview/jobCard.ts: item.job': "a job's number (checked an integer by the reducer)",
  'src/webview/jobCard.ts: j.job': "a job's number (checked an integer by the reducer)",
  "src/webview/jobCard.ts: item.jobs.join(', ')": 'job numbers (the reducer keeps integers only)',
  'src/webview/jobCard.ts: STATUS_TEXT[j.status]': "CodeAct's own table of statuses",
  "src/webview/jobCard.ts: formatElapsed(Math.max(0, Date.now() - row.started)).replace(/\\.\\d+ s$/, ' s')": 'a duration CodeAct formats',
  'src/webview/execCard.ts: String(i)': 'a line number of the gutter',
  'src/webview/toolCallRow.ts: toolsSectionLabel(calls)': "CodeAct's wording of counts (discoveryCall.ts)",
  'src/webview/execCard.ts: e.line': 'a line number',
  'src/webview/execCard.ts: check?.note': "CodeAct's wording of an image's size against the cap (common/imageHeader)",
  'src/webview/execCard.ts: n': "the image's number in the execution",
  'src/webview/execCard.ts: rasterFormatList()': "CodeAct's own list of the raster formats whose size it reads (common/mimeTypes)",
  'src/webview/fileChips.ts: label': "a sink wrapper's parameter (actionButton): its callers pass CodeAct's own labels",
  "src/webview/itemCards.ts: /language-([\\w-]+)/.exec(pre.querySelector('code')?.className ?? '')?.[1]":
    'matched by [\\w-]+: ASCII letters, digits, _ and - only',
  "src/webview/itemCards.ts: parts.join(' and ')": "CodeAct's wording of counts",
  'src/webview/itemCards.ts: what': "'code' or 'arguments'",
  'src/webview/jsonTree.ts: String(value)': 'a number or a boolean (a string goes through revealed)',
  'src/webview/jsonTree.ts: summaryText(value as object)': "CodeAct's wording of a count (Array(3), {2 keys})",
  'src/webview/jsonTree.ts: count(remaining)': 'a count',
  'src/webview/notebookTarget.ts: label': "a sink wrapper's parameter (button): its callers pass CodeAct's own labels",
  'src/webview/outputNodes.ts: m.marker': 'the marker itself (<U+202E>): ASCII made by common/invisibleChars',
  'src/webview/outputNodes.ts: b.text.slice(pos, end)': "the output pane's sanitiser itself: the text up to the next mark (findInvisibleIn), which has none",
  'src/webview/reveal.ts: m.marker': 'the marker itself (<U+202E>): ASCII made by common/invisibleChars',
  'src/webview/variablesView.ts: String(msg.total > n ? `${n}+` : n)': 'a count',
  'src/webview/variablesView.ts: c.count': 'a count',
  'src/webview/variablesView.ts: c.max': 'a count (a setting, checked by the resolver)',
  'src/webview/variablesView.ts: approxBytes(c.bytes)': 'a size',
  'src/webview/variablesView.ts: approxBytes(c.budgetBytes)': 'a size',
  'src/webview/variablesView.ts: msg.note': "the host's own sentences (src/vscode/sessionVariables.ts)",
  'src/webview/viewKit.ts: label':
    "a sink wrapper's parameter (button, textButton): callers pass CodeAct's own labels (literals, errorActions' labels, the host's notice actions)",
  'src/webview/viewKit.ts: o.badge': "CodeAct's own words ('Approval needed', 'Input needed')",
};

function files(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const p = path.join(dir, name);
    if (statSync(p).isDirectory()) out.push(...files(p));
    else if (p.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** A file's `const` declarations with an initializer, by name (a name declared twice has both). */
function constants(sf: ts.SourceFile): Map<string, ts.Expression[]> {
  const out = new Map<string, ts.Expression[]>();
  const visit = (node: ts.Node) => {
    if (ts.isVariableDeclarationList(node) && node.flags & ts.NodeFlags.Const)
      for (const d of node.declarations) if (ts.isIdentifier(d.name) && d.initializer) out.set(d.name.text, [...(out.get(d.name.text) ?? []), d.initializer]);
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/**
 * The parts of `e` that are neither literal, nor a number, nor sanitised: as written. A name declared
 * `const` in the same file is followed to its value(s). `isText`: only parts that are text (the DOM
 * children's scan asks the type checker; an element or a number is not text).
 */
function unchecked(e: ts.Expression, sf: ts.SourceFile, consts = constants(sf), seen = new Set<string>(), isText?: (x: ts.Expression) => boolean): string[] {
  if (isText && !isText(e)) return [];
  const again = (x: ts.Expression) => unchecked(x, sf, consts, seen, isText);
  if (ts.isIdentifier(e) && consts.has(e.text) && !seen.has(e.text)) {
    const inner = new Set(seen).add(e.text);
    return consts.get(e.text)!.flatMap((x) => unchecked(x, sf, consts, inner, isText));
  }
  if (ts.isStringLiteral(e) || ts.isNoSubstitutionTemplateLiteral(e) || ts.isNumericLiteral(e)) return [];
  // CodeAct's own constants (USAGE, PYTHON_HELP), counts (`x.length`) and arithmetic are not text from outside.
  if (ts.isIdentifier(e) && (/^[A-Z][A-Z0-9_]+$/.test(e.text) || e.text === 'undefined')) return [];
  if (ts.isPropertyAccessExpression(e) && e.name.text === 'length') return [];
  if (ts.isBinaryExpression(e) && [ts.SyntaxKind.MinusToken, ts.SyntaxKind.AsteriskToken, ts.SyntaxKind.SlashToken].includes(e.operatorToken.kind)) return [];
  // An options object (withProgress, a quick pick): its shown properties.
  if (ts.isObjectLiteralExpression(e))
    return e.properties.flatMap((p) =>
      ts.isPropertyAssignment(p) && ts.isIdentifier(p.name) && ['title', 'message', 'detail', 'prompt', 'placeHolder'].includes(p.name.text)
        ? again(p.initializer)
        : ts.isShorthandPropertyAssignment(p) && ['title', 'message', 'detail'].includes(p.name.text)
          ? again(p.name)
          : [],
    );
  if (ts.isParenthesizedExpression(e) || ts.isAsExpression(e) || ts.isNonNullExpression(e)) return again(e.expression);
  if (ts.isTemplateExpression(e)) return e.templateSpans.flatMap((s) => again(s.expression));
  if (ts.isBinaryExpression(e) && (e.operatorToken.kind === ts.SyntaxKind.PlusToken || e.operatorToken.kind === ts.SyntaxKind.QuestionQuestionToken))
    return [...again(e.left), ...again(e.right)];
  if (ts.isConditionalExpression(e)) return [...again(e.whenTrue), ...again(e.whenFalse)];
  if (ts.isCallExpression(e)) {
    const callee = e.expression.getText(sf);
    if (SANITISERS.has(callee) || STREAMS.test(callee) || NUMBERS.has(callee)) return [];
    if (WRAPPERS.has(callee)) return e.arguments.flatMap(again);
  }
  return [e.getText(sf).replace(/\s+/g, ' ')];
}

interface Found {
  file: string;
  line: number;
  part: string;
}

function scan(m: Medium): Found[] {
  const found: Found[] = [];
  for (const file of files(path.join(ROOT, m.dir))) {
    const rel = path.relative(ROOT, file);
    const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const add = (node: ts.Node, e: ts.Expression) => {
      for (const part of unchecked(e, sf)) found.push({ file: rel, line: sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1, part });
    };
    const visit = (node: ts.Node) => {
      if (ts.isCallExpression(node)) {
        const callee = node.expression.getText(sf);
        if (m.sinks.test(callee)) {
          const which = m.args?.(callee) ?? 'all';
          node.arguments.forEach((a, i) => {
            if (which === 'all' || which.includes(i)) add(node, a);
          });
        }
      }
      if (m.assigns && ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.EqualsToken && ts.isPropertyAccessExpression(node.left)) {
        if (m.assigns.test(node.left.name.text)) add(node, node.right);
      }
      if (m.textProps && ts.isPropertyAssignment(node) && ts.isIdentifier(node.name) && m.textProps.test(node.name.text)) add(node, node.initializer);
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return found;
}

/** Calls that put their arguments into the panel's DOM as children: h()'s children, and the DOM's own. */
const CHILD_SINKS = /(^|\.)(append|prepend|replaceChildren|replaceWith|before|after|createTextNode)$/;

/**
 * The panel's text put into the DOM as children (`h('span', null, name)`, `el.append(text)`,
 * `createTextNode(text)`): which arguments are text is asked of the type checker, over the panel's own
 * program (tsconfig.webview.json), so an element passed as a child is not a place that shows text.
 */
function scanChildren(): Found[] {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, 'tsconfig.webview.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
  );
  assert.ok(config, 'tsconfig.webview.json');
  const program = ts.createProgram(config.fileNames, config.options);
  const checker = program.getTypeChecker();
  const stringy = (t: ts.Type): boolean => (t.isUnion() ? t.types.some(stringy) : (t.flags & ts.TypeFlags.StringLike) !== 0);
  const isText = (x: ts.Expression) => stringy(checker.getTypeAtLocation(x));
  const found: Found[] = [];
  for (const sf of program.getSourceFiles()) {
    const rel = path.relative(ROOT, sf.fileName);
    if (!rel.startsWith('src/webview/')) continue;
    const consts = constants(sf);
    const visit = (node: ts.Node) => {
      if (ts.isCallExpression(node)) {
        const callee = node.expression.getText(sf);
        // A DOM method only: its receiver is a node (an output pane's text model has an append of its own).
        const dom =
          ts.isPropertyAccessExpression(node.expression) && checker.getTypeAtLocation(node.expression.expression).getProperty('nodeType') !== undefined;
        const from = callee === 'h' ? 2 : CHILD_SINKS.test(callee) && dom ? 0 : -1;
        if (from >= 0)
          for (const a of node.arguments.slice(from))
            for (const part of unchecked(ts.isSpreadElement(a) ? a.expression : a, sf, consts, new Set(), isText))
              found.push({ file: rel, line: sf.getLineAndCharacterOfPosition(a.getStart(sf)).line + 1, part });
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  return found;
}

describe('security: text from outside reaches the screen through one sanitiser per medium', function () {
  // The children's scan builds the panel's program with its type checker: seconds on a busy machine.
  this.timeout(120_000);
  const children = scanChildren();
  const all = [...MEDIA.flatMap(scan), ...children];

  it("finds the panel's DOM children that are text (the type checker answers: the scan is not empty)", () => {
    assert.ok(children.length > 0);
    assert.ok(
      children.some((f) => f.file === 'src/webview/dom.ts'),
      children.map((f) => `${f.file}: ${f.part}`).join('\n'),
    );
  });

  it('finds the places that show text (the scan is not empty: a renamed sink would hide them all)', () => {
    for (const m of MEDIA) assert.ok(all.length > 0 && scan(m).length >= 0, m.dir);
    const files = new Set(all.map((f) => f.file.split('/')[1]));
    assert.ok(files.has('cli') && files.has('vscode') && files.has('webview'), [...files].join(', '));
  });

  it('every part shown is literal, a number, sanitised, or listed with the reason it is not from outside', () => {
    const unknown = all.filter((f) => !(`${f.file}: ${f.part}` in KNOWN));
    assert.deepEqual(
      unknown.map((f) => `${f.file}:${f.line}: ${f.part}`),
      [],
      'Show these through src/common/untrusted.ts (forTerminal, forDisplay) or src/webview/reveal.ts, or list them in KNOWN with the reason',
    );
  });

  it('every entry of the list still matches a place in the source', () => {
    const seen = new Set(all.map((f) => `${f.file}: ${f.part}`));
    assert.deepEqual(
      Object.keys(KNOWN).filter((k) => !seen.has(k)),
      [],
    );
  });
});
