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
const NUMBERS = new Set(['formatCount', 'formatElapsed', 'Math.round', 'formatSize', 'relativeTime']);
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
  { dir: 'src/webview', sinks: /^(announce|ctx\.announce|this\.ctx\.announce)$/, assigns: /^(textContent)$/, textProps: /^(text)$/ },
];

/**
 * Parts that are not text from outside, by file and as written, with the reason. An entry that no longer
 * matches anything fails too (the list stays true).
 */
const KNOWN: Record<string, string> = {
  'src/vscode/approvals.apis.ts: options.title': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/approvals.apis.ts: options.placeHolder': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/elicitQuickInput.ts: i': 'the index of the field (a number)',
  "src/vscode/elicitQuickInput.ts: [problem ? `${one(f.title)} ${forDisplay(problem)}.` : '', forDisplay(f.description, { line: true })].filter(Boolean).join(' — ') || undefined":
    'each part goes through one() or forDisplay',
  'src/vscode/elicitQuickInput.ts: elicitFieldHint(f)': "CodeAct's wording of the field's kind and numeric range",
  'src/vscode/secrets.ts: whoStarting(picked)': "CodeAct's own provider table",
  "src/vscode/secrets.ts: providerInfo(picked).keyEnv.join(' or ') || 'no key'": "CodeAct's own provider table",
  'src/cli/chat.ts: JSON.stringify(list)': '--json: machine output, the events as they are (README: scripts read it)',
  'src/cli/chat.ts: c.id': "CodeAct's own text, ids or numbers",
  "src/cli/chat.ts: new Date(c.updatedAt).toISOString().slice(0, 16).replace('T', ' ')": "CodeAct's own text, ids or numbers",
  'src/cli/chat.ts: conversation!.id': "CodeAct's own text, ids or numbers",
  'src/cli/chat.ts: JSON.stringify(e)': '--json: machine output, the events as they are (README: scripts read it)',
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
  'src/vscode/chatPanel.ts: vscode.workspace.asRelativePath(target)': 'the path the person picked in the save dialog',
  'src/vscode/commands.ts: providerInfo(provider).label': "CodeAct's own provider table",
  'src/vscode/commands.ts: providerInfo(p.id).label': "CodeAct's own provider table",
  'src/vscode/controller.apis.ts: message': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/mcpAuth.apis.ts: m': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/mcpAuth.apis.ts: title': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/runtimeCache.apis.ts: message': "a sink wrapper's parameter: its callers are checked here",
  'src/vscode/trust.ts: untrustedMessage(what)': "CodeAct's own wording",
  'src/webview/execCard.ts: this.output.text()':
    '"Copy output" puts the output on the clipboard as the code wrote it (as every Copy in the panel does), not on the screen; the pane shows it with markers (outputNodes.ts)',
};

/**
 * The panel's places not yet looked at one by one: some show CodeAct's own text, some show text from
 * outside (tool errors, variables, notices, folder names) without markers. They are listed so that no
 * new one can appear; the list only shrinks, each entry moving to {@link KNOWN} or to ./reveal.
 */
const PANEL_PENDING = [
  'src/webview/app.ts: text',
  "src/webview/app.ts: action.closest('.md-code')?.querySelector('pre')?.textContent",
  'src/webview/composer.ts: this.input.value.trim()',
  'src/webview/composer.ts: this.history.older(el.value)',
  'src/webview/composer.ts: this.history.newer()',
  'src/webview/composer.ts: p.label',
  'src/webview/composer.ts: m.label',
  'src/webview/composer.ts: m.id',
  'src/webview/composer.ts: host.model',
  "src/webview/composer.ts: model || 'Model'",
  'src/webview/composer.ts: String(tools.length)',
  'src/webview/composer.ts: String(broken.length)',
  'src/webview/displayView.ts: shown',
  'src/webview/displayView.ts: b.text',
  'src/webview/displayView.ts: b.more',
  "src/webview/displayView.ts: Object.keys(d.data).slice(0, 5).join(', ')",
  'src/webview/dom.ts: String(v)',
  'src/webview/dom.ts: text',
  'src/webview/emptyState.ts: detail',
  'src/webview/emptyState.ts: provider?.label',
  'src/webview/emptyState.ts: e.text',
  'src/webview/emptyState.ts: label(broken[0])',
  "src/webview/emptyState.ts: h('ul')",
  'src/webview/emptyState.ts: joinAnd(names)',
  "src/webview/emptyState.ts: names.slice(0, 3).join(', ')",
  'src/webview/emptyState.ts: first.name',
  'src/webview/emptyState.ts: second.name',
  'src/webview/errorActions.ts: turn.prompt',
  'src/webview/execCard.ts: t.action',
  'src/webview/execCard.ts: this.item.code',
  'src/webview/execCard.ts: STATUS_TEXT[x.status]',
  'src/webview/execCard.ts: x.error.type',
  'src/webview/execCard.ts: x.runtime',
  'src/webview/execCard.ts: check?.note',
  'src/webview/execCard.ts: n',
  'src/webview/execCard.ts: sb.kind',
  'src/webview/execCard.ts: shortId(x.containerId)',
  'src/webview/execCard.ts: nb.name',
  'src/webview/execCard.ts: String(i)',
  'src/webview/execCard.ts: e.line',
  'src/webview/fileChips.ts: label',
  "src/webview/fileChips.ts: [f.bytes !== undefined ? formatSize(f.bytes) : '', fileType(f)].filter(Boolean).join(' · ')",
  "src/webview/historyPanel.ts: [relativeTime(c.updatedAt), `${c.turns} ${c.turns === 1 ? 'turn' : 'turns'}`, c.model].filter(Boolean).join(' · ')",
  'src/webview/installApproval.ts: venvSentence(i)',
  'src/webview/installApproval.ts: quoteArg(a)',
  "src/webview/itemCards.ts: /language-([\\w-]+)/.exec(pre.querySelector('code')?.className ?? '')?.[1]",
  'src/webview/itemCards.ts: what',
  "src/webview/itemCards.ts: parts.join(' and ')",
  'src/webview/itemCards.ts: out',
  'src/webview/itemCards.ts: item.text',
  'src/webview/jsonTree.ts: String(value)',
  'src/webview/jsonTree.ts: summaryText(value as object)',
  'src/webview/jsonTree.ts: count(remaining)',
  'src/webview/markdown.ts: finalText',
  'src/webview/markdown.ts: this.text',
  'src/webview/notebookTarget.ts: label',
  'src/webview/outputFlow.ts: err.message',
  'src/webview/outputFlow.ts: String(err)',
  'src/webview/reveal.ts: m.marker',
  'src/webview/transcriptView.ts: turn.prompt',
  'src/webview/transcriptView.ts: m',
  'src/webview/variablesView.ts: msg.note',
  'src/webview/viewKit.ts: label',
  'src/webview/viewKit.ts: o.badge',
];
for (const k of PANEL_PENDING) KNOWN[k] = 'the panel: not yet checked one by one (the list only shrinks)';

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
 * `const` in the same file is followed to its value(s).
 */
function unchecked(e: ts.Expression, sf: ts.SourceFile, consts = constants(sf), seen = new Set<string>()): string[] {
  const again = (x: ts.Expression) => unchecked(x, sf, consts, seen);
  if (ts.isIdentifier(e) && consts.has(e.text) && !seen.has(e.text)) {
    const inner = new Set(seen).add(e.text);
    return consts.get(e.text)!.flatMap((x) => unchecked(x, sf, consts, inner));
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

describe('security: text from outside reaches the screen through one sanitiser per medium', () => {
  const all = MEDIA.flatMap(scan);

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
