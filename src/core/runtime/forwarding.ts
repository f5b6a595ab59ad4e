/**
 * A runtime that runs code its own way and is otherwise the runtime it wraps: its kind, its sessions, its
 * variables and its disposal are the inner runtime's. Code review (the person sees the code first) and the
 * agent working in a notebook (each execution a cell) are such wrappers.
 */
import type { Runtime } from './types';

export function forwardingRuntime(inner: Runtime, execute: Runtime['execute']): Runtime {
  return {
    kind: inner.kind,
    statePersists: inner.statePersists,
    keepsOutputs: inner.keepsOutputs,
    dispose: () => inner.dispose(),
    closeSession: inner.closeSession?.bind(inner),
    restartSession: inner.restartSession?.bind(inner),
    variables: inner.variables?.bind(inner),
    hasSession: inner.hasSession?.bind(inner),
    execute,
  };
}
