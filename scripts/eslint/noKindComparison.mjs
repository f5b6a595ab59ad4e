// @ts-check
/**
 * `codeact/no-kind-comparison`: a kind's name (`'jupyter'`, `'hosted'`, `'openai-compatible'`) is compared
 * only in the module that owns the kind; elsewhere code reads a fact of the kind's catalogue
 * (docs/architecture.md, "Kinds as data"). Type-aware: it reports `===`, `!==`, `==`, `!=` and `case` with a
 * string literal on one side and, on the other, an expression whose type is one of the configured kind
 * unions (its alias, or two or more of its members: a narrowed kind). Strings of other types never match.
 *
 * Options: `{ root, kinds }`: `kinds` maps a type alias to the files that own it, the first one declaring it
 * (`RuntimeKind: ['src/common/runtimes.ts']`), paths relative to `root`.
 */
import path from 'node:path';
import ts from 'typescript';

/** @typedef {{ root: string, kinds: Record<string, string[]> }} Options */
/** @typedef {{ name: string, members: Set<string>, owners: string[] }} Kind */

/** The kinds a program holds (the webview's program holds no core module), read once per program. */
const KINDS = new WeakMap();

/**
 * @param {ts.Program} program
 * @param {Options} options
 * @returns {Kind[]}
 */
function kindsOf(program, options) {
  const known = KINDS.get(program);
  if (known) return known;
  const checker = program.getTypeChecker();
  /** @type {Kind[]} */
  const kinds = [];
  for (const [name, owners] of Object.entries(options.kinds)) {
    const file = program.getSourceFile(path.join(options.root, owners[0]));
    if (!file) continue;
    const decl = file.statements.find((s) => ts.isTypeAliasDeclaration(s) && s.name.text === name);
    const symbol = decl && ts.isTypeAliasDeclaration(decl) ? checker.getSymbolAtLocation(decl.name) : undefined;
    const members = symbol && literals(checker.getDeclaredTypeOfSymbol(symbol));
    // A renamed or moved kind must fail loudly, not switch the rule off.
    if (!members || members.size < 2) throw new Error(`codeact/no-kind-comparison: ${owners[0]} declares no union of string literals named ${name}.`);
    kinds.push({ name, members, owners });
  }
  KINDS.set(program, kinds);
  return kinds;
}

/**
 * The string literals a type is made of (undefined and null left out), or undefined when it is not only those.
 * @param {ts.Type} type
 */
function literals(type) {
  const out = new Set();
  for (const t of type.isUnion() ? type.types : [type]) {
    if (t.flags & (ts.TypeFlags.Undefined | ts.TypeFlags.Null | ts.TypeFlags.Void)) continue;
    if (!t.isStringLiteral()) return undefined;
    out.add(t.value);
  }
  return out;
}

/**
 * @param {import('estree').Node} node
 * @returns {string | undefined}
 */
function stringLiteral(node) {
  if (node.type === 'Literal' && typeof node.value === 'string') return node.value;
  if (node.type === 'TemplateLiteral' && node.expressions.length === 0) return node.quasis[0].value.cooked ?? undefined;
  return undefined;
}

/** @type {import('eslint').Rule.RuleModule} */
const rule = {
  meta: {
    type: 'suggestion',
    docs: { description: "Compare a kind's name only in the module that owns the kind; elsewhere read a fact of its catalogue." },
    schema: [
      {
        type: 'object',
        properties: { root: { type: 'string' }, kinds: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' }, minItems: 1 } } },
        required: ['root', 'kinds'],
        additionalProperties: false,
      },
    ],
    messages: {
      compared: '\'{{name}}\' is a {{kind}}: compare its names only in {{owner}}; here, read a fact of its catalogue (docs/architecture.md, "Kinds as data").',
    },
  },
  create(context) {
    /** @type {Options} */
    const options = context.options[0];
    const services = context.sourceCode.parserServices;
    const program = /** @type {ts.Program | undefined} */ (services?.program);
    if (!options || !program || !services?.esTreeNodeToTSNodeMap) return {};
    const kinds = kindsOf(program, options);
    if (!kinds.length) return {};
    const here = path.relative(options.root, context.filename).split(path.sep).join('/');
    const checker = program.getTypeChecker();

    /** The kind an expression's type is, unless this file owns it. @param {import('estree').Node} node */
    const kindOf = (node) => {
      const type = checker.getTypeAtLocation(services.esTreeNodeToTSNodeMap.get(/** @type {never} */ (node)));
      const alias = type.aliasSymbol?.name;
      const members = literals(type);
      const matched = kinds.filter((k) => k.name === alias || (members && members.size >= 2 && [...members].every((m) => k.members.has(m))));
      if (!matched.length || matched.some((k) => k.owners.includes(here))) return undefined;
      // The narrowest kind that holds it (ConfiguredRuntime before RuntimeKind).
      return matched.sort((a, b) => a.members.size - b.members.size)[0];
    };
    /** @param {import('estree').Node} at @param {string} name @param {Kind} kind */
    const report = (at, name, kind) => context.report({ node: at, messageId: 'compared', data: { name, kind: kind.name, owner: kind.owners.join(', ') } });

    return {
      BinaryExpression(node) {
        if (!['===', '!==', '==', '!='].includes(node.operator) || node.left.type === 'PrivateIdentifier') return;
        for (const [literal, other] of [
          [node.right, node.left],
          [node.left, node.right],
        ]) {
          const name = stringLiteral(literal);
          if (name === undefined || stringLiteral(other) !== undefined) continue;
          const kind = kindOf(other);
          if (kind) report(node, name, kind);
          return;
        }
      },
      SwitchStatement(node) {
        const names = node.cases.map((c) => (c.test ? stringLiteral(c.test) : undefined));
        if (names.every((n) => n === undefined)) return;
        const kind = kindOf(node.discriminant);
        if (!kind) return;
        node.cases.forEach((c, i) => {
          const name = names[i];
          if (c.test && name !== undefined) report(c.test, name, kind);
        });
      },
    };
  },
};

export default { meta: { name: 'codeact' }, rules: { 'no-kind-comparison': rule } };
