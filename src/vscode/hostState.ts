/** What the panel is told about the host: providers and their keys, the model, the runtime, the tools (ready and broken). */
import type { RuntimeKind } from '../common/events';
import type { BrokenToolSummary, HostState, ProviderInfo, ToolSummary } from '../common/protocol';
import type { ToolSet } from '../core/gateway/toolSet';
import { PROVIDERS } from '../core/providers/registry';
import { DEFAULT_MODELS, PROVIDER_NAMES } from './providers';
import type { Secrets } from './secrets';
import type { CodeActSettings } from './settings';

export interface HostStateParts {
  settings: CodeActSettings;
  secrets: Pick<Secrets, 'hasKey'>;
  toolSet: ToolSet;
  trusted: boolean;
  busy: boolean;
  conversation?: { id: string; title: string };
  version: string;
}

export async function buildHostState(p: HostStateParts): Promise<HostState> {
  const s = p.settings;
  const providers: ProviderInfo[] = await Promise.all(
    PROVIDERS.map((provider) => provider.id).map(async (id) => ({
      id,
      label: PROVIDER_NAMES[id],
      hasKey: await p.secrets.hasKey(id),
      models: [...new Set([...(id === s.provider && s.model ? [s.model] : []), ...DEFAULT_MODELS[id]])].map((m) => ({ id: m })),
    })),
  );
  const tools: ToolSummary[] = p.toolSet.tools.map((t) => ({ name: t.name, description: t.description, approval: t.approval, source: t.source as ToolSummary['source'] }));
  const brokenTools: BrokenToolSummary[] = p.toolSet.errors.map((e) => ({ index: e.index, name: e.name, message: e.message, ...(e.problems ? { problems: e.problems } : {}) }));
  const runtime: RuntimeKind = s.mode === 'hosted' ? (s.provider === 'openai-compatible' ? 'local' : (s.provider as RuntimeKind)) : s.runtime;
  return {
    providers,
    provider: s.provider,
    model: s.model,
    runtime,
    mode: s.mode === 'hosted' ? 'hosted' : 'local',
    tools,
    brokenTools,
    trusted: p.trusted,
    busy: p.busy,
    conversationId: p.conversation?.id,
    conversationTitle: p.conversation?.title,
    version: p.version,
  };
}
