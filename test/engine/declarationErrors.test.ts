/**
 * Declaration errors are actionable: a broken `codeact.tools` entry names the tool, the
 * field, the bad value (`"type": "objekt"`), a plain-language reason and the fix; the validator's own wording
 * ("data/type must be equal to one of the allowed values", "must be array", "anyOf") never reaches the user.
 */
import * as assert from 'node:assert/strict';
import { formatDeclarationProblem, type DeclarationProblem } from '../../src/common/tools';
import { compileSchema, SchemaError } from '../../src/core/gateway/schema';
import { closestType } from '../../src/core/gateway/schemaProblems';
import { formatDeclarationError } from '../../src/core/gateway/toolSet';
import { DECLARATION_PROBLEMS, loadTools } from '../../src/core/tools/declarations';

/** Words of the validator that must never reach the user. */
const RAW =
  /data\/|must be equal to one of the allowed values|must match a schema in anyOf|must be array|must be object|must NOT have|schema is invalid|invalid JSON Schema/;

function errorOf(decl: unknown): { text: string; problems: DeclarationProblem[] } {
  const { tools, errors } = loadTools([{ name: 'good', command: ['true'] }, decl], { workspace: '/tmp' });
  assert.deepEqual(
    tools.map((t) => t.name),
    ['good'],
    'the valid declaration still works',
  );
  assert.equal(errors.length, 1);
  const text = formatDeclarationError(errors[0]);
  assert.doesNotMatch(text, RAW, text);
  return { text, problems: errors[0].problems ?? [] };
}

describe('declaration errors are actionable', () => {
  it('"type": "objekt": names the tool, the field, the bad value, why, and the fix (did you mean "object")', () => {
    const { text, problems } = errorOf({ name: 'search_orders', command: ['true'], inputSchema: { type: 'objekt', properties: { q: { type: 'string' } } } });
    assert.equal(
      text,
      'codeact.tools[1] (search_orders): In inputSchema, "type": "objekt" is not a JSON Schema type. ' +
        'Fix: write "object" (the JSON Schema types are "string", "number", "integer", "boolean", "object", "array" and "null").',
    );
    assert.deepEqual(problems, [
      {
        field: 'inputSchema.type',
        value: '"objekt"',
        reason: 'is not a JSON Schema type',
        fix: 'write "object" (the JSON Schema types are "string", "number", "integer", "boolean", "object", "array" and "null")',
      },
    ]);
  });

  const cases: [string, unknown, RegExp][] = [
    [
      'a nested type',
      { properties: { q: { type: 'strin' } } },
      /In inputSchema\.properties\.q, "type": "strin" is not a JSON Schema type\. Fix: write "string"/,
    ],
    [
      'a bad item of a type list',
      { properties: { n: { type: ['integer', 'nul'] } } },
      /"type": \["integer","nul"\] lists "nul", which is not a JSON Schema type\. Fix: write "null"/,
    ],
    ['a Python type name', { properties: { t: { type: 'dict' } } }, /"type": "dict" is not a JSON Schema type\. Fix: write "object"/],
    [
      'required as a string',
      { type: 'object', required: 'q' },
      /"required": "q" must be a list \(a JSON array\)\. Fix: list the names of the required properties, for example "required": \["query"\]/,
    ],
    ['required twice', { required: ['a', 'a'] }, /"required": \["a","a"\] lists the same value twice\. Fix: list each one once/],
    ['properties not an object', { properties: 5 }, /"properties": 5 must be an object\. Fix: map each name to its schema/],
    ['additionalProperties as text', { additionalProperties: 'no' }, /"additionalProperties": "no" must be a schema \(an object\), true or false/],
    ['a negative length', { minLength: -1 }, /"minLength": -1 must be 0 or more\. Fix: write a whole number/],
    [
      'a pattern that is not text',
      { properties: { s: { pattern: 5 } } },
      /"pattern": 5 must be a string \(in quotes\)\. Fix: write a regular expression as a string/,
    ],
    ['a dangling $ref', { $ref: '#/$defs/nope' }, /"\$ref": "#\/\$defs\/nope" points at nothing in this schema\. Fix: define it under "\$defs"/],
    [
      'an external $ref',
      { properties: { a: { $ref: 'https://x.example/s.json' } } },
      /"\$ref": "https:\/\/x\.example\/s\.json" is an external \$ref, which is not allowed/,
    ],
    [
      'an unsupported draft',
      { $schema: 'http://json-schema.org/draft-04/schema#' },
      /"\$schema": "http:\/\/json-schema\.org\/draft-04\/schema#" is a JSON Schema version CodeAct does not support\. Fix: use draft 2020-12/,
    ],
    ['not a schema at all', 'string', /"inputSchema": "string" is not a schema\. Fix: write an object/],
  ];
  for (const [what, schema, expected] of cases) {
    it(`inputSchema with ${what}`, () => {
      const { text } = errorOf({ name: 'tool_x', command: ['true'], inputSchema: schema });
      assert.match(text, /^codeact\.tools\[1\] \(tool_x\): /);
      assert.match(text, expected);
    });
  }

  it("the declaration's own fields: name, approval, expose, description, each with the value and the fix", () => {
    assert.match(errorOf({ name: '9 lives', command: ['true'] }).text, /"name": "9 lives" is not a valid tool name\. Fix: start with a letter/);
    assert.match(errorOf({ command: ['true'] }).text, /"name" is missing\. Fix: give the tool a name/);
    assert.match(
      errorOf({ name: 'a', command: ['true'], approval: 'sometimes' }).text,
      /"approval": "sometimes" is not an approval policy\. Fix: use "auto", "ask" or "deny"\./,
    );
    assert.match(
      errorOf({ name: 'a', command: ['true'], expose: 'hidden' }).text,
      /"expose": "hidden" is not a way to offer the tool\. Fix: use "code", "direct" or "both"\./,
    );
    assert.match(errorOf({ name: 'a', command: ['true'], description: 42 }).text, /"description": 42 is not text\. Fix: write the description as a string\./);
    assert.match(
      errorOf({ name: 'good', command: ['true'] }).text,
      /"name": "good" is declared twice \(also at codeact\.tools\[0\]\)\. Fix: rename one of them\./,
    );
    assert.match(errorOf(7).text, /The declaration 7 is not an object\. Fix: write an object with "name"/);
    // The wording above is the loader's one (DECLARATION_PROBLEMS), which the other tests compare against.
    const cases: [unknown, DeclarationProblem][] = [
      [{ name: '9 lives', command: ['true'] }, DECLARATION_PROBLEMS.invalidName('"9 lives"')],
      [{ command: ['true'] }, DECLARATION_PROBLEMS.missingName],
      [{ name: 'a', command: ['true'], description: 42 }, DECLARATION_PROBLEMS.notText('42')],
      [{ name: 'a' }, DECLARATION_PROBLEMS.noSource],
      [7, DECLARATION_PROBLEMS.notAnObject('7')],
    ];
    for (const [decl, problem] of cases) assert.ok(errorOf(decl).text.includes(formatDeclarationProblem(problem)), errorOf(decl).text);
  });

  it('lists every problem of one declaration, each a sentence of its own', () => {
    const { text, problems } = errorOf({ name: 'multi', command: ['true'], inputSchema: { type: 'objekt', required: 'q' }, approval: 'maybe' });
    assert.equal(problems.length, 3);
    assert.deepEqual(
      problems.map((p) => p.field),
      ['inputSchema.type', 'inputSchema.required', 'approval'],
    );
    assert.equal(text.match(/ Fix: /g)?.length, 3);
  });

  it('compileSchema throws a SchemaError with the problems; the message has no validator wording', () => {
    try {
      compileSchema({ type: 'object', properties: { q: { type: 'strng' } } });
      assert.fail('should throw');
    } catch (e) {
      assert.ok(e instanceof SchemaError);
      assert.doesNotMatch(e.message, RAW);
      assert.deepEqual(
        e.problems.map((p) => [p.field, p.value]),
        [['properties.q.type', '"strng"']],
      );
    }
  });

  it('guesses the type meant, and only when it is close', () => {
    assert.deepEqual(['objekt', 'Strng', 'int', 'bool', 'list', 'float', 'nul', 'xyz', 42].map(closestType), [
      'object',
      'string',
      'integer',
      'boolean',
      'array',
      'number',
      'null',
      undefined,
      undefined,
    ]);
  });

  it('formats a problem without a field as a sentence, and a missing field without a value', () => {
    assert.equal(formatDeclarationProblem({ reason: 'the declaration has no source', fix: 'give one' }), 'The declaration has no source. Fix: give one.');
    assert.equal(formatDeclarationProblem({ field: 'http.url', reason: 'is missing' }), 'In http, "url" is missing.');
  });
});
