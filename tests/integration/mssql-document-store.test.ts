import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMssqlDocumentStore } from '../../shared/adapters/mssql/document-store.js';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { type Database, DatabaseStatementError } from '../../shared/core/database.js';
import type { DocumentStore } from '../../shared/core/files/document-store.js';
import { isBabelfish, runMssqlScripts, mssqlUrl as url } from '../support/mssql.js';

describe.skipIf(!url)('Function: createMssqlDocumentStore (integration)', () => {
  let db: Database;
  let store: DocumentStore;
  const guids: string[] = [];
  let babelfish = false;

  beforeAll(async () => {
    db = createMssqlDatabase({ connectionString: url! });
    // The scripts are idempotent: they create SVCDOC and the demo procedures where missing.
    await runMssqlScripts(db);
    store = createMssqlDocumentStore(db);
    babelfish = await isBabelfish(db);
  });
  afterAll(async () => {
    for (const guid of guids) {
      await db.query('DELETE FROM dbo.SVCDOC WHERE FILEGUID = @p1', [
        { type: 'uniqueidentifier', value: guid },
      ]);
      await db.query('DELETE FROM dbo.DEMO_FILE_EVENT WHERE FILEGUID = @p1', [
        { type: 'uniqueidentifier', value: guid },
      ]);
    }
    await db?.close();
  });

  it('stores varbinary content and reads it back whole and in slices', async () => {
    const content = Buffer.concat([Buffer.from([...Array(256).keys()]), randomBytes(100_000)]);
    const fileGuid = randomUUID().toUpperCase();
    guids.push(fileGuid);
    const info = {
      fileGuid,
      fileName: 'Příloha č. 1.bin',
      contentType: 'application/octet-stream',
      size: content.length,
      sha256: createHash('sha256').update(content).digest('hex'),
    };
    await store.save({ ...info, content });
    expect(await store.find(fileGuid.toLowerCase())).toEqual(info);
    expect((await store.readContent(fileGuid))?.equals(content)).toBe(true);
    expect((await store.readContentSlice(fileGuid, 256, 1000)).equals(content.subarray(256, 1256))).toBe(
      true,
    );
    expect(await store.find(randomUUID())).toBeUndefined();
  });

  it('finds and EXECs procedures with the GUID as uniqueidentifier', async () => {
    const fileGuid = randomUUID().toUpperCase();
    guids.push(fileGuid);
    const found = await store.findProcedure({ schema: 'DBO', name: 'demo_file_received' });
    // Babelfish's catalogue has procedure names lower-cased; EXEC finds them in any case.
    expect(found).toEqual({ schema: 'dbo', name: babelfish ? 'demo_file_received' : 'DEMO_FILE_RECEIVED' });
    await store.callProcedure(found!, fileGuid);
    const rows = await db.query('SELECT FILEGUID FROM dbo.DEMO_FILE_EVENT WHERE FILEGUID = @p1', [
      { type: 'uniqueidentifier', value: fileGuid },
    ]);
    expect(rows).toEqual([{ FILEGUID: fileGuid }]);
    const failing = await store.findProcedure({ schema: 'dbo', name: 'DEMO_FILE_FAIL' });
    await expect(store.callProcedure(failing!, fileGuid)).rejects.toBeInstanceOf(DatabaseStatementError);
    expect(await store.findProcedure({ schema: 'dbo', name: 'SVCDOC' })).toBeUndefined();
  });
});
