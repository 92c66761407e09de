import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalDemoDatabase, openLocalDemoDatabase } from '../../infra/local/demo-database.js';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import type { Database } from '../../shared/core/database.js';
import { DEMO_AUTH, sqlOn, useDemoTenantsWith } from '../support/demo.js';

const run = promisify(execFile);
const GUID = /^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/;
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

interface SetFileAnswer {
  fileGUID: string;
  fileName: string;
  size: number;
  contentType: string;
  sha256: string;
}
interface ErrorBody {
  error: { code: string; message: string; requestId: string; fileGUID?: string };
}

let stack: LocalStack;
let documents: LocalDemoDatabase;
let work: string;

beforeAll(async () => {
  stack = await startLocalStack({ port: 0 });
  // A second database as the document database of tenant "split".
  // (of the same kind as the stack's: embedded, or a T-SQL database of its own)
  documents = await openLocalDemoDatabase(stack.databaseKind, 'documents');
  useDemoTenantsWith(stack.registry, (demo) => ({
    // DEMO_FILE_FAIL is allowed only here, not in the demo tenant.
    failing: { ...demo, procedures: ['DEMO_FILE_RECEIVED', 'DEMO_FILE_FAIL'] },
    split: { ...demo, documentDatabase: documents.connection },
  }));
  work = await mkdtemp(join(tmpdir(), 'files-e2e-'));
});
afterAll(async () => {
  await stack?.stop();
  await documents?.close();
  if (work) await rm(work, { recursive: true, force: true });
});

const fileUrl = (tenant: string, fn: string) => `${stack.url}/${tenant}/JsonAPI/File/${fn}`;

function setFile(
  content: Buffer | Blob | undefined,
  options: { name?: string; type?: string; tenant?: string; query?: string; form?: FormData } = {},
) {
  const form = options.form ?? new FormData();
  if (content !== undefined) {
    const blob = content instanceof Blob ? content : new Blob([content], { type: options.type ?? '' });
    form.append('file', blob, options.name ?? 'file.bin');
  }
  return fetch(`${fileUrl(options.tenant ?? 'demo', 'setFile')}${options.query ? `?${options.query}` : ''}`, {
    method: 'POST',
    headers: { authorization: DEMO_AUTH },
    body: form,
  });
}

function getFile(guid: string, headers: Record<string, string> = {}, tenant = 'demo') {
  return fetch(`${fileUrl(tenant, 'getFile')}/${encodeURIComponent(guid)}`, {
    headers: { authorization: DEMO_AUTH, ...headers },
    redirect: 'manual',
  });
}

async function stored(content: Buffer, options: Parameters<typeof setFile>[1] = {}): Promise<SetFileAnswer> {
  const response = await setFile(content, options);
  expect(response.status).toBe(200);
  return (await response.json()) as SetFileAnswer;
}

/** Row counts of every table of the tenant's database. */
async function tableCounts(db: Database): Promise<Record<string, number>> {
  const tables = (await db.query(
    `SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = 'dbo' AND table_type = 'BASE TABLE' ORDER BY table_name`,
  )) as { name: string }[];
  const counts: Record<string, number> = {};
  for (const { name } of tables) {
    const result = await db.query(`SELECT CAST(COUNT(*) AS int) AS n FROM dbo."${name}"`);
    counts[name] = Number(result[0]!.n);
  }
  return counts;
}

async function svcdocCount(db: Database): Promise<number> {
  return Number((await db.query('SELECT CAST(COUNT(*) AS int) AS n FROM dbo."SVCDOC"'))[0]!.n);
}

async function fileEvents(db: Database, guid: string): Promise<number> {
  const result = await sqlOn(
    db,
  )`SELECT CAST(COUNT(*) AS int) AS n FROM dbo."DEMO_FILE_EVENT" WHERE "FILEGUID" = ${guid}`;
  return Number(result[0]!.n);
}

describe('Document store over HTTP (local stack)', () => {
  it('gives all 256 byte values back exactly, with the answer describing the stored file', async () => {
    const content = Buffer.from([...Array(256).keys()]);
    const answer = await stored(content, { name: 'bytes.bin', type: 'application/octet-stream' });
    expect(answer).toEqual({
      fileGUID: expect.stringMatching(GUID),
      fileName: 'bytes.bin',
      size: 256,
      contentType: 'application/octet-stream',
      sha256: sha256(content),
    });
    const response = await getFile(answer.fileGUID);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/octet-stream');
    expect(response.headers.get('content-length')).toBe('256');
    expect(Buffer.from(await response.arrayBuffer()).equals(content)).toBe(true);
  });

  it('round-trips a 3.5 MB random file byte for byte', async () => {
    const content = randomBytes(3.5 * 1024 * 1024);
    const answer = await stored(content, { name: 'scan.pdf', type: 'application/pdf' });
    expect(answer.size).toBe(content.length);
    expect(answer.sha256).toBe(sha256(content));
    const response = await getFile(answer.fileGUID);
    expect(response.status).toBe(200);
    const body = Buffer.from(await response.arrayBuffer());
    expect(body.length).toBe(content.length);
    expect(sha256(body)).toBe(answer.sha256);
    expect(body.equals(content)).toBe(true);
  });

  it('keeps a text/plain file that is not UTF-8 byte for byte', async () => {
    const content = Buffer.from([0x8a, 0x9a, 0xe8, 0x20, 0x8e, 0x9e, 0x0d, 0x0a, 0xff, 0x00]);
    const answer = await stored(content, { name: 'cp1250.txt', type: 'text/plain; charset=windows-1250' });
    const response = await getFile(answer.fileGUID);
    expect(response.headers.get('content-type')).toBe('text/plain; charset=windows-1250');
    expect(Buffer.from(await response.arrayBuffer()).equals(content)).toBe(true);
  });

  it('refuses a file name with a C0/C1 control or a bidirectional override with 400 invalid_file_name, and never serves one back (issue 19)', async () => {
    for (const name of ['invoice\u202Efdp.exe', 'a\u0085b.txt', 'a\u2067b\u2069.txt', 'a\u200Fb.txt']) {
      const before = await svcdocCount(stack.database);
      const response = await setFile(Buffer.from('x'), { name });
      expect(response.status, JSON.stringify(name)).toBe(400);
      expect(((await response.json()) as ErrorBody).error.code).toBe('invalid_file_name');
      expect(await svcdocCount(stack.database)).toBe(before);
    }
    // A name stored otherwise (by the ERP, or before the rule) is served without those characters.
    const answer = await stored(Buffer.from('MZ'), { name: 'invoice.exe' });
    const q = stack.database.dialect.quoteIdent;
    const param = stack.database.dialect.param;
    await stack.database.query(
      `UPDATE ${q('dbo')}.${q('SVCDOC')} SET ${q('FILENAME')} = ${param(1)} WHERE ${q('FILEGUID')} = ${param(2)}`,
      ['invoice\u202Efdp.exe', answer.fileGUID],
    );
    const disposition = (await getFile(answer.fileGUID)).headers.get('content-disposition')!;
    const served = decodeURIComponent(/filename\*=UTF-8''([^;\s]*)/.exec(disposition)![1]!);
    expect(served).toBe('invoicefdp.exe');
    expect(disposition).not.toMatch(/%E2%80%AE/i);
  });

  it('keeps a non-ASCII file name in the answer and in Content-Disposition', async () => {
    const name = 'Faktura č. 2024/0001 – Žluťoučký kůň 😀.xml'.replace('/', '-');
    const answer = await stored(Buffer.from('<Invoice/>'), { name, type: 'application/xml' });
    expect(answer.fileName).toBe(name);
    const response = await getFile(answer.fileGUID);
    const disposition = response.headers.get('content-disposition')!;
    expect(disposition).toMatch(/^attachment; filename\*=UTF-8''/);
    expect(decodeURIComponent(/filename\*=UTF-8''([^;\s]+)/.exec(disposition)![1]!)).toBe(name);
    expect(await response.text()).toBe('<Invoice/>');
  });

  it('stores an empty file (size 0) and serves it', async () => {
    const answer = await stored(Buffer.alloc(0), { name: 'empty.txt', type: 'text/plain' });
    expect(answer.size).toBe(0);
    const response = await getFile(answer.fileGUID);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-length')).toBe('0');
    expect((await response.arrayBuffer()).byteLength).toBe(0);
  });

  it('sends an ETag and answers 304 to If-None-Match, GUID in either case', async () => {
    const answer = await stored(Buffer.from('etag me'), { name: 'e.txt', type: 'text/plain' });
    const first = await getFile(answer.fileGUID.toLowerCase());
    expect(first.status).toBe(200);
    const etag = first.headers.get('etag')!;
    expect(etag).toBe(`"${answer.sha256}"`);
    const again = await getFile(answer.fileGUID, { 'if-none-match': etag });
    expect(again.status).toBe(304);
    expect(again.headers.get('etag')).toBe(etag);
    expect(await again.text()).toBe('');
    expect((await getFile(answer.fileGUID, { 'if-none-match': `"x", W/${etag}` })).status).toBe(304);
    expect((await getFile(answer.fileGUID, { 'if-none-match': '*' })).status).toBe(304);
    expect((await getFile(answer.fileGUID, { 'if-none-match': '"other"' })).status).toBe(200);
  });

  it('stores the file in SVCDOC and nowhere else', async () => {
    const before = await tableCounts(stack.database);
    await stored(Buffer.from('only here'), { name: 'only.txt', type: 'text/plain' });
    const after = await tableCounts(stack.database);
    expect(after.SVCDOC).toBe(before.SVCDOC! + 1);
    expect({ ...after, SVCDOC: 0 }).toEqual({ ...before, SVCDOC: 0 });
    expect(after.DOKUMENT).toBe(before.DOKUMENT);
    expect(after.DEMO_FILE_EVENT).toBe(before.DEMO_FILE_EVENT);
  });

  it('calls an allowed userDBProcedure with the GUID (DEMO_FILE_RECEIVED records it)', async () => {
    const answer = await stored(Buffer.from('x'), {
      name: 'p.txt',
      query: 'userDBProcedure=DEMO_FILE_RECEIVED',
    });
    expect(await fileEvents(stack.database, answer.fileGUID)).toBe(1);
    // Readable through the Data API as well.
    const condition = encodeURIComponent(`FILEGUID = '${answer.fileGUID.toLowerCase()}'`);
    const events = await fetch(
      `${stack.url}/demo/JsonAPI/Data/getDataWithCondition/DEMO_FILE_EVENT?condition=${condition}`,
      { headers: { authorization: DEMO_AUTH } },
    );
    const body = (await events.json()) as { DEMO_FILE_EVENT: { FILEGUID: string }[] };
    expect(body.DEMO_FILE_EVENT.map((e) => e.FILEGUID)).toEqual([answer.fileGUID]);
  });

  it('refuses a procedure the tenant does not allow with 400, storing nothing', async () => {
    const before = await svcdocCount(stack.database);
    for (const query of ['userDBProcedure=DEMO_FILE_FAIL', 'userDBProcedure=x%3BDROP%20TABLE%20SVCDOC']) {
      const response = await setFile(Buffer.from('x'), { name: 'no.txt', query });
      expect(response.status).toBe(400);
      expect(['procedure_not_allowed', 'invalid_procedure_name']).toContain(
        ((await response.json()) as ErrorBody).error.code,
      );
    }
    expect(await svcdocCount(stack.database)).toBe(before);
  });

  it('answers 502 with the fileGUID when the procedure fails, and the file stays downloadable', async () => {
    const content = Buffer.from('kept after failure');
    const response = await setFile(content, {
      name: 'kept.txt',
      tenant: 'failing',
      query: 'userDBProcedure=DEMO_FILE_FAIL',
    });
    expect(response.status).toBe(502);
    const body = (await response.json()) as ErrorBody;
    expect(body.error.code).toBe('procedure_failed');
    expect(body.error.fileGUID).toMatch(GUID);
    expect(JSON.stringify(body)).not.toMatch(/rejects|plpgsql|CALL|stack/i);
    const kept = await getFile(body.error.fileGUID!, {}, 'failing');
    expect(kept.status).toBe(200);
    expect(Buffer.from(await kept.arrayBuffer()).equals(content)).toBe(true);
  });

  it('stores into the separate document database of a tenant that has one', async () => {
    const appBefore = await svcdocCount(stack.database);
    const docsBefore = await svcdocCount(documents.database);
    const content = randomBytes(2048);
    const answer = await stored(content, {
      name: 'split.bin',
      tenant: 'split',
      query: 'userDBProcedure=DEMO_FILE_RECEIVED',
    });
    expect(await svcdocCount(documents.database)).toBe(docsBefore + 1);
    expect(await svcdocCount(stack.database)).toBe(appBefore);
    // The procedure runs where the file is.
    expect(await fileEvents(documents.database, answer.fileGUID)).toBe(1);
    expect(await fileEvents(stack.database, answer.fileGUID)).toBe(0);
    const response = await getFile(answer.fileGUID, {}, 'split');
    expect(Buffer.from(await response.arrayBuffer()).equals(content)).toBe(true);
    // The demo tenant's document store (its application database) does not have it.
    expect((await getFile(answer.fileGUID)).status).toBe(404);
  });

  it('takes an upload from curl -F file=@… and gives the same file back to curl', async () => {
    const content = Buffer.concat([
      randomBytes(200_000),
      Buffer.from('\r\n--boundary-lookalike\r\n'),
      randomBytes(1000),
    ]);
    const path = join(work, 'Příloha faktury.bin');
    await writeFile(path, content);
    const { stdout } = await run('curl', [
      '-sS',
      '-u',
      'demo:demo-password',
      '-F',
      `file=@${path}`,
      fileUrl('demo', 'setFile'),
    ]);
    const answer = JSON.parse(stdout) as SetFileAnswer;
    expect(answer).toMatchObject({
      fileName: 'Příloha faktury.bin',
      size: content.length,
      sha256: sha256(content),
    });
    const out = join(work, 'downloaded.bin');
    await run('curl', [
      '-sS',
      '-f',
      '-u',
      'demo:demo-password',
      '-o',
      out,
      `${fileUrl('demo', 'getFile')}/${answer.fileGUID}`,
    ]);
    expect((await readFile(out)).equals(content)).toBe(true);
  });
});

describe('Document store errors over HTTP (local stack)', () => {
  const code = async (response: Response) => [
    response.status,
    ((await response.json()) as ErrorBody).error.code,
  ];

  it('getFile: 400 for a malformed GUID, 404 for an unknown one', async () => {
    expect(await code(await getFile('not-a-guid'))).toEqual([400, 'invalid_file_guid']);
    expect(await code(await getFile('00000000-0000-0000-0000-000000000000'))).toEqual([
      404,
      'file_not_found',
    ]);
  });

  it('setFile: 415 when the body is not multipart/form-data', async () => {
    const response = await fetch(fileUrl('demo', 'setFile'), {
      method: 'POST',
      headers: { authorization: DEMO_AUTH, 'content-type': 'application/json' },
      body: '{"file":"x"}',
    });
    expect(await code(response)).toEqual([415, 'unsupported_media_type']);
  });

  it('setFile: 400 without a part "file"', async () => {
    const form = new FormData();
    form.append('note', 'no file here');
    expect(await code(await setFile(undefined, { form }))).toEqual([400, 'missing_file_part']);
  });

  it('setFile: 400 for two file parts, storing nothing', async () => {
    const before = await svcdocCount(stack.database);
    const form = new FormData();
    form.append('file', new Blob(['a']), 'a.txt');
    expect(await code(await setFile(Buffer.from('b'), { form }))).toEqual([400, 'too_many_file_parts']);
    expect(await svcdocCount(stack.database)).toBe(before);
  });

  it('setFile: 413 for a file over 4 MB, storing nothing', async () => {
    const before = await svcdocCount(stack.database);
    const response = await setFile(Buffer.alloc(4 * 1024 * 1024 + 1), { name: 'big.bin' });
    expect(await code(response)).toEqual([413, 'file_too_large']);
    expect(await svcdocCount(stack.database)).toBe(before);
  });

  it('401 with a Basic challenge without credentials, on both routes', async () => {
    const upload = await fetch(fileUrl('demo', 'setFile'), { method: 'POST', body: new FormData() });
    expect(upload.status).toBe(401);
    expect(upload.headers.get('www-authenticate')).toMatch(/^Basic realm="demo"/);
    const download = await fetch(`${fileUrl('demo', 'getFile')}/00000000-0000-0000-0000-000000000000`);
    expect(await code(download)).toEqual([401, 'unauthorized']);
  });
});
