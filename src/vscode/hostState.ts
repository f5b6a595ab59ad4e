/** What the panel is told about the host: providers and keys, the model, the runtime, the tools (ready and broken), trust. */
import type { RuntimeKind } from '../common/events';
import type { BrokenToolSummary, HostState, ProviderInfo, ToolSummary } from '../common/protocol';
import type { Conversation } from '../core/agent/transcriptStore';
import type { PythonEnv } from '../core/runtime/local/pythonEnv';
import type { ToolSet } from '../core/gateway/toolSet';
import type { ProviderId } from '../core/providers/shared/types';
import { PROVIDERS } from '../core/providers/registry';
import { DEFAULT_MODELS, PROVIDER_NAMES } from './providers';
import type { CodeActSettings } from './settings';

interface HostStateInputs {
  settings: CodeActSettings;
  hasKey(provider: ProviderId): Promise<boolean>;
  toolSet: ToolSet;
  trusted: boolean;
  busy: boolean;
  conversation: Conversation | undefined;
  version: string;
}

export async function hostStateOf(x: HostStateInputs): Promise<HostState> {
  const s = x.settings;
  const providers: ProviderInfo[] = await Promise.all(
    PROVIDERS.map((p) => p.id).map(async (id) => ({
      id,
      label: PROVIDER_NAMES[id],
      hasKey: await x.hasKey(id),
      models: [...new Set([...(id === s.provider && s.model ? [s.model] : []), ...DEFAULT_MODELS[id]])].map((m) => ({ id: m })),
    })),
  );
  const tools: ToolSummary[] = x.toolSet.tools.map((t) => ({ name: t.name, description: t.description, approval: t.approval, source: t.source as ToolSummary['source'] }));
  const brokenTools: BrokenToolSummary[] = x.toolSet.errors.map((e) => ({ index: e.index, name: e.name, message: e.message, ...(e.problems ? { problems: e.problems } : {}) }));
  const runtime: RuntimeKind = s.mode === 'hosted' ? (s.provider === 'openai-compatible' ? 'local' : (s.provider as RuntimeKind)) : s.runtime;
  return {
    providers,
    provider: s.provider,
    model: s.model,
    runtime,
    mode: s.mode === 'hosted' ? 'hosted' : 'local',
    tools,
    brokenTools,
    trusted: x.trusted,
    busy: x.busy,
    conversationId: x.conversation?.id,
    conversationTitle: x.conversation?.meta.title,
    version: x.version,
  };
}

/** The host state's `python`: which interpreter the folder's guest runs (core/runtime/local/pythonEnv.ts). */
export function pythonStateOf(env: PythonEnv | undefined): HostState['python'] {
  return env ? { label: env.label, path: env.python, source: env.source } : undefined;
}
