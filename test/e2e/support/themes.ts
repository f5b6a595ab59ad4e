/**
 * The four themes the panel must be readable in, and switching between them as a user does.
 */
import type { ChatPanel } from './chatPanel';
import { waitUntil } from './procs';

export interface Theme {
  /** The name in "Preferences: Color Theme". */
  label: string;
  /** The `workbench.colorTheme` value. */
  setting: string;
  /** The workbench's class for the theme's kind. */
  kind: 'vs' | 'vs-dark' | 'hc-black' | 'hc-light';
  /** The class VS Code gives a webview's body in that kind of theme. */
  body: string;
  /** For file names: dark, light, hc-dark, hc-light. */
  slug: string;
}

export const THEMES: Theme[] = [
  { label: 'Dark Modern', setting: 'Default Dark Modern', kind: 'vs-dark', body: 'vscode-dark', slug: 'dark' },
  { label: 'Light Modern', setting: 'Default Light Modern', kind: 'vs', body: 'vscode-light', slug: 'light' },
  { label: 'Dark High Contrast', setting: 'Default High Contrast', kind: 'hc-black', body: 'vscode-high-contrast', slug: 'hc-dark' },
  { label: 'Light High Contrast', setting: 'Default High Contrast Light', kind: 'hc-light', body: 'vscode-high-contrast-light', slug: 'hc-light' },
];

/**
 * Switches the colour theme as a user does, with "Preferences: Color Theme" (which sets `workbench.colorTheme`
 * in the user's settings), and waits until the workbench and the chat webview show it.
 */
export async function applyTheme(panel: ChatPanel, theme: Theme, timeoutMs = 60_000): Promise<void> {
  await panel.wb.setColorTheme(theme.label, theme.kind, timeoutMs);
  await waitUntil(
    async () => (await panel.frame()).evaluate((cls) => document.body.classList.contains(cls), theme.body).catch(() => false),
    timeoutMs,
    () => `the chat webview never took the ${theme.label} theme (body class ${theme.body})`,
    200,
  );
}
