/**
 * Parity: the same snippets on every runtime give the same result — value, error type, message, the
 * user's line, stdout and stderr. Both runtimes run the one guest library (codeact_lib.py); this suite
 * is what keeps them from drifting again.
 *
 * Runtimes: the local guest cold and forked from the warm zygote, each without a sandbox and in
 * bubblewrap, and a kernel on a real jupyter-server. Each runs all snippets in order in one session,
 * so the state snippets check that state carries over the same way too. Every snippet also states
 * what it must give, so the suite cannot pass with all runtimes equally wrong.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import type { CodeInterpreterCallItem } from '../../src/common/events';
import { logsOf } from '../../src/common/events';
import { imageSize, rasterImage } from '../../src/common/displays';
import { JupyterRuntime } from '../../src/core/runtime/jupyter/jupyterRuntime';
import { LocalRuntime } from '../../src/core/runtime/local/localRuntime';
import { probeBubblewrap } from '../../src/core/runtime/local/sandbox';
import type { Runtime, ToolCallHandler } from '../../src/core/runtime/types';
import { findJupyterServer, startJupyterServer, type JupyterServer } from '../support/jupyterServer';

interface Expect {
  value?: unknown;
  error?: string;
  message?: RegExp | string;
  line?: number;
  stdout?: string;
  stderr?: RegExp | string;
  /** The outputs in order, as `trace()` writes them (only for snippets that show displays or write files). */
  outputs?: Array<string | RegExp>;
}

interface Snippet {
  name: string;
  code: string;
  expect: Expect;
}

const S = (name: string, code: string, expect: Expect): Snippet => ({ name, code, expect });

export const SNIPPETS: Snippet[] = [
  // values and the last expression
  S('an explicit return', 'return 1 + 1', { value: 2 }),
  S('the last expression is the value', 'a = 2\na * 21', { value: 42 }),
  S('a final statement gives null', 'a = 2', { value: null }),
  S('return None', 'return None', { value: null }),
  S('nested JSON', 'return {"a": [1, 2.5, True, None, "x"], "b": {"c": []}}', { value: { a: [1, 2.5, true, null, 'x'], b: { c: [] } } }),
  S('a big int', 'return 2 ** 62', { value: 2 ** 62 }),
  S('a docstring only', '"""just a string"""', { value: 'just a string' }),
  // output
  S('stdout and a value', 'print("hello")\nprint("world")\nreturn "ok"', { value: 'ok', stdout: 'hello\nworld\n' }),
  S('stderr apart', 'import sys\nprint("out")\nprint("err", file=sys.stderr)', { value: null, stdout: 'out\n', stderr: 'err\n' }),
  S('print without a newline', 'print("abc", end="")', { stdout: 'abc' }),
  S('unicode in and out', 'print("héllo wörld — 日本語 🎉")\nreturn "ünïcode ✓"', { value: 'ünïcode ✓', stdout: 'héllo wörld — 日本語 🎉\n' }),
  // top-level await and async forms
  S('top-level await', 'import asyncio\nawait asyncio.sleep(0)\nreturn "awaited"', { value: 'awaited' }),
  S(
    'gather without tools',
    'import asyncio\nasync def sq(i):\n    await asyncio.sleep(0)\n    return i * i\nreturn await asyncio.gather(*(sq(i) for i in range(4)))',
    { value: [0, 1, 4, 9] },
  ),
  S('async comprehension', 'import asyncio\nreturn [await asyncio.sleep(0, result=i) for i in range(3)]', { value: [0, 1, 2] }),
  S('async for at top level', 'async def gen():\n    for i in range(3):\n        yield i\ntotal = 0\nasync for v in gen():\n    total += v\ntotal', {
    value: 3,
  }),
  S(
    'async with at top level',
    'class Ctx:\n    async def __aenter__(self):\n        return 5\n    async def __aexit__(self, *a):\n        return False\nasync with Ctx() as v:\n    pass\nv',
    { value: 5 },
  ),
  // __future__ and yield
  S('from __future__ on line 1', 'from __future__ import annotations\ndef f(x: Undefined) -> Nope:\n    return x\nf(3)', { value: 3 }),
  S('a docstring, then from __future__', '"""module doc"""\nfrom __future__ import annotations\nx: NotAType = 4\nx', { value: 4 }),
  S('a top-level yield is a SyntaxError', 'a = 1\nyield a', { error: 'SyntaxError', message: "'yield' outside function", line: 2 }),
  S('a top-level yield from is a SyntaxError', 'yield from [1]', { error: 'SyntaxError', message: "'yield' outside function", line: 1 }),
  // syntax errors
  S('an unclosed bracket', 'a = 1\nb = (\n', { error: 'SyntaxError', message: "'(' was never closed", line: 2 }),
  S('invalid syntax', 'x = = 1', { error: 'SyntaxError', message: 'invalid syntax', line: 1 }),
  S('bad indentation', 'if True:\nprint(1)', { error: 'IndentationError', line: 2 }),
  // errors at run time
  S("an exception on the user's line", 'x = 1\n\ndef f(v):\n    return v / 0\n\nf(x)', { error: 'ZeroDivisionError', message: 'division by zero', line: 4 }),
  S('a KeyError message', 'd = {}\nd["missing"]', { error: 'KeyError', message: "'missing'", line: 2 }),
  S('a chained exception', 'try:\n    int("x")\nexcept ValueError as e:\n    raise RuntimeError("could not parse") from e', {
    error: 'RuntimeError',
    message: 'could not parse',
    line: 4,
  }),
  S('output before a failure is kept', 'print("step 1")\nraise ValueError("boom")', { error: 'ValueError', message: 'boom', stdout: 'step 1\n', line: 2 }),
  S('an undefined name', 'return not_defined_anywhere', { error: 'NameError', message: "name 'not_defined_anywhere' is not defined", line: 1 }),
  S('an assertion', 'assert 1 == 2, "one is not two"', { error: 'AssertionError', message: 'one is not two', line: 1 }),
  S('the recursion limit', 'def f(n):\n    return f(n + 1)\nf(0)', { error: 'RecursionError', message: /maximum recursion depth exceeded/, line: 2 }),
  // values that are not JSON
  S('an explicit non-JSON return', 'return {1, 2, 3}', { error: 'ReturnValueError', message: /returned a set value that is not JSON-serialisable/ }),
  S('a non-JSON last expression is shown', '{1, 2, 3}', { value: null, stdout: '', outputs: ['result text/plain {1, 2, 3}'] }),
  S('NaN is not JSON', 'return float("nan")', { error: 'ReturnValueError', message: /returned a float value/ }),
  S('a value over the limit', 'return "x" * 2000', {
    error: 'ReturnValueError',
    message: 'The return value is 2,002 bytes of JSON; the limit is 1,000. Return a summary (counts, the first rows, a file path) instead of the whole data.',
  }),
  // rich outputs: the same displays, in the same order, on every runtime
  S('print, display, print keep their order', 'class Md:\n    def _repr_markdown_(self):\n        return "**bold**"\nprint("a")\ndisplay(Md())\nprint("b")', {
    outputs: ['out a\n', 'display text/markdown,text/plain **bold**', 'out b\n'],
  }),
  S(
    '_repr_html_, _repr_svg_, _repr_json_ and _repr_latex_',
    [
      'class R:',
      '    def _repr_html_(self): return "<b>h</b>"',
      '    def _repr_svg_(self): return "<svg xmlns=\'http://www.w3.org/2000/svg\'/>"',
      '    def _repr_json_(self): return {"k": 1}',
      '    def _repr_latex_(self): return "$x^2$"',
      '    def __repr__(self): return "R()"',
      'display(R())',
    ].join('\n'),
    { outputs: ['display application/json,image/svg+xml,text/html,text/latex,text/plain <b>h</b>'] },
  ),
  S(
    'a _repr_mimebundle_ and a repr that raises',
    [
      'class B:',
      '    def _repr_mimebundle_(self, include=None, exclude=None): return {"text/plain": "B!", "text/markdown": "*B*"}',
      'class Bad:',
      '    def _repr_html_(self): raise ValueError("no html")',
      '    def __repr__(self): return "Bad()"',
      'display(B())',
      'display(Bad())',
    ].join('\n'),
    {
      stderr: /Bad\._repr_html_ raised ValueError/,
      outputs: ['display text/markdown,text/plain *B*', /^err \[codeact: Bad\._repr_html_ raised ValueError/, 'display text/plain Bad()'],
    },
  ),
  S('a display updated by its id', 'h = display("v1", display_id=True)\nprint("between")\nh.update("v2")', {
    outputs: ["display text/plain 'v2'", 'out between\n'],
  }),
  S('a DataFrame as the last expression: a table, and a summary for the model', 'import pandas as pd\npd.DataFrame({"a": [1, 2], "b": ["x", "y"]})', {
    value: null,
    outputs: [/^result text\/html,text\/plain +a +b\n0 +1 +x\n1 +2 +y summary: DataFrame: 2 rows × 2 columns/],
  }),
  S('plt.show() shows the figure as PNG; print after it comes after', 'import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\nprint("after")', {
    outputs: [/^display image\/png,text\/plain png \d+×\d+$/, 'out after\n'],
  }),
  S(
    'a figure left open is shown at the end of the run',
    'import matplotlib.pyplot as plt\nprint("before")\nfig, ax = plt.subplots()\nax.bar(["a", "b"], [3, 5])',
    {
      // As in a notebook: the last expression's value (a BarContainer), then the figure.
      outputs: ['out before\n', 'result text/plain <BarContainer object of 2 artists>', /^display image\/png,text\/plain png \d+×\d+$/],
    },
  ),
  S('a file the code writes is listed with its size', 'with open("parity_out.csv", "w") as f:\n    f.write("a,b\\n1,2\\n")', {
    value: null,
    outputs: ['file parity_out.csv 8'],
  }),
  // sys.exit and input
  S('sys.exit()', 'import sys\nprint("bye")\nsys.exit()', { value: null, stdout: 'bye\n' }),
  S('sys.exit(0)', 'import sys\nsys.exit(0)', { value: null }),
  S('sys.exit(3)', 'import sys\nsys.exit(3)', { error: 'SystemExit', message: '3', line: 2 }),
  S('sys.exit("message")', 'import sys\nsys.exit("stopping here")', { error: 'SystemExit', message: 'stopping here', line: 2 }),
  S('raise SystemExit', 'raise SystemExit', { value: null }),
  S('input() is not interactive', 'input("name? ")', { error: 'EOFError', message: /input\(\) has no one to answer it/, line: 1 }),
  // module-level forms inside the wrapper
  S('import *', 'from math import *\nfloor(2.5) + ceil(0.5)', { value: 3 }),
  S('a global statement', 'global gy\ngy = 5\ngy', { value: 5 }),
  S('an annotated assignment', 'ann: int = 5\nann', { value: 5 }),
  S('the walrus in a comprehension', '[last := i for i in range(3)]\nlast', { value: 2 }),
  S('match with captures', 'match {"k": [1, 2]}:\n    case {"k": [first, *rest]}:\n        pass\n[first, rest]', { value: [1, [2]] }),
  S('a decorator at top level', 'def twice(f):\n    return lambda x: f(f(x))\n@twice\ndef inc(x):\n    return x + 1\ninc(1)', { value: 3 }),
  S('return inside try/finally', 'log = []\ntry:\n    return "from try"\nfinally:\n    log.append(1)', { value: 'from try' }),
  S('__name__ is __main__', '__name__', { value: '__main__' }),
  // call_tool
  S('a tool call', 'r = await call_tool("echo", x=1)\nr', { value: { x: 1 } }),
  S('a tool call with a dict of arguments', 'await call_tool("echo", {"a": 1}, b=2)', { value: { a: 1, b: 2 } }),
  S('gathered tool calls', 'import asyncio\nrs = await asyncio.gather(*(call_tool("echo", i=i) for i in range(3)))\n[r["i"] for r in rs]', {
    value: [0, 1, 2],
  }),
  S('a tool error, caught', 'try:\n    await call_tool("fail", sku="X-1")\nexcept RuntimeError as e:\n    return str(e)', { value: 'out of stock: X-1' }),
  S("a tool error, uncaught, on the user's line", 'a = 1\nawait call_tool("fail", sku="Y-2")', {
    error: 'RuntimeError',
    message: 'out of stock: Y-2',
    line: 2,
  }),
  S('arguments that are not JSON', 'await call_tool("echo", when={1, 2})', {
    error: 'TypeError',
    message: /call_tool\('echo'\): the arguments are not JSON-serialisable/,
    line: 1,
  }),
  S('a name that is not a string', 'await call_tool(42)', {
    error: 'TypeError',
    message: 'call_tool(name, **arguments): name must be a non-empty string',
    line: 1,
  }),
  // state within the session
  S('state: define', 'counter = 10\ndef bump(n):\n    global counter\n    counter += n\n    return counter\nimport json as j', { value: null }),
  S('state: use', 'bump(5)\nj.dumps({"counter": counter})', { value: '{"counter": 15}' }),
  S('state: a class survives', 'class Point:\n    def __init__(self, x):\n        self.x = x\np = Point(3)', { value: null }),
  S('state: use the class', 'Point(4).x + p.x', { value: 7 }),
];

const handler: ToolCallHandler = async (req) => {
  if (req.name === 'echo') return req.arguments;
  if (req.name === 'fail') throw new Error(`out of stock: ${(req.arguments as { sku: string }).sku}`);
  throw new Error(`Unknown tool "${req.name}"`);
};

export interface Observed {
  value: unknown;
  error?: string;
  message?: string;
  line?: number;
  stdout: string;
  stderr: string;
  outputs?: string[];
}

/** An execution's outputs in order, one line each: text, displays (their types and text), files. */
function trace(item: CodeInterpreterCallItem): string[] {
  return item.outputs.map((o) => {
    if (o.type === 'logs') return `${o.stream === 'stderr' ? 'err' : 'out'} ${o.logs}`;
    if (o.type === 'file') return `file ${o.filename} ${o.bytes}${o.note ? ` (${o.note})` : ''}`;
    if (o.type === 'image') return 'image';
    const types = Object.keys(o.data).sort().join(',');
    const raster = rasterImage(o);
    const size = raster ? imageSize(raster.mime, raster.data) : undefined;
    const text = raster ? `png ${size?.width}×${size?.height}` : String(o.data['text/markdown'] ?? o.data['text/html'] ?? o.data['text/plain'] ?? '');
    const plain = o.data['text/html'] && !raster ? String(o.data['text/plain'] ?? '') : text;
    return `${o.result ? 'result' : 'display'} ${types} ${types.includes('text/html') && o.summary ? `${plain} summary: ${o.summary}` : text}`;
  });
}

function observe(item: CodeInterpreterCallItem): Observed {
  const rich = item.outputs.some((o) => o.type !== 'logs');
  return {
    value: item.error ? null : (item.value ?? null),
    ...(item.error ? { error: item.error.type, message: item.error.message, line: item.error.line } : {}),
    stdout: logsOf(item),
    stderr: logsOf(item, 'stderr'),
    ...(rich ? { outputs: trace(item) } : {}),
  };
}

function checkExpect(name: string, o: Observed, e: Expect): void {
  const where = `${name}: ${JSON.stringify(o)}`;
  if ('value' in e) assert.deepEqual(o.value, e.value, where);
  if (e.error) assert.equal(o.error, e.error, where);
  else assert.equal(o.error, undefined, where);
  if (e.message instanceof RegExp) assert.match(o.message ?? '', e.message, where);
  else if (e.message !== undefined) assert.equal(o.message, e.message, where);
  if (e.line !== undefined) assert.equal(o.line, e.line, where);
  if (e.stdout !== undefined) assert.equal(o.stdout, e.stdout, where);
  if (e.stderr instanceof RegExp) assert.match(o.stderr, e.stderr, where);
  else if (e.stderr !== undefined) assert.equal(o.stderr, e.stderr, where);
  if (e.outputs) {
    assert.equal(o.outputs?.length, e.outputs.length, where);
    e.outputs.forEach((want, i) => (want instanceof RegExp ? assert.match(o.outputs![i], want, where) : assert.equal(o.outputs![i], want, where)));
  }
}

/** The same interpreter for every runtime: the one the kernel runs (python3-ipykernel is Debian's). */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';
const LIMITS = { maxValueBytes: 1000 };

async function runAll(rt: Runtime, sessionId: string): Promise<Observed[]> {
  const out: Observed[] = [];
  for (const s of SNIPPETS) {
    const item = await rt.execute({ code: s.code, sessionId, timeoutMs: 30_000 }, { onToolCall: handler });
    out.push(observe(item));
  }
  return out;
}

describe('runtime parity: one guest library, the same results everywhere', function () {
  this.timeout(300_000);
  const results = new Map<string, Observed[]>();
  let server: JupyterServer | undefined;

  before(async function () {
    assert.ok(SNIPPETS.length >= 40, `the parity suite needs at least 40 snippets (has ${SNIPPETS.length})`);
    const bwrap = !(await probeBubblewrap());
    const variants: Array<[string, () => Runtime]> = [];
    for (const kind of ['none', 'bubblewrap'] as const) {
      if (kind === 'bubblewrap' && !bwrap) {
        console.log('      bubblewrap is not available here: the sandboxed variants are skipped (apt-get install bubblewrap)');
        continue;
      }
      variants.push([`local/${kind}/cold`, () => new LocalRuntime({ python: PYTHON, sandbox: { kind }, limits: LIMITS })]);
      variants.push([`local/${kind}/zygote`, () => new LocalRuntime({ python: PYTHON, sandbox: { kind }, limits: LIMITS, zygote: true })]);
    }
    for (const [name, make] of variants) {
      const rt = make();
      try {
        results.set(name, await runAll(rt, `parity-${name}`));
      } finally {
        await rt.dispose();
      }
    }
    if (findJupyterServer()) {
      server = await startJupyterServer();
      const rt = new JupyterRuntime({ url: server.url, token: server.token, limits: LIMITS });
      try {
        results.set('jupyter', await runAll(rt, 'parity-jupyter'));
      } finally {
        await rt.dispose();
      }
    } else {
      console.log('      jupyter-server is not installed: the Jupyter side of the parity suite is skipped (apt-get install jupyter-server python3-ipykernel)');
    }
  });

  after(async () => server?.stop());

  it('ran every runtime that exists here', () => {
    console.log(`      runtimes compared: ${[...results.keys()].join(', ')}`);
    assert.ok(results.has('local/none/cold') && results.has('local/none/zygote'));
    if (process.env.CI) {
      assert.ok(results.has('jupyter'), 'CI installs jupyter-server: the Jupyter side must run there');
      assert.ok(results.has('local/bubblewrap/cold'), 'CI installs bubblewrap: the sandboxed side must run there');
    }
  });

  SNIPPETS.forEach((snippet, i) => {
    it(`${snippet.name}`, () => {
      const reference = results.get('jupyter') ?? results.get('local/none/cold')!;
      checkExpect(`${snippet.name} [reference]`, reference[i], snippet.expect);
      for (const [name, observed] of results) {
        assert.deepEqual(observed[i], reference[i], `${snippet.name}: ${name} differs from the reference`);
      }
    });
  });

  it('no traceback shows a frame of ours or a host path', async () => {
    const rt = new LocalRuntime({ python: PYTHON, sandbox: { kind: 'none' } });
    try {
      const cases = [
        'a = 1\nb = (\n',
        'import json\njson.loads("{bad")',
        'await call_tool("fail", sku="Z")',
        'def f():\n    raise ValueError("x")\nf()',
        'yield 1',
      ];
      for (const code of cases) {
        const item = await rt.execute({ code }, { onToolCall: handler });
        const tb = item.error?.traceback ?? '';
        assert.ok(tb, `${code}: no traceback`);
        assert.doesNotMatch(tb, /codeact_(lib|guest|zygote|kernel)|<codeact/, `${code}: a frame of ours:\n${tb}`);
        assert.doesNotMatch(tb, /ast\.py|asyncio[/\\]|\/tmp\/|\.pyenv|\/usr\/lib\/python/, `${code}: a host path or an internal frame:\n${tb}`);
      }
    } finally {
      await rt.dispose();
    }
  });
});
