/**
 * The flags that set settings, made from the one table of them (core/config/keys.ts, SETTING_FLAGS): the
 * options a command parses, the settings layer its values make, and the usage that lists them. Flags that
 * are not settings (--workspace, --json, --continue…) stay with their commands.
 */
import { SETTING_FLAGS, SETTINGS, type FlagCommand, type SettingFlag, type SettingKey, type SettingName } from '../core/config/keys';
import { UsageError } from './args';

const FLAGGED = (Object.keys(SETTING_FLAGS) as SettingName[]).flatMap((key) => {
  const flag: SettingFlag | null = SETTING_FLAGS[key];
  return flag ? [{ key, flag }] : [];
});

/** The settings a command takes a flag for, in the table's order. */
function flagsOf(command: FlagCommand) {
  return FLAGGED.filter((f) => f.flag.commands.includes(command));
}

type FlagOption = { type: 'string' | 'boolean'; short?: string };

/** node:util parseArgs options for the command's setting flags. */
function settingOptions(command: FlagCommand): Record<string, FlagOption> {
  const options: Record<string, FlagOption> = {};
  for (const { key, flag } of flagsOf(command))
    options[flag.name] = { type: SETTINGS[key].type === 'boolean' ? 'boolean' : 'string', ...(flag.short ? { short: flag.short } : {}) };
  return options;
}

/**
 * A command's parseArgs options: its own (not settings) and its setting flags. A name or short letter taken
 * twice is a mistake in keys.ts that would let one flag silently replace the other: it throws on load.
 */
export function commandOptions<T extends Record<string, FlagOption>>(command: FlagCommand, own: T): T & Record<string, FlagOption> {
  const settings = settingOptions(command);
  const all = [...Object.entries(own), ...Object.entries(settings)];
  const taken = (pick: (o: [string, FlagOption]) => string | undefined) => all.map(pick).filter((n): n is string => !!n);
  for (const names of [taken(([n]) => n), taken(([, o]) => o.short)]) {
    const twice = names.find((n, i) => names.indexOf(n) !== i);
    if (twice) throw new Error(`codeact ${command}: the flag "${twice}" is taken twice (core/config/keys.ts SETTING_FLAGS)`);
  }
  return { ...own, ...settings };
}

/**
 * The flag layer of the settings (setting key -> value) from parsed values: a number flag must be a number;
 * enum, minimum and maximum are checked by the resolver as for every layer (`flagFor` names the flag).
 */
export function flagSettings(values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const { key, flag } of FLAGGED) {
    const raw = values[flag.name];
    if (raw === undefined) continue;
    if (SETTINGS[key].type === 'number') {
      if (!(typeof raw === 'string' && raw.trim() && Number.isFinite(Number(raw))))
        throw new UsageError(`--${flag.name} must be a number, not ${JSON.stringify(raw)}.`);
      out[key] = Number(raw);
    } else out[key] = raw;
  }
  return out;
}

/** `--timeout` for `codeact.timeoutSeconds` (a setting without a flag: undefined). */
export function flagFor(settingKey: string): string | undefined {
  const found = FLAGGED.find((f) => `codeact.${f.key}` === settingKey);
  return found && `--${found.flag.name}`;
}

/** A setting's flag as the usage shows it: `--timeout SECONDS`, `--sandbox auto|bubblewrap|none`. */
export function flagUsage(key: SettingName): string {
  const flag: SettingFlag | null = SETTING_FLAGS[key];
  if (!flag) throw new Error(`codeact.${key} has no flag`);
  const spec: SettingKey = SETTINGS[key];
  const arg = spec.enum ? spec.enum.join('|') : flag.arg;
  return arg ? `--${flag.name} ${arg}` : `--${flag.name}`;
}

/** The command's setting flags for its usage, each `[--flag ARG]`, but those the usage shows otherwise. */
export function settingFlagsUsage(command: FlagCommand, shownElsewhere: readonly SettingName[] = []): string[] {
  return flagsOf(command)
    .filter((f) => !shownElsewhere.includes(f.key))
    .map((f) => `[${flagUsage(f.key)}]`);
}

/** The help lines of the command's setting flags. */
export function settingFlagsHelp(command: FlagCommand): string[] {
  return flagsOf(command).flatMap((f) => (f.flag.help ? [f.flag.help] : []));
}

/** Words of a usage, wrapped to `width` columns, each group on lines of its own under `indent` spaces. */
export function wrapUsage(first: string, groups: readonly (readonly string[])[], indent: number, width = 160): string {
  const lines = [first];
  const pad = ' '.repeat(indent);
  for (const group of groups) {
    let line = '';
    for (const word of group) {
      if (line && pad.length + line.length + 1 + word.length > width) {
        lines.push(pad + line);
        line = word;
      } else line = line ? `${line} ${word}` : word;
    }
    if (line) lines.push(pad + line);
  }
  return lines.join('\n');
}
