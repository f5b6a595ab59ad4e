/** The webview side of VS Code's messaging and state API, typed with the shared protocol. */
import type { WebviewToHost } from '../common/protocol';

interface RawApi {
  postMessage(message: unknown): void;
  getState(): unknown;
  setState(state: unknown): void;
}

declare global {
  // Provided by VS Code inside webviews (callable once per page).
  function acquireVsCodeApi(): RawApi;
}

export interface HostApi<S> {
  post(message: WebviewToHost): void;
  getState(): S | undefined;
  setState(state: S): void;
}

export function connectHost<S>(): HostApi<S> {
  let raw: RawApi;
  if (typeof acquireVsCodeApi === 'function') {
    raw = acquireVsCodeApi();
  } else {
    // Opened outside VS Code (a plain browser while developing): keep state in memory, log messages.
    let state: unknown;
    raw = {
      postMessage: (m) => console.info('[codeact webview → host]', m),
      getState: () => state,
      setState: (s) => {
        state = s;
      },
    };
  }
  return {
    post: (message) => raw.postMessage(message),
    getState: () => raw.getState() as S | undefined,
    setState: (state) => raw.setState(state),
  };
}
