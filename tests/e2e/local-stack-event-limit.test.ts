import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { DEMO_AUTH } from '../support/demo.js';

// A stack of its own, at HTTP API's own time limit: local-stack.test.ts shortens the limit to
// 1.5 s for its time-out cases, and the first setFile there (its handler loaded, a 5.7 MB event
// parsed) once took longer on a loaded machine, so the gateway's 503 came instead of the
// function's 413.
let stack: LocalStack;
beforeAll(async () => {
  stack = await startLocalStack({ port: 0, database: 'embedded' });
});
afterAll(async () => {
  await stack?.stop();
});

describe("local stack: Lambda's 6 MB event limit, as HTTP API in front of Lambda", () => {
  const setFile = (bytes: number) => {
    const form = new FormData();
    form.append(
      'file',
      new Blob([Buffer.alloc(bytes, 0x61)], { type: 'application/octet-stream' }),
      'big.bin',
    );
    return fetch(`${stack.url}/demo/JsonAPI/File/setFile`, {
      method: 'POST',
      headers: { authorization: DEMO_AUTH },
      body: form,
    });
  };
  const postJson = (bytes: number) =>
    fetch(`${stack.url}/demo/WebAPI/getData`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'demo-api-key' },
      body: `{"vltyp":1001,"params":[{"nazev":"${'a'.repeat(bytes)}"}]}`,
    });

  it('refuses a binary body whose base64 event would pass 6 MB (4.7 MB file) with 413 before the function', async () => {
    const response = await setFile(4.7 * 1024 * 1024);
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({ message: 'Request Entity Too Large' });
  });

  it("lets a 4.3 MB file through to the function (setFile's own 413 names its 4 MB limit)", async () => {
    const response = await setFile(4.3 * 1024 * 1024);
    expect(response.status).toBe(413);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('file_too_large');
  });

  it('refuses a 6.1 MB text body with 413, and lets a 5.5 MB one reach the function', async () => {
    expect((await postJson(6.1 * 1024 * 1024)).status).toBe(413);
    const through = await postJson(5.5 * 1024 * 1024);
    // The function answers (the signature header is missing: 400/101), not the gateway.
    expect(through.status).toBe(400);
    expect(JSON.stringify(await through.json())).toContain('101');
  });
});
