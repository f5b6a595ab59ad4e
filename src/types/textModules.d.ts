/** Python sources embedded as text: esbuild's text loader in the bundle, a require hook under tsx (test/support/pyText.cjs). */
declare module '*.py' {
  const text: string;
  export default text;
}
