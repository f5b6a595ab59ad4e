/** CodeAct's version, from package.json (esbuild defines it; "development" when run from the sources). */
declare const __CODEACT_VERSION__: string | undefined;
export const CODEACT_VERSION: string = typeof __CODEACT_VERSION__ === 'string' ? __CODEACT_VERSION__ : 'development';
