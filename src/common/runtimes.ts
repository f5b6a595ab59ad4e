/**
 * The runtimes, once: where a code item ran (`RuntimeKind`: our local guest, a Jupyter kernel, a provider's
 * hosted sandbox), with what each host and the model need to know of it, and the modes (`codeact.mode`) with
 * where their code runs. Both are exhaustive records: a new kind does not compile until its row is written.
 * Read the facts here instead of comparing a kind's name (the lint rule `codeact/no-kind-comparison`).
 */

/** Where a code item ran: a runtime of ours (`codeact.runtime`) or a provider's hosted sandbox. */
export type RuntimeKind = 'local' | 'jupyter' | 'openai' | 'anthropic' | 'gemini';

/** The panel's icon of a runtime (a name of src/webview/icons.ts). */
type RuntimeIcon = 'terminal' | 'notebook' | 'cloud';

/**
 * What the model is told of a runtime of ours, in the descriptions of execute_tool_code and execute_code
 * (core/tools/modelTools.ts). `persistent`: runs of the conversation share one session.
 */
export interface RuntimeModelText {
  /** Where the code runs, after "Run Python 3 ". */
  place(persistent: boolean): string;
  /** What survives between runs that share a session. */
  state: string;
  /** Its working directory and network. */
  network(persistent: boolean): string;
}

interface RuntimeFacts {
  /** For people: the panel's runtime badge ("Local Python"). */
  label: string;
  icon: RuntimeIcon;
  /** Files its code writes are at their paths on this host (openable, copyable here); else a path is inside someone else's machine. */
  hostPaths: boolean;
}

/** A runtime of ours (chosen with `codeact.runtime`): we run the code, so its result goes back to the model as a function result and its session is ours. */
interface OurRuntimeInfo extends RuntimeFacts {
  ours: true;
  /** Runs the Python interpreter this host resolves (codeact.python.path, the folder's venv); the status bar shows it. */
  hostPython: boolean;
  /**
   * `install_packages`: `true` installs into that interpreter (with the user's approval); else why not, as
   * the model reads it. Only a runtime that runs the host's interpreter may install: pip runs on this host.
   */
  installs: true | { unavailable: string };
  /** Background jobs of a session (execute_tool_code's `background`): `true`, else why not, as the model reads it. */
  jobs: true | { unavailable: string };
  /** Where it runs the code, for people (the panel's welcome: "runs it on your Jupyter kernel"). */
  where: string;
  /** Its connection takes the runtime token the host keeps (VS Code's SecretStorage, the CLI's CODEACT_JUPYTER_TOKEN). */
  token: boolean;
  /** Its sessions can live in a session host that outlives the window or the CLI (codeact.session.host; core/sessionHost). */
  sessionHost: boolean;
  /** Its sessions keep checkpoints of their Python state, for "Rewind to here" (core/runtime/local/checkpoints). */
  checkpoints: boolean;
  model: RuntimeModelText;
}

/**
 * A provider's hosted sandbox (`codeact.mode: hosted`): the provider runs the code and sends its output with the
 * finished item. Which provider's it is, is said once, by the provider's row (`hostedSandbox` in ./providers).
 */
interface HostedRuntimeInfo extends RuntimeFacts {
  ours: false;
}

export type RuntimeInfo = OurRuntimeInfo | HostedRuntimeInfo;

/**
 * Why the Jupyter runtime has no install_packages: the kernel's Python is the Jupyter server's, which may run
 * on another machine whose environment and network the host cannot see, so "pip outside the sandbox, into
 * the session's environment" has no meaning there. Its code runs unsandboxed in the kernel, where the user
 * installs as they do in any notebook.
 */
export const JUPYTER_INSTALL_UNAVAILABLE =
  "install_packages is not available on the Jupyter runtime: the kernel runs in the Jupyter server's own Python environment (possibly on another machine), " +
  'which CodeAct does not manage. Ask the user to install the package into that kernel\'s environment (for example "%pip install name" in a notebook on that kernel).';

/** Why the Jupyter runtime runs no background jobs (this version), as the model reads it. */
export const JUPYTER_JOBS_UNAVAILABLE =
  'Background jobs are not available on the Jupyter runtime: every execution runs to its end before the conversation goes on. ' +
  'Split long work into runs that each finish within the timeout.';

const hosted = (label: string) => ({ label, icon: 'cloud', hostPaths: false, ours: false }) as const;

export const RUNTIMES = {
  local: {
    label: 'Local Python',
    icon: 'terminal',
    hostPaths: true,
    ours: true,
    hostPython: true,
    installs: true,
    jobs: true,
    where: 'in a local Python sandbox',
    token: false,
    sessionHost: true,
    checkpoints: true,
    model: {
      place: (persistent) => (persistent ? "in this conversation's isolated Python session" : 'in a fresh, isolated process'),
      state:
        'Runs of this conversation share one Python session: variables, imports, functions and files in the working directory from earlier runs are still there. ' +
        "If the session was restarted, the run's stderr starts with a [codeact] note saying that earlier variables are gone.",
      network: (persistent) =>
        `The working directory ${persistent ? 'is a private folder of the session' : 'is an empty temporary folder'}; there may be no network.`,
    },
  },
  jupyter: {
    label: 'Jupyter',
    icon: 'notebook',
    // A run's files are copied to this host through the server's contents API (core/runtime/jupyter/kernelFiles.ts).
    hostPaths: true,
    ours: true,
    hostPython: false,
    installs: { unavailable: JUPYTER_INSTALL_UNAVAILABLE },
    jobs: { unavailable: JUPYTER_JOBS_UNAVAILABLE },
    where: 'on your Jupyter kernel',
    token: true,
    sessionHost: false,
    // A kernel's state cannot be copied: Jupyter has no fork of a kernel.
    checkpoints: false,
    model: {
      place: () => 'in a Jupyter kernel',
      state:
        'Runs share one Jupyter kernel per conversation: variables, imports and functions from earlier runs are still defined, ' +
        'also after VS Code reloads or the CLI continues the conversation (a run says so if the kernel was lost).',
      network: () => 'The kernel may have no network access.',
    },
  },
  openai: hosted('OpenAI sandbox'),
  anthropic: hosted('Anthropic sandbox'),
  gemini: hosted('Gemini sandbox'),
} as const satisfies Record<RuntimeKind, RuntimeInfo>;

/** The runtimes `codeact.runtime` chooses from: ours. */
export type ConfiguredRuntime = { [K in RuntimeKind]: (typeof RUNTIMES)[K]['ours'] extends true ? K : never }[RuntimeKind];

const KINDS = Object.keys(RUNTIMES) as RuntimeKind[];

/** The values of `codeact.runtime` (core/config/keys.ts), in the catalogue's order. */
export const CONFIGURED_RUNTIMES: readonly ConfiguredRuntime[] = KINDS.filter((k): k is ConfiguredRuntime => RUNTIMES[k].ours);

/** Whether a run of this kind, in a session, can be rewound to (its session keeps checkpoints). */
export function keepsCheckpoints(kind: string | undefined): boolean {
  const info = runtimeInfo(kind);
  return !!info && info.ours && info.checkpoints;
}

/** A runtime's facts; undefined for a kind this version does not know (a saved conversation may say anything). */
export function runtimeInfo(kind: string | undefined): RuntimeInfo | undefined {
  return kind !== undefined && Object.hasOwn(RUNTIMES, kind) ? RUNTIMES[kind as RuntimeKind] : undefined;
}

/** The facts of a runtime of ours, as `codeact.runtime` names it. */
export function configuredRuntime(kind: ConfiguredRuntime): OurRuntimeInfo {
  return RUNTIMES[kind];
}

/**
 * The runtime of ours a kind names, else the default one (the local guest): what the model and the panel
 * describe when no runtime of ours is named (a hosted sandbox is described by its provider).
 */
export function ourRuntimeOf(kind: string | undefined): OurRuntimeInfo {
  const info = runtimeInfo(kind);
  return info?.ours ? info : RUNTIMES.local;
}

/** The modes of `codeact.mode`: the model's code calls managed tools, plain code, or the provider's hosted sandbox. */
export type CodeMode = 'toolCode' | 'hosted' | 'code';

interface ModeInfo {
  /**
   * Its code runs on our runtime (codeact.runtime), so code review can stop it before it runs, install_packages
   * may be offered, and the folder's interpreter matters. Else the provider's hosted sandbox runs it before we
   * see it, and its items carry the provider's runtime (`runtimeKindOf` in ./providers).
   */
  ourRuntime: boolean;
}

export const MODES: Readonly<Record<CodeMode, ModeInfo>> = {
  toolCode: { ourRuntime: true },
  hosted: { ourRuntime: false },
  code: { ourRuntime: true },
};

/** The values of `codeact.mode` (core/config/keys.ts). */
export const CODE_MODES = Object.keys(MODES) as CodeMode[];
