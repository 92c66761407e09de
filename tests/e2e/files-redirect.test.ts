import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { DEMO_AUTH } from '../support/demo.js';

const INLINE_LIMIT = 1024 * 1024;
let stack: LocalStack;

beforeAll(async () => {
  // setFile takes at most 4 MB, less than the default 5 MB inline limit: lower the limit to reach the 303.
  stack = await startLocalStack({ port: 0, env: { INLINE_LIMIT_BYTES: String(INLINE_LIMIT) } });
});
afterAll(async () => {
  await stack?.stop();
});

async function upload(content: Buffer, name: string) {
  const form = new FormData();
  form.append('file', new Blob([content], { type: 'application/pdf' }), name);
  const response = await fetch(`${stack.url}/demo/JsonAPI/File/setFile`, {
    method: 'POST',
    headers: { authorization: DEMO_AUTH },
    body: form,
  });
  expect(response.status).toBe(200);
  return (await response.json()) as { fileGUID: string; sha256: string };
}

const getFile = (guid: string, headers: Record<string, string> = {}) =>
  fetch(`${stack.url}/demo/JsonAPI/File/getFile/${guid}`, {
    headers: { authorization: DEMO_AUTH, ...headers },
    redirect: 'manual',
  });

describe('getFile over the inline limit (local stack, INLINE_LIMIT_BYTES=1 MiB)', () => {
  it('answers 303 to a presigned URL that serves the same bytes under the same name', async () => {
    const content = randomBytes(INLINE_LIMIT + 512 * 1024);
    const name = 'Výkres č. 7.pdf';
    const { fileGUID, sha256 } = await upload(content, name);
    const response = await getFile(fileGUID);
    expect(response.status).toBe(303);
    expect(response.headers.get('etag')).toBe(`"${sha256}"`);
    const location = response.headers.get('location')!;
    expect(location).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/.*X-Amz-Expires=900/);
    const object = await fetch(location);
    expect(object.status).toBe(200);
    const body = Buffer.from(await object.arrayBuffer());
    expect(createHash('sha256').update(body).digest('hex')).toBe(sha256);
    expect(body.equals(content)).toBe(true);
    expect(object.headers.get('content-type')).toBe('application/pdf');
    const disposition = object.headers.get('content-disposition')!;
    expect(decodeURIComponent(/filename\*=UTF-8''([^;\s]+)/.exec(disposition)![1]!)).toBe(name);
  });

  it('still answers 304 to a matching If-None-Match, and a file at the limit inline', async () => {
    const large = await upload(randomBytes(INLINE_LIMIT + 1), 'large.pdf');
    expect((await getFile(large.fileGUID, { 'if-none-match': `"${large.sha256}"` })).status).toBe(304);
    const atLimit = await upload(randomBytes(INLINE_LIMIT), 'limit.pdf');
    const response = await getFile(atLimit.fileGUID);
    expect(response.status).toBe(200);
    expect((await response.arrayBuffer()).byteLength).toBe(INLINE_LIMIT);
  });
});
