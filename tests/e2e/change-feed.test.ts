/**
 * CONTRACT 4b through the local stack, as an integrator calls it: a sync that follows the `Link`
 * headers, the ERP's writes through `POST /_local/erp/writes` (held open and committed out of
 * order on the T-SQL engine under `npm run test:tsql`), the refusals, the description and the
 * retention clean-up invoked as Lambda would.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { DEMO_AUTH } from '../support/demo.js';
import { recordKeys, stillRecorded } from '../support/expired-keys.js';

let stack: LocalStack;
type SyncRecord = Record<string, unknown>;
const get = (path: string, headers: Record<string, string> = {}) =>
  fetch(`${stack.url}${path}`, { headers: { authorization: DEMO_AUTH, ...headers }, redirect: 'manual' });
const erp = (body: unknown) =>
  fetch(`${stack.url}/_local/erp/writes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const errorOf = async (response: Response) =>
  ((await response.json()) as { error: { code: string; message: string } }).error;
const linkOf = (response: Response) => {
  const match = /^<([^>]+)>; rel="(next|sync)"$/.exec(response.headers.get('link') ?? '');
  if (!match) throw new Error(`no next or sync link: ${response.headers.get('link')}`);
  return { target: match[1]!, rel: match[2] as 'next' | 'sync' };
};
const onTsql = process.env.LOCAL_DATABASE === 'tsql';
// Ids of this run's own rows.
const BASE = 700_000 + Math.floor(Math.random() * 90_000) * 10;

/** A client's copy of SUBJECT, kept by following the links from its first call on. */
class Copy {
  readonly rows = new Map<number, SyncRecord>();
  next = '/demo/JsonAPI/Data/getChanges/SUBJECT?rows=25';
  tombstones: SyncRecord[] = [];
  /** Follows `next` links until an answer says `sync`; returns what the calls answered. */
  async sync(): Promise<SyncRecord[]> {
    const seen: SyncRecord[] = [];
    for (;;) {
      const response = await get(this.next);
      expect(response.status, this.next).toBe(200);
      expect(response.headers.get('etag')).toBeNull();
      const records = ((await response.json()) as Record<string, SyncRecord[]>).SUBJECT!;
      for (const record of records) {
        seen.push(record);
        if ('@removed' in record) {
          this.tombstones.push(record);
          this.rows.delete(record.ID as number);
        } else this.rows.set(record.ID as number, record);
      }
      const link = linkOf(response);
      this.next = link.target;
      if (link.rel === 'sync') return seen;
    }
  }
}

async function table(): Promise<Map<number, SyncRecord>> {
  const body = (await (await get('/demo/JsonAPI/Data/getData/SUBJECT')).json()) as Record<
    string,
    SyncRecord[]
  >;
  return new Map(body.SUBJECT!.map((r) => [r.ID as number, r]));
}

beforeAll(async () => {
  stack = await startLocalStack({ port: 0 });
});
afterAll(async () => {
  await stack?.stop();
});

describe('getChanges', () => {
  it('keeps a copy equal to the table through inserts, updates and deletes, with tombstones for deletions', async () => {
    const copy = new Copy();
    await copy.sync();
    expect(copy.rows).toEqual(await table());
    const written = await erp({
      writes: [
        {
          table: 'SUBJECT',
          op: 'insert',
          row: { ID: BASE + 1, NAZEV: 'Nová firma s.r.o.', MESTO: 'Brno', SECRET_WEBHOOK: 'x' },
        },
        { table: 'SUBJECT', op: 'insert', row: { ID: BASE + 2, NAZEV: 'Smazat a.s.' } },
        { table: 'subject', op: 'update', key: { id: BASE + 1 }, set: { mesto: 'Olomouc' } },
      ],
    });
    expect(written.status).toBe(200);
    expect(await written.json()).toEqual({
      committed: true,
      heldSeconds: 0,
      changed: [
        { table: 'SUBJECT', op: 'insert', key: { ID: BASE + 1 }, rows: 1 },
        { table: 'SUBJECT', op: 'insert', key: { ID: BASE + 2 }, rows: 1 },
        { table: 'SUBJECT', op: 'update', key: { ID: BASE + 1 }, rows: 1 },
      ],
    });
    const changes = await copy.sync();
    expect(changes).toEqual([
      { ID: BASE + 1, NAZEV: 'Nová firma s.r.o.', MESTO: 'Olomouc', AKTIVNI: 1 },
      { ID: BASE + 2, NAZEV: 'Smazat a.s.', AKTIVNI: 1 },
    ]);
    expect((await erp({ writes: [{ table: 'SUBJECT', op: 'delete', key: { ID: BASE + 2 } }] })).status).toBe(
      200,
    );
    expect(await copy.sync()).toEqual([{ ID: BASE + 2, '@removed': { reason: 'deleted' } }]);
    // Nothing since: an empty page with a sync link; the copy is the table.
    expect(await copy.sync()).toEqual([]);
    expect(copy.rows).toEqual(await table());
  });

  it('never shows a rolled-back write; a transaction held open reaches the sync after it commits', async () => {
    const copy = new Copy();
    await copy.sync();
    const undone = await erp({
      writes: [{ table: 'SUBJECT', op: 'insert', row: { ID: BASE + 3, NAZEV: 'Vráceno' } }],
      rollback: true,
    });
    expect(await undone.json()).toMatchObject({ committed: false });
    // The long transaction begins first and commits last (on the embedded database, which serves
    // one session, the second write waits for it instead).
    const long = erp({
      writes: [{ table: 'SUBJECT', op: 'insert', row: { ID: BASE + 4, NAZEV: 'Dlouhá' } }],
      holdSeconds: 2,
    });
    await new Promise((wake) => setTimeout(wake, 300));
    const short = await erp({
      writes: [{ table: 'SUBJECT', op: 'insert', row: { ID: BASE + 5, NAZEV: 'Krátká' } }],
    });
    expect(short.status).toBe(200);
    const before = await copy.sync();
    if (onTsql) expect(before.map((r) => r.ID)).toEqual([BASE + 5]);
    expect((await long).status).toBe(200);
    await copy.sync();
    expect(copy.rows.has(BASE + 3)).toBe(false);
    expect(copy.rows.get(BASE + 4)).toMatchObject({ NAZEV: 'Dlouhá' });
    expect(copy.rows.get(BASE + 5)).toMatchObject({ NAZEV: 'Krátká' });
    expect(copy.rows).toEqual(await table());
  });

  it('pages DOKUMENT by key with columns=, the key always in each record, the links keeping rows and columns', async () => {
    const first = await get('/demo/JsonAPI/Data/getChanges/DOKUMENT?rows=2&columns=CISLO');
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({
      DOKUMENT: [
        { CISLO: expect.any(String), ID: 1 },
        { CISLO: expect.any(String), ID: 2 },
      ],
    });
    const link = linkOf(first);
    expect(link.rel).toBe('next');
    expect(link.target).toMatch(
      /^\/demo\/JsonAPI\/Data\/getChanges\/DOKUMENT\?token=[^&]+&rows=2&columns=CISLO$/,
    );
    const second = await get(link.target);
    expect(((await second.json()) as { DOKUMENT: SyncRecord[] }).DOKUMENT.map((r) => r.ID)).toEqual([3, 4]);
    // The same token with other columns: refused.
    const other = await get(link.target.replace('columns=CISLO', 'columns=POPIS'));
    expect(other.status).toBe(400);
    expect((await errorOf(other)).code).toBe('invalid_sync_token');
  });

  it('answers what is wrong: not recorded, unknown, bad token, bad rows, no credentials', async () => {
    const cases: [string, number, string][] = [
      ['/demo/JsonAPI/Data/getChanges/UCET', 400, 'changes_not_recorded'],
      ['/demo/JsonAPI/Data/getChanges/V_DOKUMENT_SOUBOR', 400, 'changes_not_recorded'],
      ['/demo/JsonAPI/Data/getChanges/NO_SUCH_TABLE', 404, 'data_source_not_found'],
      ['/demo/JsonAPI/Data/getChanges/SVC_CHANGES_SUBJECT', 404, 'data_source_not_found'],
      ['/demo/JsonAPI/Data/getChanges/SUBJECT?token=abc.def', 400, 'invalid_sync_token'],
      ['/demo/JsonAPI/Data/getChanges/SUBJECT?token=a&token=b', 400, 'invalid_sync_token'],
      ['/demo/JsonAPI/Data/getChanges/SUBJECT?rows=0', 400, 'invalid_paging'],
      ['/demo/JsonAPI/Data/getChanges/SUBJECT?columns=SECRET_WEBHOOK', 400, 'invalid_columns'],
    ];
    for (const [path, status, code] of cases) {
      const response = await get(path);
      expect(response.status, path).toBe(status);
      const error = await errorOf(response);
      expect(error.code, path).toBe(code);
    }
    const notRecorded = await errorOf(await get('/demo/JsonAPI/Data/getChanges/UCET'));
    expect(notRecorded.message).toContain('changeFeed');
    const anonymous = await fetch(`${stack.url}/demo/JsonAPI/Data/getChanges/SUBJECT`);
    expect(anonymous.status).toBe(401);
  });

  it('the description has getChanges for the recorded tables only', async () => {
    const document = (await (await get('/demo/JsonAPI/openapi.json')).json()) as {
      paths: Record<string, unknown>;
    };
    const changes = Object.keys(document.paths).filter((path) => path.includes('/getChanges/'));
    expect(changes.sort()).toEqual([
      '/demo/JsonAPI/Data/getChanges/DOKUMENT',
      '/demo/JsonAPI/Data/getChanges/SUBJECT',
    ]);
  });

  it('the retention clean-up runs as Lambda invokes it, and keeps what is younger than the retention', async () => {
    // Exactly once's keys (CONTRACT 5a) go by the same run: one past its time, one not.
    const [expired] = await recordKeys(stack.database, 'demo', 1, -48);
    const [live] = await recordKeys(stack.database, 'demo', 1, 48);
    const invoked = await fetch(`${stack.url}/2015-03-31/functions/changeFeedRetention/invocations`, {
      method: 'POST',
      body: JSON.stringify({ source: 'aws.events', 'detail-type': 'Scheduled Event', detail: {} }),
    });
    expect(invoked.status).toBe(200);
    expect(await invoked.json()).toEqual({ tenants: 1, failed: 0, removed: 0, keysRemoved: 1 });
    expect(await stillRecorded(stack.database, [expired!, live!])).toEqual([live]);
  });
});

describe('POST /_local/erp/writes', () => {
  it('refuses what it cannot write, with what is wrong, and writes nothing of a refused call', async () => {
    const cases: [unknown, RegExp][] = [
      [[], /must be a JSON object/],
      [{ writes: [] }, /"writes" must be an array of 1 to 100/],
      [{ writes: [{ table: 'UCET', op: 'insert', row: {} }] }, /table must be SUBJECT or DOKUMENT/],
      [{ writes: [{ table: 'SUBJECT', op: 'upsert' }] }, /op must be insert, update or delete/],
      [{ writes: [{ table: 'SUBJECT', op: 'insert', row: { NAZEV: 'x' } }] }, /needs the key ID/],
      [
        { writes: [{ table: 'SUBJECT', op: 'update', key: { ID: 1 }, set: { NOPE: 1 } }] },
        /no column "NOPE"/,
      ],
      [{ writes: [{ table: 'SUBJECT', op: 'delete', key: { NAZEV: 'x' } }] }, /exactly the key ID/],
      [
        { writes: [{ table: 'SUBJECT', op: 'delete', key: { ID: 1 } }], holdSeconds: 61 },
        /"holdSeconds" must be a number from 0 to 60/,
      ],
      [
        {
          writes: [
            { table: 'SUBJECT', op: 'insert', row: { ID: BASE + 6, NAZEV: 'První' } },
            { table: 'SUBJECT', op: 'insert', row: { ID: BASE + 6, NAZEV: 'Druhá' } },
          ],
        },
        /refused write 2 .*nothing was written/,
      ],
    ];
    for (const [body, message] of cases) {
      const response = await erp(body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(((await response.json()) as { message: string }).message).toMatch(message);
    }
    expect((await table()).has(BASE + 6)).toBe(false);
  });
});
