/**
 * The CLI's setting flags are made from one table (core/config/keys.ts, SETTING_FLAGS): each command parses
 * the flags the table gives it, its usage lists exactly what it parses, and a flag's value sets its setting
 * (typed, checked, its errors naming the flag).
 */
import * as assert from 'node:assert/strict';
import { SETTING_FLAGS, SETTINGS, type FlagCommand, type SettingFlag, type SettingKey, type SettingName } from '../../src/core/config/keys';
import { resolveEngineConfig } from '../../src/core/config/resolve';
import { cliSettingsReader } from '../../src/core/config/workspaceFile';
import { UsageError } from '../../src/cli/args';
import { CHAT_OPTIONS, CHAT_USAGE } from '../../src/cli/chat';
import { commandOptions, flagFor, flagSettings } from '../../src/cli/flags';
import { RUN_OPTIONS, RUN_USAGE } from '../../src/cli/run';

const COMMANDS: Record<FlagCommand, { options: Record<string, { type: string; short?: string }>; usage: string }> = {
  run: { options: RUN_OPTIONS, usage: RUN_USAGE },
  chat: { options: CHAT_OPTIONS, usage: CHAT_USAGE },
};

const FLAGGED = (Object.keys(SETTING_FLAGS) as SettingName[]).flatMap((key) => {
  const flag: SettingFlag | null = SETTING_FLAGS[key];
  return flag ? [{ key, flag, spec: SETTINGS[key] as SettingKey }] : [];
});

/** A value of the setting other than its default, as typed on the command line. */
function sample(spec: SettingKey): string | boolean {
  if (spec.enum) return spec.enum.find((v) => v !== spec.default)!;
  if (spec.type === 'boolean') return true;
  if (spec.type === 'number') return String(spec.maximum ?? (spec.default as number) + 1);
  return 'x-from-the-flag';
}

describe('CLI flags: made from keys.ts', () => {
  it('each command parses the setting flags keys.ts gives it, with their short letters and value types', () => {
    assert.ok(FLAGGED.length >= 13, 'the flags of today');
    for (const [command, { options }] of Object.entries(COMMANDS)) {
      for (const { key, flag, spec } of FLAGGED) {
        const option = options[flag.name];
        if (!flag.commands.includes(command as FlagCommand)) continue;
        assert.ok(option, `codeact ${command} --${flag.name} (codeact.${key})`);
        assert.equal(option.type, spec.type === 'boolean' ? 'boolean' : 'string', `--${flag.name}`);
        assert.equal(option.short, flag.short, `--${flag.name}`);
      }
    }
    assert.ok(!('provider' in RUN_OPTIONS), 'codeact run takes no --provider');
  });

  it("each command's usage lists exactly the flags it parses (and every enum's values)", () => {
    for (const [command, { options, usage }] of Object.entries(COMMANDS)) {
      const listed = new Set([...usage.matchAll(/(?<![\w-])--([a-z][a-z-]*)/g)].map((m) => m[1]));
      const parsed = new Set(Object.keys(options).filter((n) => n !== 'help'));
      assert.deepEqual([...listed].sort(), [...parsed].sort(), `codeact ${command}`);
      for (const { flag, spec } of FLAGGED)
        if (spec.enum && flag.commands.includes(command as FlagCommand)) assert.ok(usage.includes(`--${flag.name} ${spec.enum.join('|')}`), `--${flag.name}`);
    }
  });

  it('a flag sets its setting, of its type, above every settings file', () => {
    for (const { key, flag, spec } of FLAGGED) {
      const value = sample(spec);
      const layer = flagSettings({ [flag.name]: value });
      assert.deepEqual(Object.keys(layer), [key], `--${flag.name}`);
      assert.equal(typeof layer[key], spec.type, `--${flag.name}`);
      const { origins, ignored } = resolveEngineConfig(cliSettingsReader(layer, { [`codeact.${key}`]: spec.default }, {}), { trusted: true });
      assert.deepEqual(ignored, [], `--${flag.name}`);
      assert.equal(origins[key], 'flag', `--${flag.name}`);
      assert.equal(flagFor(`codeact.${key}`), `--${flag.name}`);
    }
    assert.equal(flagFor('codeact.tools'), undefined, 'a setting without a flag');
  });

  it("a flag's bad value is refused in the flag's name: not a number, not one of the values, out of range", () => {
    for (const { flag, spec } of FLAGGED) {
      if (spec.type === 'number')
        assert.throws(
          () => flagSettings({ [flag.name]: 'soon' }),
          (e: unknown) => e instanceof UsageError && e.message === `--${flag.name} must be a number, not "soon".`,
        );
      const bad = spec.enum ? 'nope' : spec.type === 'number' && spec.minimum !== undefined ? String(spec.minimum - 1) : undefined;
      if (bad === undefined) continue;
      const { ignored } = resolveEngineConfig(cliSettingsReader(flagSettings({ [flag.name]: bad }), {}, {}), { trusted: true });
      assert.equal(ignored.length, 1, `--${flag.name} ${bad}`);
      assert.equal(ignored[0].origin, 'flag');
      assert.equal(flagFor(ignored[0].key), `--${flag.name}`);
    }
  });

  it('a flag name or short letter taken twice is refused when the command is made', () => {
    assert.throws(() => commandOptions('run', { timeout: { type: 'string' } }), /the flag "timeout" is taken twice/);
    assert.throws(() => commandOptions('chat', { other: { type: 'string', short: 'm' } }), /the flag "m" is taken twice/);
    assert.doesNotThrow(() => commandOptions('run', { other: { type: 'string', short: 'm' } }), 'run has no -m');
  });
});
