import { readFile } from 'node:fs/promises';
import spectralCore, { type RulesetDefinition } from '@stoplight/spectral-core';
import spectralParsers from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { OPENAPI_FILE } from '../../infra/local/docs-routes.js';
import { unknownSchemaKeys, valuelessFlowEntries } from '../support/openapi-keywords.js';
import { redoclyProblems, redoclyProblemsOf } from '../support/redocly-lint.js';

// Both are CommonJS: their named exports arrive on the default one under Node's ESM loader.
const { Document, Spectral } = spectralCore;
const { Yaml } = spectralParsers;
const ERROR = 0;

const text = await readFile(OPENAPI_FILE, 'utf8');

/** Spectral's `oas` ruleset (what `spectral lint` runs by default on an OpenAPI document). */
async function spectralErrors(yamlText: string): Promise<string[]> {
  const spectral = new Spectral();
  // As `spectral lint` with `extends: spectral:oas`: the ruleset's recommended rules.
  spectral.setRuleset({ extends: [[oas as RulesetDefinition, 'recommended']] });
  const results = await spectral.run(new Document(yamlText, Yaml, OPENAPI_FILE));
  return results
    .filter((result) => result.severity === ERROR)
    .map(
      (result) =>
        `${result.range.start.line + 1}: ${result.code} ${result.path.join('.')}: ${result.message}`,
    );
}

describe('docs/openapi.yaml, linted', () => {
  it("has no error under Spectral's oas ruleset", async () => {
    expect(await spectralErrors(text)).toEqual([]);
  });

  it('Spectral finds an error when there is one (an XML example that is not its schema)', async () => {
    const broken = text.replace('example: { vlTyp: 7, params: [{ kodUctu: "3" }] }', 'example: <data/>');
    expect(broken).not.toBe(text);
    expect((await spectralErrors(broken)).join('\n')).toContain('oas3-valid-media-example');
  });

  it("has no problem, error or warning, under redocly's recommended rules", async () => {
    expect(await redoclyProblems(OPENAPI_FILE)).toEqual([]);
  });

  it('redocly finds a problem when there is one (a webhook without security, an operation without summary)', async () => {
    const document = parse(text) as {
      webhooks: Record<string, { post: Record<string, unknown> }>;
      paths: Record<string, Record<string, Record<string, unknown>>>;
    };
    delete document.webhooks.documentReceived!.post.security;
    delete document.paths['/{tenant}/WebAPI/test']!.get!.summary;
    const problems = (await redoclyProblemsOf(document)).join('\n');
    expect(problems).toContain('error security-defined #/webhooks/documentReceived/post');
    expect(problems).toContain('error operation-summary');
  });

  it('has no YAML flow-mapping entry without a value (a description cut at its comma)', () => {
    expect(valuelessFlowEntries(text)).toEqual([]);
    expect(valuelessFlowEntries('a: { description: one, two }\n')).toEqual(['1: two']);
  });

  it('has no key in a schema that JSON Schema 2020-12 or OpenAPI 3.1 does not define', () => {
    expect(unknownSchemaKeys(parse(text))).toEqual([]);
    expect(
      unknownSchemaKeys({
        components: { schemas: { A: { properties: { b: { type: 'string', 'c.': null } } } } },
      }),
    ).toEqual(['/components/schemas/A/properties/b/c.']);
  });
});
