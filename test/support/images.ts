/**
 * Real small images for the vision tests, made by Pillow in Debian's /usr/bin/python3 (installed by .ci/run),
 * and hand-built execution items that show them, as the local and Jupyter runtimes report them.
 */
import { execFileSync } from 'node:child_process';
import type { AttachedImage, CodeInterpreterCallItem, CodeOutput, DisplayOutput, FunctionCallItem, FunctionCallOutputItem } from '../../src/common/events';

const PYTHON = '/usr/bin/python3';

/** Base64 images of the given sizes and formats (PNG by default; `options` go to Pillow's save), each a different colour. */
export function makeImages(
  specs: { width: number; height: number; format?: 'PNG' | 'JPEG' | 'GIF' | 'WEBP' | 'BMP'; options?: Record<string, boolean | number> }[],
): string[] {
  const script = [
    'import base64, io, json, sys',
    'from PIL import Image',
    'out = []',
    'for i, s in enumerate(json.load(sys.stdin)):',
    '    img = Image.new("RGB", (s["width"], s["height"]), ((37 * i) % 256, (91 * i) % 256, 200))',
    '    buf = io.BytesIO()',
    '    img.save(buf, s.get("format") or "PNG", **s.get("options", {}))',
    '    out.append(base64.b64encode(buf.getvalue()).decode())',
    'print(json.dumps(out))',
  ].join('\n');
  let text: string;
  try {
    text = execFileSync(PYTHON, ['-c', script], { input: JSON.stringify(specs), encoding: 'utf8' });
  } catch (err) {
    throw new Error(`These tests make their images with Pillow in ${PYTHON} (apt-get install python3-pil): ${(err as Error).message}`);
  }
  return JSON.parse(text) as string[];
}

export function pngDisplay(data: string, extra: Partial<DisplayOutput> = {}): DisplayOutput {
  return { type: 'display', data: { 'image/png': data, 'text/plain': '<Figure size 640x480 with 1 Axes>' }, ...extra };
}

/** A DataFrame as the guest library shows it: HTML for the panel, plain text, and the compact summary for the model. */
export function tableDisplay(): DisplayOutput {
  return {
    type: 'display',
    result: true,
    data: {
      'text/html':
        '<table border="1" class="dataframe"><thead><tr><th></th><th>month</th><th>revenue</th></tr></thead><tbody><tr><th>0</th><td>Jan</td><td>10</td></tr></tbody></table><script>alert(1)</script>',
      'text/plain': '  month  revenue\n0   Jan       10\n1   Feb       12',
    },
    summary:
      'DataFrame: 2 rows × 2 columns (month: object, revenue: int64)\n\n|    | month   |   revenue |\n|---:|:--------|----------:|\n|  0 | Jan     |        10 |\n|  1 | Feb     |        12 |',
  };
}

export function svgDisplay(): DisplayOutput {
  return {
    type: 'display',
    data: { 'image/svg+xml': '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>', 'text/plain': '<SVG>' },
  };
}

/** An execution item of the local runtime with these outputs. */
export function execItem(outputs: CodeOutput[], extra: Partial<CodeInterpreterCallItem> = {}): CodeInterpreterCallItem {
  return {
    type: 'code_interpreter_call',
    id: 'exec_fixture',
    status: 'completed',
    code: 'plot()',
    runtime: 'local',
    outputs,
    exit_code: 0,
    value: null,
    ...extra,
  };
}

/** The images an execution kept with its result, as the agent loop attaches them. */
export function attached(data: string, width: number, height: number, execution: number, mime = 'image/png'): AttachedImage {
  return { mime_type: mime, data, width, height, source: `execution ${execution}` };
}

/** A code call and its result with images, as a conversation holds them (call ids repeat on purpose). */
export function executionTurn(
  n: number,
  images: AttachedImage[],
  output = `{"status":"completed","execution":${n},"value":null}`,
): [FunctionCallItem, FunctionCallOutputItem] {
  return [
    {
      type: 'function_call',
      id: `fc_${n}`,
      call_id: `call_${n}`,
      name: 'execute_tool_code',
      arguments: JSON.stringify({ code: `plot(${n})` }),
      status: 'completed',
    },
    { type: 'function_call_output', id: `out_${n}`, item_id: `fc_${n}`, call_id: `call_${n}`, name: 'execute_tool_code', output, images },
  ];
}
