/**
 * Each provider's label and suggested models, for pickers and messages (the registry's). No `vscode` here,
 * so the session's logic (./session) can use them in plain Node tests too.
 */
import { PROVIDER_CATALOG } from '../core/providers/shared/catalog';
import { PROVIDERS } from '../core/providers/registry';
import type { ProviderId } from '../core/providers/shared/types';

/** Each provider's label, for pickers and messages (the registry's). */
export const PROVIDER_NAMES: Record<ProviderId, string> = Object.fromEntries(PROVIDERS.map((p) => [p.id, p.label])) as Record<ProviderId, string>;

/** Each provider's suggested models (the registry's). */
export const DEFAULT_MODELS: Record<ProviderId, readonly string[]> = Object.fromEntries(PROVIDER_CATALOG.map((p) => [p.id, p.defaultModels])) as Record<ProviderId, readonly string[]>;
