/**
 * The runtime and mode catalogue (common/runtimes.ts): it has a row for every kind and mode, the settings
 * offer what it lists, and each fact is what the code does with an item or a configuration of that kind:
 * who runs it, whether its files are read on this host, whether it installs packages, what the model is told.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { CodeActEvent, CodeInterpreterCallItem } from '../../src/common/events';
import {
  CODE_MODES,
  CONFIGURED_RUNTIMES,
  MODES,
  RUNTIMES,
  configuredRuntime,
  ourRuntimeOf,
  runtimeInfo,
  type CodeMode,
  type ConfiguredRuntime,
  type RuntimeInfo,
  type RuntimeKind,
} from '../../src/common/runtimes';
import { PROVIDER_CATALOG, runtimeKindOf } from '../../src/common/providers';
import { OutputSaver } from '../../src/cli/outputs';
import { humanPrinter } from '../../src/cli/print';
import { installOptionsFrom } from '../../src/core/config/install';
import { SETTINGS } from '../../src/core/config/keys';
import { resolveEngineConfig } from '../../src/core/config/resolve';
import { isLocalRuntimeItem } from '../../src/core/providers/shared/history';
import { executeCodeSpec, executeToolCodeSpec } from '../../src/core/tools/modelTools';

// Complete by construction: a kind or mode without its row does not compile (here and in the catalogue).
type Missing = Exclude<RuntimeKind, keyof typeof RUNTIMES> | Exclude<CodeMode, keyof typeof MODES>;
const complete: [Missing] extends [never] ? true : never = true;

const KINDS = Object.keys(RUNTIMES) as RuntimeKind[];
const pkg = JSON.parse(readFileSync(path.join(__dirname, '../../package.json'), 'utf8'));
const contributed: Record<string, { enum?: string[]; default?: unknown }> = pkg.contributes.configuration.properties;

function item(runtime: RuntimeKind, outputs: CodeInterpreterCallItem['outputs'] = []): CodeInterpreterCallItem {
  return { type: 'code_interpreter_call', id: 'exec_1', status: 'completed', code: 'x', runtime, outputs, value: null };
}

/** What `fn` writes on stdout (captured meanwhile). */
function stdoutOf(fn: () => void): string {
  let got = '';
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((s: string) => ((got += s), true)) as typeof process.stdout.write;
  try {
    fn();
  } finally {
    process.stdout.write = write;
  }
  return got;
}

describe('runtimes: one catalogue (common/runtimes.ts)', () => {
  it('has a row for every kind and mode, and codeact.runtime and codeact.mode offer what it lists', () => {
    assert.equal(complete, true);
    assert.deepEqual(KINDS, ['local', 'jupyter', 'openai', 'anthropic', 'gemini']);
    assert.deepEqual(CONFIGURED_RUNTIMES, ['local', 'jupyter'], 'ours: the runtimes the setting chooses');
    assert.deepEqual(contributed['codeact.runtime'].enum, [...CONFIGURED_RUNTIMES]);
    assert.deepEqual(contributed['codeact.mode'].enum, [...CODE_MODES]);
    assert.equal(SETTINGS.runtime.enum, CONFIGURED_RUNTIMES);
    assert.equal(SETTINGS.mode.enum, CODE_MODES);
    for (const k of KINDS) {
      const r: RuntimeInfo = RUNTIMES[k];
      assert.ok(r.label && r.icon, k);
      assert.equal(runtimeInfo(k), r);
    }
    assert.equal(runtimeInfo('a kind a saved conversation made up'), undefined);
    assert.equal(runtimeInfo('toString'), undefined, 'not a property of every object');
  });

  it("a runtime of ours has its result go back to the model as a function result; a hosted sandbox's output comes with its item", () => {
    for (const k of KINDS) {
      const ours = RUNTIMES[k].ours;
      assert.equal(isLocalRuntimeItem(item(k)), ours, k);
      const printed = stdoutOf(() =>
        humanPrinter()({ type: 'response.output_item.done', item: item(k, [{ type: 'logs', logs: 'from the item' }]) } as CodeActEvent),
      );
      assert.equal(printed, ours ? '' : 'from the item\n', `${k}: ours print their output as it streams`);
    }
  });

  it("a file's path is read on this host only where the runtime's paths are this host's", () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'codeact-runtimes-'));
    try {
      const file = path.join(dir, 'data.csv');
      writeFileSync(file, 'x,y\n');
      for (const k of KINDS) {
        const out = path.join(dir, `out-${k}`);
        const report = new OutputSaver(out).save(item(k, [{ type: 'file', filename: 'data.csv', path: file }]));
        assert.deepEqual(
          report.saved.map((s) => s.name),
          RUNTIMES[k].hostPaths ? ['exec-1-data.csv'] : [],
          k,
        );
        if (!RUNTIMES[k].hostPaths) assert.deepEqual(report.unsaved, [{ kind: 'file', name: 'data.csv', reason: 'no copy on this machine' }], k);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  describe('install_packages', () => {
    const host = { trusted: true, approve: async () => 'allowed' as const };
    const config = (runtime: ConfiguredRuntime, mode: CodeMode = 'toolCode') => ({
      ...resolveEngineConfig(() => undefined, { trusted: true }).config,
      runtime,
      mode,
    });

    it("is offered only on a runtime whose row says it installs (into the host's interpreter it runs), and never in hosted mode", () => {
      for (const k of CONFIGURED_RUNTIMES) {
        const installs = configuredRuntime(k).installs;
        if (installs === true) assert.ok(configuredRuntime(k).hostPython, `${k}: pip runs on this host, so only into the host's interpreter`);
        for (const mode of CODE_MODES) {
          const got = installOptionsFrom(config(k, mode), host);
          if (!MODES[mode].ourRuntime) assert.match(got.installUnavailable ?? '', /hosted mode/, `${k} ${mode}`);
          else if (installs === true) assert.ok(got.installer && !got.installUnavailable, `${k} ${mode}`);
          else assert.deepEqual(got, { installUnavailable: installs.unavailable }, `${k} ${mode}`);
        }
      }
    });

    it('the fact decides: a runtime that stops installing refuses, whatever its name', () => {
      const rows = RUNTIMES as unknown as Record<ConfiguredRuntime, { installs: true | { unavailable: string } }>;
      const saved = { local: rows.local.installs, jupyter: rows.jupyter.installs };
      try {
        rows.local.installs = { unavailable: 'this runtime installs nothing' };
        assert.deepEqual(installOptionsFrom(config('local'), host), { installUnavailable: 'this runtime installs nothing' });
        rows.jupyter.installs = true;
        assert.ok(installOptionsFrom(config('jupyter'), host).installer);
      } finally {
        rows.local.installs = saved.local;
        rows.jupyter.installs = saved.jupyter;
      }
    });
  });

  it('the model is told the place, state and network of the runtime it runs on (a hosted kind: the default)', () => {
    for (const k of KINDS) {
      const text = ourRuntimeOf(k).model;
      assert.equal(text, RUNTIMES[k].ours ? RUNTIMES[k].model : RUNTIMES.local.model, k);
      for (const persistent of [true, false]) {
        for (const spec of [executeToolCodeSpec([], { runtime: k, persistent }), executeCodeSpec({ runtime: k, persistent })]) {
          assert.ok(spec.description.includes(`Run Python 3 ${text.place(persistent)} `), `${k} ${spec.name}`);
          assert.equal(spec.description.includes(text.state), persistent, `${k} ${spec.name}: the state of a shared session`);
        }
        assert.ok(executeToolCodeSpec([], { runtime: k, persistent }).description.includes(text.network(persistent)), k);
      }
    }
    assert.match(ourRuntimeOf('jupyter').model.place(true), /Jupyter kernel/);
    assert.equal(executeToolCodeSpec([]).description, executeToolCodeSpec([], { runtime: 'local' }).description, 'the local guest by default');
  });

  it("a mode's items carry its runtime: ours in a mode of ours, else the provider's hosted sandbox named by its row", () => {
    for (const mode of CODE_MODES) {
      for (const runtime of CONFIGURED_RUNTIMES) {
        for (const k of KINDS) {
          const r: RuntimeInfo = RUNTIMES[k];
          if (r.ours) continue;
          // Whose sandbox it is, is said once: by the provider's row (no hosted runtime without its provider).
          const hostedBy = PROVIDER_CATALOG.filter((p) => p.hostedSandbox === k);
          assert.equal(hostedBy.length, 1, `${k} is the hosted sandbox of exactly one provider`);
          assert.equal(runtimeKindOf({ mode, provider: hostedBy[0].id, runtime }), MODES[mode].ourRuntime ? runtime : k, `${mode} ${runtime} ${k}`);
        }
        // A provider without a hosted sandbox (an OpenAI-compatible server): its code would run locally.
        assert.equal(runtimeKindOf({ mode, provider: 'openai-compatible', runtime }), MODES[mode].ourRuntime ? runtime : 'local');
      }
    }
  });
});
