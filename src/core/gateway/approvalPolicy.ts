/**
 * Approval precedence: whether a managed tool call runs at once (`auto`), waits for the person (`ask`)
 * or is refused (`deny`). One table, one function, for every source (command, http, mcp, lmTool) and
 * both hosts: `loadTools` applies it when it builds a tool, and the gateway again at each call, with
 * the person's allowances ("Allow for this session", `codeact.approval.alwaysAllow`).
 *
 * The rows, in order (README "Approvals" shows the same table):
 *
 * | # | rule                                                                                   | the call       |
 * |---|----------------------------------------------------------------------------------------|----------------|
 * | 1 | the tool's declaration says `"approval": "deny"` (user or folder settings)            | deny           |
 * | 2 | the host denies it at call time                                                        | deny           |
 * | 3 | start from the declaration's `approval`, else `codeact.approval.default` (yours, or a folder's stricter one) | that policy |
 * | 4 | the tool is declared in a folder's settings and your own `approval.default` is stricter than row 3 | your default |
 * | 5 | the policy so far is `deny`                                                            | deny (nothing lifts it) |
 * | 6 | you allowed the tool: `codeact.approval.alwaysAllow`, or "Allow for this session"      | auto           |
 * | 7 | otherwise                                                                              | the policy of rows 3–4 |
 *
 * A folder only tightens: its `approval.default` is ignored when looser than yours (resolve.ts), its
 * tools' `approval` is raised to your default when looser (row 4), `alwaysAllow` is yours alone, and
 * `approval.reviewCode` from a folder can turn code review on, never off.
 */
import type { ApprovalPolicy } from '../../common/tools';

/** From loosest to strictest. */
export const APPROVAL_ORDER: readonly ApprovalPolicy[] = ['auto', 'ask', 'deny'];

/** What the precedence needs to know about a tool, fixed when it is built. */
export interface ToolApprovalFacts {
  /** The declaration's own `approval`, if it has one. */
  declared?: ApprovalPolicy;
  /** Whose settings declared the tool: the person's (user settings, a flag, built in) or a folder's (workspace or folder settings). */
  declaredIn: 'user' | 'folder';
  /** `codeact.approval.default` as resolved: the person's, or a folder's stricter one. */
  default: ApprovalPolicy;
  /** The person's own `codeact.approval.default` (`auto` when they set none). */
  userDefault: ApprovalPolicy;
}

interface ApprovalDecision {
  policy: ApprovalPolicy;
  /** Why, as words for the log and for errors ("your codeact.approval.default is "ask", and …"). */
  because: string;
  /** The folder's own policy was overruled by the person's stricter default (row 4). */
  tightened: boolean;
}

const stricter = (a: ApprovalPolicy, b: ApprovalPolicy): boolean => APPROVAL_ORDER.indexOf(a) > APPROVAL_ORDER.indexOf(b);

/**
 * The table above. `override` is what the host says at call time: `auto` for a tool the person allowed
 * (always, or for this session), `deny` to refuse; undefined for nothing.
 */
export function decideApproval(facts: ToolApprovalFacts, override?: ApprovalPolicy): ApprovalDecision {
  if (facts.declared === 'deny') return { policy: 'deny', tightened: false, because: 'its declaration says "approval": "deny"' };
  if (override === 'deny') return { policy: 'deny', tightened: false, because: 'it is denied for this session' };
  const own = facts.declared ?? facts.default;
  if (facts.declaredIn === 'folder' && stricter(facts.userDefault, own)) {
    const because = `your codeact.approval.default is "${facts.userDefault}", and a folder's settings may make approvals stricter, never looser (the folder's tool says "${own}")`;
    if (facts.userDefault === 'deny') return { policy: 'deny', tightened: true, because };
    if (override === 'auto') return { policy: 'auto', tightened: false, because: ALLOWED };
    return { policy: facts.userDefault, tightened: true, because };
  }
  const because = facts.declared ? `its declaration says "approval": "${facts.declared}"` : `codeact.approval.default is "${facts.default}"`;
  if (own === 'deny') return { policy: 'deny', tightened: false, because };
  if (override === 'auto') return { policy: 'auto', tightened: false, because: ALLOWED };
  return { policy: override ?? own, tightened: false, because };
}

const ALLOWED = 'you allowed it (codeact.approval.alwaysAllow, or "Allow for this session")';

/** The facts of a tool built without them (a host's own tools, tests): its `approval` as the person's own declaration. */
export function factsOf(tool: { approval: ApprovalPolicy; approvalFacts?: ToolApprovalFacts }): ToolApprovalFacts {
  return tool.approvalFacts ?? { declared: tool.approval, declaredIn: 'user', default: tool.approval, userDefault: 'auto' };
}

/**
 * The host's override at call time for the person's allowances (row 6): `auto` for a tool on `alwaysAllow`
 * (the user's settings) or in `session` (allowed "for this session"), else nothing. Both hosts use it.
 */
export function allowancesOverride(alwaysAllow: readonly string[], session: ReadonlySet<string>): (tool: { name: string }) => 'auto' | undefined {
  return (tool) => (alwaysAllow.includes(tool.name) || session.has(tool.name) ? 'auto' : undefined);
}
