/**
 * Entry point of the chat panel webview (bundled by esbuild to dist/webview.js as an IIFE; the CSS it
 * imports becomes dist/webview.css). Runs in the browser; imports only src/common.
 */
import './styles.css';
import type { HostState } from '../common/protocol';
import { App, type PanelState } from './app';
import { connectHost } from './vscodeApi';

function readInitialHostState(): HostState | undefined {
  const el = document.getElementById('codeact-initial-state');
  if (!el?.textContent) return undefined;
  try {
    const parsed = JSON.parse(el.textContent) as unknown;
    return parsed && typeof parsed === 'object' ? (parsed as HostState) : undefined;
  } catch {
    return undefined;
  }
}

function start(): void {
  const api = connectHost<PanelState>();
  window.addEventListener('error', (e) => api.post({ type: 'webviewError', message: `${e.message} (${e.filename}:${e.lineno})` }));
  window.addEventListener('unhandledrejection', (e) => api.post({ type: 'webviewError', message: `Unhandled rejection: ${String(e.reason)}` }));
  const root = document.getElementById('app') ?? document.body.appendChild(document.createElement('div'));
  root.id = 'app';
  root.classList.add('app');
  const app = new App(root, api, readInitialHostState());
  (window as unknown as { codeact?: { app: App } }).codeact = { app };
}

if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', start);
else start();
