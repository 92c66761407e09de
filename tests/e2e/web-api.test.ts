import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { XMLParser } from 'fast-xml-parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { sqlOn } from '../support/demo.js';
import { envelope, type SignOptions, signedCall } from '../support/web-api.js';

let stack: LocalStack;
let registryDir: string;

beforeAll(async () => {
  // The demo tenant plus two that differ in what matters here: an XML default, an unreachable database.
  const registry = JSON.parse(await readFile('infra/local/tenants.json', 'utf8'));
  const demo = registry.tenants.demo;
  registry.tenants['demo-xml'] = { ...demo, webApi: { ...demo.webApi, DefContentType: 'application/xml' } };
  registry.tenants.offline = {
    ...demo,
    database: { kind: 'mssql', connectionString: 'mssql://svc:secret@127.0.0.1:1/ERP?connectTimeout=2000' },
  };
  registryDir = await mkdtemp(join(tmpdir(), 'web-api-e2e-'));
  const file = join(registryDir, 'tenants.json');
  await writeFile(file, JSON.stringify(registry));
  stack = await startLocalStack({ port: 0, env: { TENANT_REGISTRY_FILE: file } });
});
afterAll(async () => {
  await stack?.stop();
  if (registryDir) await rm(registryDir, { recursive: true, force: true });
});

const url = (path: string, tenant = 'demo') => `${stack.url}/${tenant}/WebAPI/${path}`;

async function post(
  body: string,
  options: SignOptions & { tenant?: string; headers?: Record<string, string> } = {},
) {
  const signed = signedCall(body, options);
  const response = await fetch(url('getData', options.tenant), {
    method: 'POST',
    headers: { ...signed.headers, ...options.headers },
    body: signed.body,
  });
  return { status: response.status, type: response.headers.get('content-type'), text: await response.text() };
}

/** The single error entry of a JSON error body. */
function errorOf(text: string): { errorCode: string; errorMessage: string } {
  const body = JSON.parse(text);
  expect(body).toMatchObject({ id: null, vlResult: -1 });
  expect(body.data).toHaveLength(1);
  return body.data[0].error[0];
}

const xmlParser = new XMLParser({ parseTagValue: false, isArray: (name) => name.startsWith('row') });

describe('Web API over HTTP (local stack)', () => {
  it('test answers {"status":"ok","version"} in JSON, and in XML per Accept', async () => {
    const json = await fetch(url('test'), { headers: { 'x-api-key': 'demo-api-key' } });
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const version = JSON.parse(await readFile('package.json', 'utf8')).version;
    expect(await json.json()).toEqual({ status: 'ok', version });

    const xml = await fetch(url('test'), {
      headers: { 'x-api-key': 'demo-api-key', accept: 'application/xml' },
    });
    expect(xml.headers.get('content-type')).toBe('application/xml; charset=utf-8');
    expect(xmlParser.parse(await xml.text()).result).toEqual({ status: 'ok', version });
  });

  it('test without x-api-key is 400/101; with an unknown or inactive key 401/102', async () => {
    const missing = await fetch(url('test'));
    expect(missing.status).toBe(400);
    expect(errorOf(await missing.text()).errorCode).toBe('101');
    for (const key of ['nobody', 'inactive-api-key']) {
      const refused = await fetch(url('test'), { headers: { 'x-api-key': key } });
      expect(refused.status).toBe(401);
      expect(errorOf(await refused.text()).errorCode).toBe('102');
    }
  });

  it('a signed JSON call answers {"id","vlResult":1,"data":[rows]}', async () => {
    const { status, type, text } = await post(envelope(1001, [{ nazev: 'alfa' }]));
    expect([status, type]).toEqual([200, 'application/json; charset=utf-8']);
    expect(JSON.parse(text)).toEqual({
      id: expect.any(Number),
      vlResult: 1,
      data: [{ id: 1, nazev: 'Alfa Trade s.r.o.', ico: '25596641', mesto: 'Praha' }],
    });
  });

  it('a signed XML call answers <result> with row<Name> elements and camelCase children', async () => {
    const { status, type, text } = await post(
      '<data><vlTyp>7</vlTyp><params><kodUctu>21</kodUctu></params></data>',
    );
    expect([status, type]).toEqual([200, 'application/xml; charset=utf-8']);
    const { result } = xmlParser.parse(text);
    expect(result.vlResult).toBe('1');
    expect(Number(result.id)).toBeGreaterThan(0);
    expect(result.data.rowUcet).toEqual([
      { kodUctu: '211000', nazev: 'Pokladna', zustatek: '48250' },
      { kodUctu: '211100', nazev: 'Pokladna EUR', zustatek: '12375.4' },
      { kodUctu: '213000', nazev: 'Ceniny', zustatek: '3400' },
    ]);
  });

  it('takes a call signed with `npm run -s sign -- <file>`, as docs/web-api-signing.md shows', async () => {
    const file = join(registryDir, 'body.xml');
    await writeFile(file, '<data><vlTyp>1001</vlTyp><params><ico>25596641</ico></params></data>\n');
    const { stdout } = await promisify(execFile)('npm', ['run', '-s', 'sign', '--', file], {
      env: { ...process.env, WEB_API_HASH: 'demo-api-hash' },
    });
    expect(stdout.trim()).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    const response = await fetch(url('getData'), {
      method: 'POST',
      headers: {
        'content-type': 'application/xml',
        'x-api-key': 'demo-api-key',
        'x-svc-signature': stdout.trim(),
      },
      body: await readFile(file),
    });
    expect(response.status).toBe(200);
    expect(xmlParser.parse(await response.text()).result.data.rowSubject[0].nazev).toBe('Alfa Trade s.r.o.');
  });

  it('answers per Accept, else in the format of the request, else in DefContentType', async () => {
    const xmlAsked = await post(envelope(1001, [{ ico: '25596641' }]), { accept: 'application/xml' });
    expect(xmlAsked.type).toBe('application/xml; charset=utf-8');
    expect(xmlParser.parse(xmlAsked.text).result.data.rowSubject[0].nazev).toBe('Alfa Trade s.r.o.');
    const jsonAsked = await post('<data><vlTyp>1001</vlTyp><params><ico>25596641</ico></params></data>', {
      accept: 'application/json',
    });
    expect(JSON.parse(jsonAsked.text).data).toEqual([
      { id: 1, nazev: 'Alfa Trade s.r.o.', ico: '25596641', mesto: 'Praha' },
    ]);
    const byDefault = await fetch(url('test', 'demo-xml'), { headers: { 'x-api-key': 'demo-api-key' } });
    expect(byDefault.headers.get('content-type')).toBe('application/xml; charset=utf-8');
  });

  describe('every row of the error table', () => {
    it('400/100: the body is not a valid envelope (bad JSON, bad XML, no vltyp, params of the wrong shape)', async () => {
      for (const body of [
        '{"vltyp":',
        '<data><vlTyp>7</vlTyp>',
        '{"params":[]}',
        '{"vltyp":7,"params":{"a":1}}',
      ]) {
        const { status, text } = await post(body, { accept: 'application/json' });
        expect(status, body).toBe(400);
        expect(errorOf(text).errorCode).toBe('100');
      }
      const xml = await post('<data><params/></data>');
      expect(xml.status).toBe(400);
      expect(xmlParser.parse(xml.text).result.data.error).toMatchObject({ errorCode: '100' });
    });

    it('400/100: a parameter number JSON cannot hold as finite is refused, never a dropped filter (issue 19)', async () => {
      // With a finite number the filter holds (no subject has ICO 1): on main 1e999 became null and
      // every subject came back.
      const filtered = await post('{"vltyp":1001,"params":[{"ico":1}]}');
      expect(filtered.status).toBe(200);
      expect(JSON.parse(filtered.text).data).toEqual([]);
      for (const body of [
        '{"vltyp":1001,"params":[{"ico":1e999}]}',
        '{"vltyp":1001,"params":[{"ico":-1e400}]}',
        '{"vltyp":1001,"params":null}',
        '{"vltyp":1001.0,"params":[]}',
        '{"vltyp":997,"params":[{"idws_journal":"01"}]}',
        '{"vltyp":997,"params":[{"idws_journal":1,"nazev":"x"}]}',
      ]) {
        const { status, text } = await post(body);
        expect([status, errorOf(text).errorCode], body).toEqual([400, '100']);
      }
      for (const body of [
        '<data><vlTyp>1001.0</vlTyp></data>',
        '<data><vlTyp>01001</vlTyp></data>',
        '<data><vlTyp>997</vlTyp><params><idwsJournal>01</idwsJournal></params></data>',
        '<data><vlTyp>997</vlTyp><params><idwsJournal>1</idwsJournal><nazev>x</nazev></params></data>',
      ]) {
        const { status, text } = await post(body);
        expect(status, body).toBe(400);
        expect(xmlParser.parse(text).result.data.error, body).toMatchObject({ errorCode: '100' });
      }
    });

    it('400/101: a required header is missing (x-api-key, x-svc-signature, Content-Type)', async () => {
      for (const [header, pattern] of [
        ['x-api-key', /x-api-key/],
        ['x-svc-signature', /x-svc-signature/],
        ['content-type', /Content-Type/],
      ] as const) {
        const signed = signedCall(envelope(1001));
        const headers = Object.fromEntries(
          Object.entries(signed.headers).filter(([name]) => name !== header),
        );
        // fetch would label a string body text/plain; bytes go without a Content-Type.
        const response = await fetch(url('getData'), {
          method: 'POST',
          headers,
          body: new Uint8Array(signed.body),
        });
        expect(response.status, header).toBe(400);
        const error = errorOf(await response.text());
        expect(error.errorCode).toBe('101');
        expect(error.errorMessage).toMatch(pattern);
      }
    });

    it('401/102: unknown or inactive x-api-key', async () => {
      for (const apiKey of ['nobody', 'inactive-api-key']) {
        const { status, text } = await post(envelope(1001), { apiKey, apiHash: 'inactive-api-hash' });
        expect(status).toBe(401);
        expect(errorOf(text).errorCode).toBe('102');
      }
    });

    it('401/103: the signature does not match the body', async () => {
      const signed = signedCall(envelope(1001, [{ nazev: 'alfa' }]));
      const response = await fetch(url('getData'), {
        method: 'POST',
        headers: signed.headers,
        body: envelope(1001, [{ nazev: 'beta' }]),
      });
      expect(response.status).toBe(401);
      expect(errorOf(await response.text()).errorCode).toBe('103');
      const wrongKey = await post(envelope(1001), { apiHash: 'other-api-hash' });
      expect([wrongKey.status, errorOf(wrongKey.text).errorCode]).toEqual([401, '103']);
    });

    it('401/104: the signature time stamp is outside RequestMaxSecValidity', async () => {
      // Well outside the 300 s, so that a busy machine's second or two between signing and the
      // check cannot bring the future stamp back inside (CI once answered 200 to now + 301); the
      // exact bound is held by the unit tests of the signature check.
      for (const offset of [-360, 360]) {
        const time = Math.floor(Date.now() / 1000) + offset;
        const { status, text } = await post(envelope(1001), { time });
        expect(status).toBe(401);
        expect(errorOf(text).errorCode).toBe('104');
      }
    });

    it('409/105: a replayed request', async () => {
      const signed = signedCall(envelope(1001, [{ ico: '25596641' }]));
      const send = () =>
        fetch(url('getData'), { method: 'POST', headers: signed.headers, body: signed.body });
      expect((await send()).status).toBe(200);
      const replay = await send();
      expect(replay.status).toBe(409);
      expect(errorOf(await replay.text()).errorCode).toBe('105');
    });

    it('415/106: an unsupported Content-Type', async () => {
      const { status, text } = await post(envelope(1001), { contentType: 'text/plain' });
      expect(status).toBe(415);
      expect(errorOf(text).errorCode).toBe('106');
    });

    it('404/110: an unknown vltyp', async () => {
      const { status, text } = await post(envelope(4242));
      expect(status).toBe(404);
      const error = errorOf(text);
      expect(error).toEqual({ errorCode: '110', errorMessage: 'Unknown vltyp 4242' });
      // Beyond WS_OPERATION.VLTYP's int range: still no such operation, not a database error.
      for (const body of [envelope(99999999999), '<data><vlTyp>-99999999999</vlTyp></data>']) {
        const beyond = await post(body, { accept: 'application/json' });
        expect([beyond.status, errorOf(beyond.text).errorCode], body).toEqual([404, '110']);
      }
    });

    it('200/120: the operation failed in the database (vlResult -1, journaled)', async () => {
      const { status, text } = await post(envelope(9002));
      expect(status).toBe(200);
      const body = JSON.parse(text);
      expect(body).toMatchObject({ id: expect.any(Number), vlResult: -1 });
      expect(body.data[0].error[0].errorCode).toBe('120');
      const journal = await sqlOn(
        stack.database,
      )`SELECT "STATE" FROM dbo."WS_JOURNAL" WHERE "ID" = ${body.id}`;
      expect(journal[0]?.STATE).toBe('failed');
    });

    it("120's message is the procedure's own when it raised one, else generic: never the engine's text", async () => {
      // 9002 raises its own error (RAISERROR / RAISE EXCEPTION): its words are the answer's.
      const own = JSON.parse((await post(envelope(9002))).text);
      expect(own.data[0].error[0]).toEqual({
        errorCode: '120',
        errorMessage:
          'Operation 9002 failed in the database: Operation 9002 always fails (demo of a failing procedure)',
      });
      // Parameters the database's JSON reader refuses (a NUL character, a lone surrogate): the
      // engine's own words ("unsupported Unicode escape sequence", "invalid input syntax for type
      // json") stay in the log.
      for (const nazev of ['a\u0000b', 'a\ud800b']) {
        const { status, text } = await post(envelope(1001, [{ nazev }]));
        expect(status, nazev).toBe(200);
        const body = JSON.parse(text);
        expect(body, text).toMatchObject({ id: expect.any(Number), vlResult: -1 });
        expect(body.data[0].error[0], text).toEqual({
          errorCode: '120',
          errorMessage: 'Operation 1001 failed in the database',
        });
      }
    });

    it('503/150: the database is unreachable', async () => {
      const { status, text } = await post(envelope(1001), { tenant: 'offline' });
      expect(status).toBe(503);
      expect(errorOf(text).errorCode).toBe('150');
    });

    it('404 in the Web API format for an unknown tenant', async () => {
      const { status, text } = await post(envelope(1001), { tenant: 'nope' });
      expect(status).toBe(404);
      expect(errorOf(text)).toEqual({ errorCode: '112', errorMessage: 'Tenant "nope" does not exist' });
    });
  });
});
