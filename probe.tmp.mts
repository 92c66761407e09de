import { openDemoDatabase } from './infra/local/demo-database.js';
import { createEmbeddedDatabase } from './shared/adapters/embedded-sql/index.js';
const pg = await openDemoDatabase();
const db = createEmbeddedDatabase(pg);
const buf = Buffer.from([...Array(256).keys()]);
await db.query(`INSERT INTO dbo."SVCDOC" ("FILEGUID","FILENAME","CONTENT_TYPE","SIZE_BYTES","SHA256","CONTENT") VALUES ($1,$2,$3,$4,$5,$6)`, ['0d4b5c5e-aaaa-4bbb-8ccc-123456789abc', 'x', null, 256, 'a'.repeat(64), buf]);
const r = await db.query(`SELECT substring("CONTENT" FROM $2 FOR $3) AS c, "SIZE_BYTES", "CREATED_AT", "FILEGUID" FROM dbo."SVCDOC" WHERE "FILEGUID" = $1`, ['0D4B5C5E-AAAA-4BBB-8CCC-123456789ABC', 1, 300]);
console.log(r[0], r[0].c.constructor.name, Buffer.compare(Buffer.from(r[0].c), buf));
console.log(await db.query(`SELECT n.nspname AS "schema", p.proname AS "name" FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE p.prokind = 'p'`));
await db.query(`CALL "dbo"."DEMO_FILE_RECEIVED"($1)`, ['0D4B5C5E-AAAA-4BBB-8CCC-123456789ABC']);
console.log(await db.query(`SELECT * FROM dbo."DEMO_FILE_EVENT"`));
try { await db.query(`CALL "dbo"."DEMO_FILE_RECEIVED"($1)`, ['zz']); } catch (e) { console.log(e.name, e.message, e.dbCode); }
await pg.close();
