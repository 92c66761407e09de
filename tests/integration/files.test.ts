import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { PGlite } from '@electric-sql/pglite';
import type { FauxqsServer } from 'fauxqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { handler as getFileHandler } from '../../functions/files/getFile.js';
import { handler as setFileHandler } from '../../functions/files/setFile.js';
import { startAwsEmulator } from '../../infra/local/aws-emulator.js';
import { createEmbeddedDocumentStore } from '../../shared/adapters/embedded/document-store.js';
import { registerEmbeddedDatabase } from '../../shared/config/databases.js';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import { type Database, DatabaseStatementError } from '../../shared/core/database.js';
import { attachmentDisposition } from '../../shared/core/files/content-disposition.js';
import type { DocumentStore } from '../../shared/core/files/document-store.js';
import { DEMO_AUTH, demoDatabase } from '../support/demo.js';
import { encodeForm, httpApiEvent, invokeHttp, resultBytes } from '../support/http-api-event.js';

const HASH = 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=';
const BUCKET = 'files-integration';
const GET_ROUTE = '/{tenant}/JsonAPI/File/getFile/{fileGUID}';
const SET_ROUTE = '/{tenant}/JsonAPI/File/setFile';

let emulator: FauxqsServer;
let pg: PGlite;
let db: Database;
let store: DocumentStore;

beforeAll(async () => {
  ({ emulator } = await startAwsEmulator({ bucket: BUCKET }));
  ({ pg, db } = await demoDatabase());
  store = createEmbeddedDocumentStore(db);
  registerEmbeddedDatabase('files-integration', db);
  setTenantRegistry(
    parseTenantRegistry({
      tenants: {
        demo: {
          database: { kind: 'embedded', name: 'files-integration' },
          dataApiUsers: [{ name: 'demo', passwordHash: HASH }],
          dataSources: '*',
          procedures: ['DEMO_FILE_RECEIVED', 'DEMO_FILE_FAIL'],
        },
      },
    }),
  );
});
afterAll(async () => {
  setTenantRegistry(undefined);
  await pg?.close();
  await emulator?.stop();
});

const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

async function upload(content: Buffer, fileName: string, type: string, query = '') {
  const form = new FormData();
  form.append('file', new Blob([content], { type }), fileName);
  const { body, contentType } = await encodeForm(form);
  return invokeHttp(
    setFileHandler,
    httpApiEvent({
      method: 'POST',
      route: SET_ROUTE,
      pathParameters: { tenant: 'demo' },
      query,
      headers: { authorization: DEMO_AUTH, 'content-type': contentType },
      body,
    }),
  );
}

const download = (fileGUID: string, headers: Record<string, string> = {}) =>
  invokeHttp(
    getFileHandler,
    httpApiEvent({
      method: 'GET',
      route: GET_ROUTE,
      pathParameters: { tenant: 'demo', fileGUID },
      headers: { authorization: DEMO_AUTH, ...headers },
    }),
  );

async function count(table: string): Promise<number> {
  return Number((await db.query(`SELECT count(*) AS n FROM dbo."${table}"`))[0]!.n);
}

describe('Function: createEmbeddedDocumentStore', () => {
  it('saves a file into SVCDOC and reads it back whole and in slices', async () => {
    const content = randomBytes(1000);
    const fileGuid = randomUUID().toUpperCase();
    const info = {
      fileGuid,
      fileName: 'Příloha.bin',
      contentType: 'application/pdf',
      size: 1000,
      sha256: sha256(content),
    };
    await store.save({ ...info, content });
    expect(await store.find(fileGuid.toLowerCase())).toEqual(info);
    expect((await store.readContent(fileGuid))?.equals(content)).toBe(true);
    expect((await store.readContentSlice(fileGuid, 990, 100)).equals(content.subarray(990))).toBe(true);
    expect((await store.readContentSlice(fileGuid, 1000, 100)).length).toBe(0);
    const [row] = await db.query(
      `SELECT "SIZE_BYTES", "CREATED_AT" FROM dbo."SVCDOC" WHERE "FILEGUID" = $1`,
      [fileGuid],
    );
    expect(row).toMatchObject({ SIZE_BYTES: 1000 });
    expect(row!.CREATED_AT).toBeTruthy();
  });

  it('knows nothing of an unknown GUID', async () => {
    const unknown = randomUUID();
    expect(await store.find(unknown)).toBeUndefined();
    expect(await store.readContent(unknown)).toBeUndefined();
  });

  it('finds procedures case-insensitively, as the catalogue spells them', async () => {
    expect(await store.findProcedure({ schema: 'DBO', name: 'demo_file_received' })).toEqual({
      schema: 'dbo',
      name: 'DEMO_FILE_RECEIVED',
    });
    expect(await store.findProcedure({ schema: 'dbo', name: 'NO_SUCH_PROCEDURE' })).toBeUndefined();
    // Tables are not procedures.
    expect(await store.findProcedure({ schema: 'dbo', name: 'SVCDOC' })).toBeUndefined();
  });

  it('calls a procedure with the GUID as uuid, and reports its failure', async () => {
    const fileGuid = randomUUID().toUpperCase();
    await store.callProcedure({ schema: 'dbo', name: 'DEMO_FILE_RECEIVED' }, fileGuid);
    const rows = await db.query(`SELECT "FILEGUID" FROM dbo."DEMO_FILE_EVENT" WHERE "FILEGUID" = $1`, [
      fileGuid,
    ]);
    expect(rows).toEqual([{ FILEGUID: fileGuid }]);
    await expect(
      store.callProcedure({ schema: 'dbo', name: 'DEMO_FILE_FAIL' }, fileGuid),
    ).rejects.toBeInstanceOf(DatabaseStatementError);
  });
});

describe('File Lambda handlers', () => {
  it('store a file from a base64 multipart event and give the same bytes back', async () => {
    // windows-1250 text: not UTF-8, so it must come back base64 although it is text/plain.
    const content = Buffer.concat([
      Buffer.from('Faktura '),
      Buffer.from([0x8a, 0x9a, 0xe8, 0xf8]),
      Buffer.from([...Array(256).keys()]),
    ]);
    const stored = await upload(content, 'Účtenka č. 1.txt', 'text/plain; charset=windows-1250');
    expect(stored.statusCode).toBe(200);
    const answer = JSON.parse(stored.body!) as Record<string, unknown>;
    expect(answer).toEqual({
      fileGUID: expect.stringMatching(/^[0-9A-F-]{36}$/),
      fileName: 'Účtenka č. 1.txt',
      size: content.length,
      contentType: 'text/plain; charset=windows-1250',
      sha256: sha256(content),
    });

    const result = await download(String(answer.fileGUID).toLowerCase());
    expect(result.statusCode).toBe(200);
    expect(result.isBase64Encoded).toBe(true);
    expect(resultBytes(result).equals(content)).toBe(true);
    expect(result.headers).toMatchObject({
      'content-type': 'text/plain; charset=windows-1250',
      'content-disposition': attachmentDisposition('Účtenka č. 1.txt'),
      'content-length': String(content.length),
      etag: `"${sha256(content)}"`,
    });
  });

  it('answer 304 to If-None-Match with the ETag', async () => {
    const stored = JSON.parse((await upload(Buffer.from('abc'), 'a.txt', 'text/plain')).body!) as {
      fileGUID: string;
      sha256: string;
    };
    const result = await download(stored.fileGUID, { 'if-none-match': `"${stored.sha256}"` });
    expect(result.statusCode).toBe(304);
    expect(result.body ?? '').toBe('');
    expect(result.headers?.etag).toBe(`"${stored.sha256}"`);
  });

  it('redirect a file over the inline limit to S3, where it keeps its name and type', async () => {
    // Files stored by the ERP itself can be larger than setFile accepts.
    const content = randomBytes(6 * 1024 * 1024 + 3);
    const fileGuid = randomUUID().toUpperCase();
    await store.save({
      fileGuid,
      fileName: 'Výkres.pdf',
      contentType: 'application/pdf',
      size: content.length,
      sha256: sha256(content),
      content,
    });
    const result = await download(fileGuid);
    expect(result.statusCode).toBe(303);
    const location = String(result.headers?.location);
    expect(location).toMatch(/X-Amz-Expires=900/);
    const object = await fetch(location);
    expect(object.status).toBe(200);
    expect(Buffer.from(await object.arrayBuffer()).equals(content)).toBe(true);
    expect(object.headers.get('content-type')).toBe('application/pdf');
    expect(object.headers.get('content-disposition')).toBe(attachmentDisposition('Výkres.pdf'));
  });

  it('call the allowed procedure with the new GUID', async () => {
    const before = await count('DEMO_FILE_EVENT');
    const result = await upload(
      Buffer.from('x'),
      'a.txt',
      'text/plain',
      'userDBProcedure=demo_file_received',
    );
    expect(result.statusCode).toBe(200);
    const { fileGUID } = JSON.parse(result.body!) as { fileGUID: string };
    expect(await count('DEMO_FILE_EVENT')).toBe(before + 1);
    const rows = await db.query(`SELECT 1 FROM dbo."DEMO_FILE_EVENT" WHERE "FILEGUID" = $1`, [fileGUID]);
    expect(rows).toHaveLength(1);
  });

  it('answer 502 with the fileGUID when the procedure fails, and keep the file', async () => {
    const result = await upload(
      Buffer.from('kept'),
      'kept.txt',
      'text/plain',
      'userDBProcedure=DEMO_FILE_FAIL',
    );
    expect(result.statusCode).toBe(502);
    const body = JSON.parse(result.body!) as {
      error: { code: string; message: string; fileGUID: string; requestId: string };
    };
    expect(body.error).toMatchObject({ code: 'procedure_failed', requestId: 'aws-test-request' });
    expect(body.error.message).not.toMatch(/rejects|RAISE|CALL|plpgsql/);
    const kept = await download(body.error.fileGUID);
    expect(kept.statusCode).toBe(200);
    expect(resultBytes(kept).toString()).toBe('kept');
  });

  it('answer 401 without credentials, 415 for a body that is not multipart', async () => {
    const anonymous = await invokeHttp(
      getFileHandler,
      httpApiEvent({
        method: 'GET',
        route: GET_ROUTE,
        pathParameters: { tenant: 'demo', fileGUID: randomUUID() },
      }),
    );
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers?.['www-authenticate']).toMatch(/^Basic realm="demo"/);
    const json = await invokeHttp(
      setFileHandler,
      httpApiEvent({
        method: 'POST',
        route: SET_ROUTE,
        pathParameters: { tenant: 'demo' },
        headers: { authorization: DEMO_AUTH, 'content-type': 'application/json' },
        body: Buffer.from('{}'),
      }),
    );
    expect(json.statusCode).toBe(415);
    expect(JSON.parse(json.body!).error.code).toBe('unsupported_media_type');
  });
});
