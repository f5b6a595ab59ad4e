/** What the panel is told about the host: providers and keys, the model, the runtime, the tools (ready and broken), trust. */
import type { BrokenToolSummary, HostState, ProviderChoice, ToolSummary } from '../common/protocol';
import type { Conversation } from '../core/agent/transcriptStore';
import type { PythonEnv } from '../core/runtime/local/pythonEnv';
import type { ToolSet } from '../core/gateway/toolSet';
import type { ProviderId } from '../core/providers/shared/types';
import { PROVIDER_CATALOG } from '../core/providers/shared/catalog';
import { MODELS_AS_OF, runtimeKindOf } from '../common/providers';
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
  const providers: ProviderChoice[] = await Promise.all(
    PROVIDER_CATALOG.map(async ({ id, label, defaultModels, firstParty }) => ({
      id,
      label,
      hasKey: await x.hasKey(id),
      models: [...new Set([...(id === s.provider && s.model ? [s.model] : []), ...defaultModels])].map((m) =>
        // A first-party model of the catalogue says when the list was made (a local server's are examples).
        firstParty && defaultModels.includes(m) ? { id: m, detail: `${label}'s models as CodeAct lists them on ${MODELS_AS_OF}` } : { id: m },
      ),
    })),
  );
  const tools: ToolSummary[] = x.toolSet.tools.map((t) => ({
    name: t.name,
    description: t.description,
    approval: t.approval,
    source: t.source as ToolSummary['source'],
  }));
  const brokenTools: BrokenToolSummary[] = x.toolSet.errors.map((e) => ({
    index: e.index,
    name: e.name,
    message: e.message,
    ...(e.problems ? { problems: e.problems } : {}),
  }));
  return {
    providers,
    provider: s.provider,
    model: s.model,
    runtime: runtimeKindOf(s),
    mode: s.mode,
    tools,
    brokenTools,
    trusted: x.trusted,
    busy: x.busy,
    conversationId: x.conversation?.id,
    conversationTitle: x.conversation?.meta.title,
    version: x.version,
    maxImagePixels: s.maxImagePixels,
  };
}

/** The host state's `python`: which interpreter the folder's guest runs (core/runtime/local/pythonEnv.ts). */
export function pythonStateOf(env: PythonEnv | undefined): HostState['python'] {
  return env ? { label: env.label, path: env.python, source: env.source } : undefined;
}
