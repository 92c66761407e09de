import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lambdaRoutes } from '../../infra/local/routes.js';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { DEMO_AUTH } from '../support/demo.js';
import { type RawAnswer, rawRequest } from '../support/raw-http.js';
import { signedCall } from '../support/web-api.js';
import { LARGE_SHARE, printFigures } from './figures.js';

/**
 * Bad input over every route, generated: each answer must come (no hang), be below 500 (a
 * refusal is 4xx with a body saying why) and leave the stack serving.
 */
let stack: LocalStack;
const tried = new Map<string, { requests: number; refused: number; statuses: Set<number> }>();
const routes = lambdaRoutes();

beforeAll(async () => {
  stack = await startLocalStack({ port: 0, env: { ...LARGE_SHARE } });
});
afterAll(async () => {
  printFigures(
    'bad input (requests per class; every answer < 500, /health 200 after each class)',
    [...tried].map(([name, figures]) => ({
      class: name,
      requests: figures.requests,
      refused4xx: figures.refused,
      statuses: [...figures.statuses].sort().join('/'),
    })),
  );
  await stack?.stop();
});

function record(klass: string, answer: RawAnswer, what: string): void {
  const figures = tried.get(klass) ?? { requests: 0, refused: 0, statuses: new Set<number>() };
  tried.set(klass, figures);
  figures.requests += 1;
  figures.statuses.add(answer.status);
  if (answer.status >= 400) figures.refused += 1;
  expect(answer.status, `${klass}: no answer to ${what}`).toBeGreaterThan(0);
  expect(answer.status, `${klass}: ${what}\n${answer.head}\n${answer.body.slice(0, 300)}`).toBeLessThan(500);
  // A refusal says what is wrong (HEAD answers have no body by definition).
  if (answer.status >= 400 && !what.startsWith('HEAD ')) expect(answer.body.length).toBeGreaterThan(0);
}

/**
 * One request on a raw socket, exactly these bytes. Its `Content-Length` is right, so the server
 * needs no half-close to answer; the client keeps its side open up to the gateway's 30 s, because
 * a generated URL can be a valid request the service takes seconds over (`getData` of the 100,000
 * `DOKUMENT` rows, written to S3), and an early half-close would look like no answer.
 */
function send(head: string, body: Buffer | string = ''): Promise<RawAnswer> {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body, 'utf8');
  return rawRequest(
    stack.port,
    Buffer.concat([
      Buffer.from(`${head}Content-Length: ${bytes.length}\r\nConnection: close\r\n\r\n`, 'latin1'),
      bytes,
    ]),
    40_000,
    35_000,
  );
}

const healthy = async () => expect((await fetch(`${stack.url}/health`)).status).toBe(200);

const oddPieces = fc.oneof(
  fc.constantFrom(
    '%',
    '%G',
    '%zz',
    '%C3%28',
    '%FF',
    '%00',
    '%2F',
    '%25',
    '%E0%A4',
    '..',
    '/',
    '//',
    '\\',
    '?',
    '#',
    '[',
    ']',
    '@',
    ':',
    ';',
    '"',
    "'",
    '<',
    '>',
    '{',
    '}',
    '|',
    '^',
    '`',
    '*',
    '~',
    '+',
    '&',
    '=',
    'SUBJECT',
    'DOKUMENT',
  ),
  fc.string({ unit: 'grapheme', maxLength: 4 }),
  fc.string({ unit: 'binary', maxLength: 3 }),
);
const oddText = fc.array(oddPieces, { maxLength: 6 }).map((pieces) => pieces.join(''));
const route = fc.constantFrom(...routes);
const target = fc
  .record({ route, params: fc.array(oddText, { minLength: 2, maxLength: 2 }), query: fc.option(oddText) })
  .map(({ route: r, params, query }) => {
    let index = 0;
    const path = r.path.replace(/\{(\w+)\}/g, (_all, name: string) =>
      name === 'tenant' && index++ === 0 && params[0]!.length % 3 === 0 ? 'demo' : params[index++ % 2]!,
    );
    return { method: r.method, target: query === null ? path : `${path}?${query}` };
  });

describe('bad input over every route', () => {
  it('request lines: generated methods, targets and versions on a raw socket', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.constantFrom(
            'GET',
            'POST',
            'PUT',
            'DELETE',
            'PATCH',
            'HEAD',
            'OPTIONS',
            'TRACE',
            'BREW',
            'get',
            '',
          ),
          fc.string({ maxLength: 8 }),
        ),
        fc.oneof(
          target.map((t) => t.target),
          oddText,
          fc.constantFrom('*', '//[x]/health', 'http://[x/', 'localhost:80', 'http://localhost/health'),
        ),
        fc.constantFrom('HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1x', 'http/1.1', '', 'HTTP/1.1 extra'),
        async (method, path, version) => {
          const line = `${method} ${path} ${version}`.replace(/[\r\n]/g, '');
          record('request line', await send(`${line}\r\nHost: localhost\r\n`), line);
        },
      ),
      { numRuns: 250 },
    );
    await healthy();
  });

  it('URLs: malformed paths, percent-escapes, invalid UTF-8 and queries on every route, authenticated', async () => {
    await fc.assert(
      fc.asyncProperty(target, async ({ method, target: path }) => {
        const head = `${method} ${path.replace(/[\r\n ]/g, '%20')} HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${DEMO_AUTH}\r\n`;
        record('URL', await send(head), `${method} ${path}`);
      }),
      // A valid URL the generator once found: a whole table, seconds of work, is answered too.
      { numRuns: 400, examples: [[{ method: 'GET', target: '/demo/JsonAPI/Data/getData/DOKUMENT' }]] },
    );
    await healthy();
  });

  it('headers: huge, many, malformed, odd bytes, wrong credentials and lengths', async () => {
    const path = '/demo/JsonAPI/Data/getRowsCount/SUBJECT';
    const fixed = [
      `X-Big: ${'a'.repeat(20_000)}\r\n`,
      Array.from({ length: 500 }, (_, i) => `X-H${i}: v\r\n`).join(''),
      'Bad Header\r\n',
      ': empty-name\r\n',
      'Content-Length: -1\r\n',
      'Content-Length: 1\r\nContent-Length: 2\r\n',
      'Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n',
      'Transfer-Encoding: gzip\r\n',
      'Authorization: Basic\r\n',
      `Authorization: Basic ${'A'.repeat(8000)}\r\n`,
      'Authorization: Basic %%%%\r\n',
      'Authorization: Bearer x\r\n',
      'Host: \r\n',
    ];
    for (const headers of fixed) {
      const answer = await rawRequest(
        stack.port,
        `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${headers}Connection: close\r\n\r\n`,
      );
      record('headers', answer, headers.slice(0, 60));
    }
    await fc.assert(
      fc.asyncProperty(
        fc.string({ unit: 'binary', maxLength: 40 }),
        fc.string({ unit: 'binary', maxLength: 200 }),
        async (name, value) => {
          const head = `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${name.replace(/[\r\n]/g, '')}: ${value.replace(/[\r\n]/g, '')}\r\nAuthorization: Basic ${Buffer.from(value).toString('base64')}\r\n`;
          record(
            'headers',
            await rawRequest(stack.port, Buffer.from(`${head}Connection: close\r\n\r\n`, 'utf8')),
            `${name}: ${value}`,
          );
        },
      ),
      { numRuns: 150 },
    );
    await healthy();
  });

  it('wrong methods on every route', async () => {
    for (const r of routes) {
      for (const method of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'].filter(
        (m) => m !== r.method,
      )) {
        const path = r.path.replace('{tenant}', 'demo').replace(/\{\w+\}/g, 'SUBJECT');
        record(
          'wrong method',
          await send(`${method} ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${DEMO_AUTH}\r\n`),
          `${method} ${path}`,
        );
      }
    }
    await healthy();
  });

  it('multipart: truncated, odd boundaries, odd parts, random bytes to setFile', async () => {
    const part = fc.record({
      name: fc.constantFrom('file', 'other', '', 'file"', 'fi\u00e9le'),
      filename: fc.option(
        fc.oneof(fc.string({ maxLength: 20 }), fc.constantFrom('a.txt', '../../x', '', 'ž.pdf')),
      ),
      type: fc.option(fc.constantFrom('text/plain', 'application/octet-stream', '', 'x')),
      content: fc.uint8Array({ maxLength: 300 }),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.constantFrom('b', 'xyz', '', '"q"', '----x'), fc.string({ minLength: 1, maxLength: 75 })),
        fc.array(part, { maxLength: 3 }),
        fc.boolean(),
        fc.option(fc.nat()),
        fc.constantFrom('\r\n', '\n'),
        fc.constantFrom(
          'multipart/form-data; boundary=',
          'multipart/form-data;boundary=',
          'multipart/mixed; boundary=',
          'multipart/form-data',
          'text/plain; boundary=',
        ),
        async (boundary, parts, closed, cutAt, eol, type) => {
          const chunks: Buffer[] = [];
          for (const p of parts) {
            const disposition = `Content-Disposition: form-data; name="${p.name}"${p.filename === null ? '' : `; filename="${p.filename}"`}`;
            chunks.push(
              Buffer.from(
                `--${boundary}${eol}${disposition}${eol}${p.type === null ? '' : `Content-Type: ${p.type}${eol}`}${eol}`,
              ),
            );
            chunks.push(Buffer.from(p.content), Buffer.from(eol));
          }
          if (closed) chunks.push(Buffer.from(`--${boundary}--${eol}`));
          let body = Buffer.concat(chunks);
          if (cutAt !== null && body.length > 0) body = body.subarray(0, cutAt % body.length);
          const head = `POST /demo/JsonAPI/File/setFile HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${DEMO_AUTH}\r\nContent-Type: ${type}${boundary.replace(/[\r\n]/g, '')}\r\n`;
          record(
            'multipart',
            await send(head, body),
            `${type}${boundary} (${parts.length} parts, ${body.length} B)`,
          );
        },
      ),
      { numRuns: 150 },
    );
    await healthy();
  });

  it('Web API: JSON and XML edge cases and invalid UTF-8, signed and unsigned', async () => {
    const xml = fc.oneof(
      fc.constantFrom(
        '<request><vlTyp>1001</vlTyp></request>',
        '<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x "y">]><request><vlTyp>&x;</vlTyp></request>',
        '<request><vlTyp>1001</vlTyp><vlTyp>1</vlTyp></request>',
        '<request><vlTyp>&#0;</vlTyp></request>',
        '<request><vlTyp>&undefined;</vlTyp></request>',
        '<request>',
        '<a><b><c><d><e><f><g><h><i><j><k></k></j></i></h></g></f></e></d></c></b></a>',
        '<request xmlns="urn:x"><vlTyp>1001</vlTyp><params><nazev>alfa</nazev></params></request>',
      ),
      fc.string({ maxLength: 200 }).map((s) => `<request><vlTyp>${s}</vlTyp></request>`),
    );
    const json = fc.oneof(
      fc.json({ maxDepth: 4 }),
      fc.constantFrom(
        '{"vltyp":1001,"vltyp":1}',
        '{"vltyp":1e999}',
        '{"vltyp":"1001"}',
        '{"vltyp":-1}',
        '{"vltyp":997,"params":[{"id":"x"}]}',
        '[',
        '{"vltyp":1001,"params":{}}',
        '\ufeff{"vltyp":1001}',
      ),
      fc
        .record({
          vltyp: fc.oneof(fc.integer(), fc.constantFrom(1001, 997, 9001, 9002)),
          params: fc.anything({ maxDepth: 2 }),
        })
        .map((v) => JSON.stringify(v)),
    );
    const body = fc.oneof(
      json.map((text) => ({ bytes: Buffer.from(text), type: 'application/json' })),
      xml.map((text) => ({ bytes: Buffer.from(text), type: 'application/xml' })),
      fc.uint8Array({ maxLength: 200 }).map((bytes) => ({
        bytes: Buffer.concat([
          Buffer.from('{"vltyp":"'),
          Buffer.from(bytes),
          Buffer.from([0xff, 0xfe, 0xc3]),
          Buffer.from('"}'),
        ]),
        type: 'application/json',
      })),
      fc
        .constantFrom(
          'text/plain',
          'application/x-www-form-urlencoded',
          '',
          'application/json; charset=latin1',
        )
        .map((type) => ({ bytes: Buffer.from('{"vltyp":1001}'), type })),
    );
    await fc.assert(
      fc.asyncProperty(
        body,
        fc.boolean(),
        fc.constantFrom('getData', 'getDataAsync'),
        async ({ bytes, type }, signed, operation) => {
          const headers = signed
            ? signedCall(bytes, { contentType: type }).headers
            : { 'content-type': type, 'x-api-key': 'demo-api-key' };
          const head = `POST /demo/WebAPI/${operation} HTTP/1.1\r\nHost: localhost\r\n${Object.entries(
            headers,
          )
            .filter(([, v]) => v !== '')
            .map(([k, v]) => `${k}: ${v}\r\n`)
            .join('')}`;
          record(
            'Web API body',
            await send(head, bytes),
            `${operation} ${type} ${bytes.toString('latin1').slice(0, 80)}`,
          );
        },
      ),
      { numRuns: 200 },
    );
    await healthy();
  });

  it('oversized bodies to every POST route and the local routes', async () => {
    const big = Buffer.alloc(11 * 1024 * 1024, 0x61);
    const posts = [
      ...routes.filter((r) => r.method === 'POST').map((r) => r.path.replace('{tenant}', 'demo')),
      '/_local/documents/received',
    ];
    for (const path of posts) {
      const answer = await send(
        `POST ${path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: ${DEMO_AUTH}\r\nContent-Type: application/json\r\n`,
        big,
      );
      record('oversized body', answer, path);
      expect(answer.status, path).toBe(413);
    }
    await healthy();
  });
});
