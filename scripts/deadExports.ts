/**
 * Dead exports (`npm run lint`): an export of src/** that no other file imports (src, test, bench,
 * scripts) is either dead or should not be exported. Entry points are exempt (ENTRIES). Imports are
 * followed through re-exports; a module loaded by `import()`, `require()` or named by path in a string
 * (a child process's script, an esbuild stdin) counts as using all its exports.
 * Usage: `tsx scripts/deadExports.ts` (exit 1 on a finding, or on a PENDING entry that is no longer one).
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';

const root = path.resolve(__dirname, '..');

/** Exports the hosts load by name: esbuild's entry points (esbuild.mjs) and VS Code's activate/deactivate. */
const ENTRIES: Record<string, string[] | '*'> = {
  'src/extension.ts': ['activate', 'deactivate'],
  'src/cli/main.ts': '*',
  'src/webview/main.ts': '*',
};

/**
 * Findings in files that were being restructured in parallel (issue 24), to delete after the merge, one
 * `file: name` a line. The list only shrinks: an entry that is no longer a finding fails the check.
 */
const PENDING_FILE = path.join(root, 'scripts/deadExportsPending.txt');
const PENDING: string[] = readFileSync(PENDING_FILE, 'utf8')
  .split('\n')
  .map((l) => l.trim())
  .filter((l) => l && !l.startsWith('#'));

/** JavaScript files outside the TypeScript program that may name src modules by path. */
const JS_GLOBS = ['bench', 'test', 'scripts'];

export interface DeadExport {
  file: string;
  name: string;
  line: number;
}

function program(configPath: string): ts.Program {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    configPath,
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  );
  if (!parsed) throw new Error(`cannot read ${configPath}`);
  return ts.createProgram({ rootNames: parsed.fileNames, options: { ...parsed.options, noEmit: true } });
}

function jsFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of ts.sys.readDirectory(d, ['.mjs', '.cjs', '.js'], ['**/node_modules', '**/fixtures'], undefined)) out.push(e);
  };
  walk(dir);
  return out;
}

/** The exports of src/** that nothing imports. `extraFiles` are added to the program (the lint test's own sources). */
export function deadExports(opts: { configPath?: string; root?: string; extraFiles?: string[] } = {}): DeadExport[] {
  const base = opts.root ?? root;
  const prog = program(opts.configPath ?? path.join(base, 'tsconfig.json'));
  const p = opts.extraFiles?.length
    ? ts.createProgram({ rootNames: [...prog.getRootFileNames(), ...opts.extraFiles], options: prog.getCompilerOptions(), oldProgram: prog })
    : prog;
  const checker = p.getTypeChecker();
  const rel = (f: string) => path.relative(base, f).split(path.sep).join('/');
  const files = p.getSourceFiles().filter((sf) => !sf.isDeclarationFile && !rel(sf.fileName).startsWith('..') && !rel(sf.fileName).includes('node_modules/'));
  const used = new Set<ts.Symbol>();
  const wholeModules = new Set<string>();

  const markChain = (s: ts.Symbol | undefined) => {
    for (let i = 0; s && i < 20; i++) {
      used.add(s);
      if (!(s.flags & ts.SymbolFlags.Alias)) return;
      s = checker.getImmediateAliasedSymbol(s);
    }
  };
  const resolveModule = (spec: string, from: string) => ts.resolveModuleName(spec, from, p.getCompilerOptions(), ts.sys).resolvedModule?.resolvedFileName;
  const markPathsIn = (text: string) => {
    for (const m of text.matchAll(/\bsrc\/[\w./-]+?\.ts\b/g)) wholeModules.add(m[0]);
  };

  for (const sf of files) {
    const visit = (node: ts.Node): void => {
      if (ts.isImportDeclaration(node) && node.importClause) {
        const c = node.importClause;
        if (c.name) markChain(checker.getSymbolAtLocation(c.name));
        if (c.namedBindings && ts.isNamedImports(c.namedBindings)) for (const el of c.namedBindings.elements) markChain(checker.getSymbolAtLocation(el.name));
        if (c.namedBindings && ts.isNamespaceImport(c.namedBindings) && ts.isStringLiteral(node.moduleSpecifier)) {
          const target = resolveModule(node.moduleSpecifier.text, sf.fileName);
          if (target) wholeModules.add(rel(target));
        }
      } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && node.exportClause && ts.isNamedExports(node.exportClause)) {
        // `export { a } from './b'`: the re-export uses b's a (the re-export itself is checked as an export of this file).
        for (const el of node.exportClause.elements) {
          const s = checker.getSymbolAtLocation(el.name);
          if (s && s.flags & ts.SymbolFlags.Alias) markChain(checker.getImmediateAliasedSymbol(s));
        }
        if (!rel(sf.fileName).startsWith('src/')) for (const el of node.exportClause.elements) markChain(checker.getSymbolAtLocation(el.name));
      } else if (ts.isImportTypeNode(node) && node.qualifier) {
        const q = node.qualifier;
        markChain(checker.getSymbolAtLocation(ts.isIdentifier(q) ? q : q.right));
      } else if (
        ts.isCallExpression(node) &&
        node.arguments.length &&
        ts.isStringLiteralLike(node.arguments[0]) &&
        (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))
      ) {
        const target = resolveModule(node.arguments[0].text, sf.fileName);
        if (target) wholeModules.add(rel(target));
      } else if (ts.isStringLiteralLike(node)) {
        markPathsIn(node.text);
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
  }
  for (const dir of JS_GLOBS) for (const f of jsFiles(path.join(base, dir))) markPathsIn(readFileSync(f, 'utf8'));

  const dead: DeadExport[] = [];
  for (const sf of files) {
    const file = rel(sf.fileName);
    if (!file.startsWith('src/') || wholeModules.has(file)) continue;
    const entry = ENTRIES[file];
    if (entry === '*') continue;
    const moduleSymbol = checker.getSymbolAtLocation(sf);
    if (!moduleSymbol) continue;
    for (const e of checker.getExportsOfModule(moduleSymbol)) {
      const decl = e.declarations?.[0];
      // Names that `export *` brings in are checked where they are declared.
      if (!decl || decl.getSourceFile() !== sf) continue;
      if (entry?.includes(e.name)) continue;
      // An import marks the whole alias chain, so `e` itself (a declaration or this file's re-export) is in it.
      if (used.has(e)) continue;
      dead.push({ file, name: e.name, line: sf.getLineAndCharacterOfPosition(decl.getStart()).line + 1 });
    }
  }
  return dead.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}

if (require.main === module) {
  const dead = deadExports();
  const key = (d: DeadExport) => `${d.file}: ${d.name}`;
  const found = new Set(dead.map(key));
  const problems = [
    ...dead
      .filter((d) => !PENDING.includes(key(d)))
      .map((d) => `${d.file}:${d.line}: '${d.name}' is exported but no other file imports it: delete it, or drop the export`),
    ...PENDING.filter((k) => !found.has(k)).map((k) => `scripts/deadExportsPending.txt: "${k}" is no longer a dead export: take it off the list`),
  ];
  for (const line of problems) console.error(line);
  if (problems.length) {
    console.error(`dead exports: ${problems.length} finding(s)`);
    process.exit(1);
  }
}
