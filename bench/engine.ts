/**
 * The engine as it ships, for the benchmarks: esbuild bundles this file into dist/bench-engine.js with
 * the product's settings, so the figures measure the built code (tsx, which runs the TypeScript sources,
 * wraps every function it defines in a naming helper that costs microseconds on hot paths).
 */
export { ToolGateway } from '../src/core/gateway/gateway';
export { JupyterRuntime } from '../src/core/runtime/jupyter/jupyterRuntime';
export { LocalRuntime } from '../src/core/runtime/local/localRuntime';
export { resolvePython } from '../src/core/runtime/local/python';
export { probeBubblewrap } from '../src/core/runtime/local/sandbox';
export { attachSessionHost } from '../src/core/sessionHost/launch';
