/**
 * Checking the messages that cross between the host and the panel (./protocol): what the page sends is
 * untrusted (a typed message or undefined, extra fields dropped), what the host sends is told apart by type.
 */
import type { ApprovalDecision, FileOutput, StreamName } from './events';
import { parseOutputMessage } from './outputMessages';
import { HOST_COMMANDS, SETTING_ID, type HostCommand, type HostToWebview, type WebviewToHost } from './protocol';

// ---- validation ---------------------------------------------------------------------------------

const DECISIONS: readonly string[] = ['allow_once', 'allow_session', 'allow_always', 'deny'];
/** Limits on what the host accepts from the page. */
const MAX_PROMPT_CHARS = 200_000;
const MAX_CODE_CHARS = 1024 * 1024;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isStr = (v: unknown, max = 4096): v is string => typeof v === 'string' && v.length <= max;
const isId = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 512;
const isOptStr = (v: unknown, max = 4096): boolean => v === undefined || isStr(v, max);
const isSeq = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

/** An elicitation's answer: at most 100 fields, each a short primitive or a short list of strings. */
function parseElicitationReply(m: Record<string, unknown>): WebviewToHost | undefined {
  if (!isId(m.elicitationId) || (m.action !== 'accept' && m.action !== 'decline' && m.action !== 'cancel')) return undefined;
  if (m.action !== 'accept') return { type: 'elicitation', elicitationId: m.elicitationId, action: m.action };
  if (!isObj(m.content)) return undefined;
  const entries = Object.entries(m.content);
  if (entries.length > 100) return undefined;
  const content: Record<string, string | number | boolean | string[]> = {};
  for (const [k, v] of entries) {
    const ok =
      (typeof v === 'string' && v.length <= 100_000) ||
      (typeof v === 'number' && Number.isFinite(v)) ||
      typeof v === 'boolean' ||
      (Array.isArray(v) && v.length <= 500 && v.every((x) => isStr(x, 4096)));
    if (!ok || k.length > 512) return undefined;
    if (k !== '__proto__') content[k] = v as string | number | boolean | string[];
  }
  return { type: 'elicitation', elicitationId: m.elicitationId, action: 'accept', content };
}

/**
 * Checks a message from the page. Returns the typed message, or undefined when it is malformed or unknown
 * (the host logs and ignores those). Extra fields are dropped.
 */
export function parseWebviewMessage(raw: unknown): WebviewToHost | undefined {
  if (!isObj(raw) || typeof raw.type !== 'string') return undefined;
  const m = raw;
  switch (m.type) {
    case 'ready':
      if (!isSeq(m.seq) || !isOptStr(m.conversationId, 512) || !isOptStr(m.epoch, 64)) return undefined;
      return {
        type: 'ready',
        protocol: typeof m.protocol === 'number' ? m.protocol : 0,
        seq: m.seq,
        conversationId: m.conversationId as string | undefined,
        ...(m.full === true ? { full: true } : {}),
        ...(m.epoch ? { epoch: m.epoch as string } : {}),
      };
    case 'scrolled': {
      const sc = m.scroll;
      if (!isId(m.conversationId) || !isObj(sc) || typeof sc.stuck !== 'boolean' || !isOptStr(sc.turnId, 512)) return undefined;
      const offset = typeof sc.offset === 'number' && Number.isFinite(sc.offset) ? Math.round(sc.offset) : undefined;
      return {
        type: 'scrolled',
        conversationId: m.conversationId,
        scroll: { stuck: sc.stuck, ...(sc.turnId ? { turnId: sc.turnId as string } : {}), ...(offset !== undefined ? { offset } : {}) },
      };
    }
    case 'resync':
      if (!isSeq(m.seq) || !isOptStr(m.conversationId, 512) || !isOptStr(m.epoch, 64)) return undefined;
      return { type: 'resync', seq: m.seq, conversationId: m.conversationId as string | undefined, ...(m.epoch ? { epoch: m.epoch as string } : {}) };
    case 'notebook.target':
      return isStr(m.uri) && typeof m.on === 'boolean' ? { type: 'notebook.target', uri: m.uri, on: m.on } : undefined;
    case 'notebook.useKernel':
      return isStr(m.uri) ? { type: 'notebook.useKernel', uri: m.uri } : undefined;
    case 'notebook.reveal':
      return isStr(m.uri) && isId(m.itemId) ? { type: 'notebook.reveal', uri: m.uri, itemId: m.itemId } : undefined;
    case 'workspace.folder':
      return isStr(m.path, 4096) ? { type: 'workspace.folder', path: m.path } : undefined;
    case 'send':
      return isStr(m.text, MAX_PROMPT_CHARS) && m.text.trim() ? { type: 'send', text: m.text } : undefined;
    case 'stop':
    case 'newConversation':
    case 'history.list':
    case 'history.clear':
    case 'history.fromCli':
    case 'variables.refresh':
    case 'python.select':
      return { type: m.type };
    case 'restartSession':
      return isOptStr(m.sessionId, 4096) ? { type: 'restartSession', ...(m.sessionId ? { sessionId: m.sessionId as string } : {}) } : undefined;
    case 'stopJob':
      return isStr(m.sessionId, 4096) && Number.isSafeInteger(m.job) && (m.job as number) > 0
        ? { type: 'stopJob', sessionId: m.sessionId, job: m.job as number }
        : undefined;
    case 'detachRun':
      return isStr(m.sessionId, 4096) && isStr(m.itemId, 4096) ? { type: 'detachRun', sessionId: m.sessionId, itemId: m.itemId } : undefined;
    case 'selectModel':
      return isId(m.provider) && isId(m.model) ? { type: 'selectModel', provider: m.provider, model: m.model } : undefined;
    case 'command':
      if (typeof m.command !== 'string' || !(HOST_COMMANDS as readonly string[]).includes(m.command)) return undefined;
      if (m.setting !== undefined && (typeof m.setting !== 'string' || !SETTING_ID.test(m.setting))) return undefined;
      return { type: 'command', command: m.command as HostCommand, ...(m.setting !== undefined ? { setting: m.setting as string } : {}) };
    case 'approval':
      if (!isId(m.approvalId) || typeof m.decision !== 'string' || !DECISIONS.includes(m.decision)) return undefined;
      if (!isOptStr(m.code, MAX_CODE_CHARS)) return undefined;
      return {
        type: 'approval',
        approvalId: m.approvalId,
        decision: m.decision as ApprovalDecision,
        ...(m.code !== undefined ? { code: m.code as string } : {}),
      };
    case 'elicitation':
      return parseElicitationReply(m);
    case 'copy':
      return isStr(m.text, MAX_CODE_CHARS * 4) ? { type: 'copy', text: m.text } : undefined;
    case 'insertCode':
      return isStr(m.code, MAX_CODE_CHARS) ? { type: 'insertCode', code: m.code } : undefined;
    case 'runCode':
      return isStr(m.code, MAX_CODE_CHARS) && m.code.trim() && isOptStr(m.itemId, 512)
        ? { type: 'runCode', code: m.code, ...(m.itemId !== undefined ? { itemId: m.itemId as string } : {}) }
        : undefined;
    case 'openFullOutput':
      if (!isId(m.itemId) || (m.stream !== undefined && m.stream !== 'stdout' && m.stream !== 'stderr')) return undefined;
      return { type: 'openFullOutput', itemId: m.itemId, ...(m.stream ? { stream: m.stream as StreamName } : {}) };
    case 'openFile':
      return isId(m.itemId) && isObj(m.file) && (m.file as { type?: unknown }).type === 'file'
        ? { type: 'openFile', itemId: m.itemId, file: m.file as unknown as FileOutput }
        : undefined;
    case 'image.open':
    case 'image.save':
    case 'file.open':
    case 'file.save':
    case 'file.copyPath':
    case 'changes.diff':
    case 'changes.revert':
    case 'changes.keep':
    case 'exec.rewind':
    case 'turn.rewind':
      return parseOutputMessage(m);
    case 'openLink':
      return isStr(m.href, 8192) && /^(https?:|mailto:)/i.test(m.href) ? { type: 'openLink', href: m.href } : undefined;
    case 'history.open':
    case 'history.delete':
      return isId(m.conversationId) ? { type: m.type, conversationId: m.conversationId } : undefined;
    case 'exportNotebook':
      return isOptStr(m.conversationId, 512)
        ? { type: 'exportNotebook', ...(m.conversationId ? { conversationId: m.conversationId as string } : {}) }
        : undefined;
    case 'webviewError':
      return { type: 'webviewError', message: typeof m.message === 'string' ? m.message.slice(0, 4000) : String(m.message) };
    default:
      return undefined;
  }
}

const HOST_TYPES: readonly string[] = [
  'init',
  'state',
  'events',
  'reset',
  'history',
  'setInput',
  'focusInput',
  'notice',
  'variables',
  'file.missing',
  'changes.reverted',
  'exec.rewound',
  'revealJob',
];

/** A cheap shape check the page runs on `message` events. */
export function isHostMessage(raw: unknown): raw is HostToWebview {
  if (!isObj(raw) || typeof raw.type !== 'string' || !HOST_TYPES.includes(raw.type)) return false;
  switch (raw.type) {
    case 'events':
    case 'reset':
      return isSeq(raw.seq) && Array.isArray(raw.events);
    case 'init':
      return isObj(raw.state);
    case 'state':
      return isObj(raw.state);
    case 'history':
      return Array.isArray(raw.conversations);
    case 'setInput':
      return typeof raw.text === 'string';
    case 'notice':
      return typeof raw.message === 'string';
    case 'variables':
      return Array.isArray(raw.variables);
    case 'file.missing':
      return typeof raw.itemId === 'string' && typeof raw.path === 'string' && typeof raw.message === 'string';
    case 'changes.reverted':
      return (
        typeof raw.itemId === 'string' && Array.isArray(raw.reverted) && Array.isArray(raw.failed) && (raw.kept === undefined || typeof raw.kept === 'boolean')
      );
    case 'exec.rewound':
      return typeof raw.itemId === 'string' && Array.isArray(raw.lines) && raw.lines.every((l) => typeof l === 'string');
    case 'revealJob':
      return typeof raw.sessionId === 'string' && Number.isSafeInteger(raw.job);
    default:
      return true;
  }
}
