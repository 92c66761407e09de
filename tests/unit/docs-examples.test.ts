import { describe, expect, it } from 'vitest';
import { examplesOf, matchesAnswer, stackSettingsOf } from '../support/docs-examples.js';

/** The reading of the docs' examples that tests/e2e/docs-examples.test.ts runs: it must catch a changed answer. */
const PAGE = [
  '# A page',
  '<!-- examples: stack COMMAND_TIMEOUT_ASYNC=2 INLINE_LIMIT_BYTES=2048 -->',
  '```sh',
  'answer=$(curl -s -F file=@examples/invoice.xml http://127.0.0.1:3000/demo/JsonAPI/File/setFile)',
  'echo "$answer"',
  '# {"fileGUID":"…","fileName":"invoice.xml","size":2496,',
  '#  "sha256":"d06030e5…"}',
  '```',
  '',
  '1. A step:',
  '',
  '   <!-- example: skip (needs an AWS account) -->',
  '   ```sh',
  '   aws sqs receive-message --queue-url "$DLQ_URL"',
  '   # later: aws sqs delete-message …',
  '   ```',
  '',
  '```json',
  '{ "not": "an example" }',
  '```',
  '<!-- example: run -->',
  '```js',
  '// a comment that is code',
  'console.log(1 + 1);',
  '// 2',
  '```',
  '```python',
  'print("not run without the mark")',
  '```',
].join('\n');

describe('Function: examplesOf', () => {
  it('reads shell blocks with their answers, skip reasons (indented ones too) and opted-in code blocks', () => {
    const [setFile, aws, js, ...rest] = examplesOf('page.md', PAGE);
    expect(rest).toEqual([]);
    expect(setFile).toMatchObject({
      line: 3,
      language: 'sh',
      answer: ['{"fileGUID":"…","fileName":"invoice.xml","size":2496,', ' "sha256":"d06030e5…"}'],
    });
    expect(setFile!.code).toBe(
      'answer=$(curl -s -F file=@examples/invoice.xml http://127.0.0.1:3000/demo/JsonAPI/File/setFile)\necho "$answer"',
    );
    expect(aws).toMatchObject({
      line: 13,
      skip: '(needs an AWS account)',
      code: 'aws sqs receive-message --queue-url "$DLQ_URL"',
    });
    expect(js).toMatchObject({
      language: 'js',
      code: '// a comment that is code\nconsole.log(1 + 1);',
      answer: ['2'],
    });
  });

  it('reads the stack settings of a page', () => {
    expect(stackSettingsOf(PAGE)).toEqual({ COMMAND_TIMEOUT_ASYNC: '2', INLINE_LIMIT_BYTES: '2048' });
    expect(stackSettingsOf('# no settings')).toEqual({});
  });
});

describe('Function: matchesAnswer', () => {
  const answer = ['{"fileGUID":"…","fileName":"invoice.xml","size":2496,', ' "sha256":"d06030e5…"}'];
  const printed =
    '{"fileGUID":"AE612AB8-BBD6-4795-943D-B34D32CF5286","fileName":"invoice.xml","size":2496,"sha256":"d06030e5927b"}\n';

  it('takes what the page shows, … standing for what varies and wrapped lines joined', () => {
    expect(matchesAnswer(answer, printed)).toBe(true);
    expect(matchesAnswer(['same'], 'same\n')).toBe(true);
    expect(matchesAnswer(['{"a":1}', '<b/>'], '{"a":1}<b/>')).toBe(true);
  });

  it('fails when the answer changes: another value, a missing or an extra part', () => {
    expect(matchesAnswer(answer, printed.replace('2496', '2497'))).toBe(false);
    expect(matchesAnswer(answer, printed.replace('"fileName":"invoice.xml",', ''))).toBe(false);
    expect(matchesAnswer(answer, `${printed}{"more":1}`)).toBe(false);
    expect(matchesAnswer(answer, '')).toBe(false);
    expect(matchesAnswer(['same'], 'not the same')).toBe(false);
    // Characters of regular expressions in an answer are themselves.
    expect(matchesAnswer(['{"rows":[1]}'], '{"rows":1}')).toBe(false);
  });
});
