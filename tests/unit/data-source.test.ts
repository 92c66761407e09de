import { afterEach, describe, expect, it, vi } from 'vitest';
import { embeddedDialect } from '../../shared/adapters/embedded/dialect.js';
import {
  isInternalTable,
  parseDataSourceName,
  rememberedCatalogue,
  resolveDataSource,
} from '../../shared/core/data-api/data-source.js';
import type { Database, DataSourceInfo } from '../../shared/core/database.js';
import { ServiceError } from '../../shared/core/errors.js';

function fakeCatalogue(objects: DataSourceInfo[]): Database & { lookups: number } {
  const db = {
    dialect: embeddedDialect,
    lookups: 0,
    async findDataSource(schema: string | undefined, name: string) {
      db.lookups++;
      return objects.find(
        (o) =>
          o.name.toLowerCase() === name.toLowerCase() &&
          (!schema || o.schema.toLowerCase() === schema.toLowerCase()),
      );
    },
    query: async () => [],
    streamBatches: async function* () {},
    listDataSources: async () => [],
    transaction: async () => {
      throw new Error('unused');
    },
    close: async () => undefined,
  };
  return db;
}

const table = (name: string): DataSourceInfo => ({
  schema: 'dbo',
  name,
  kind: 'table',
  columns: [],
  primaryKey: [],
});

describe('Function: parseDataSourceName', () => {
  it('splits NAME and schema.NAME', () => {
    expect(parseDataSourceName('SUBJECT')).toEqual({ schema: undefined, name: 'SUBJECT' });
    expect(parseDataSourceName('dbo.SUBJECT')).toEqual({ schema: 'dbo', name: 'SUBJECT' });
  });

  it.each([
    '',
    'a.b.c',
    'SUB JECT',
    'x;DROP',
    '[SUBJECT]',
    '"SUBJECT"',
    '1ABC',
    'a-b',
    `${'A'.repeat(129)}`,
    'dbo.',
  ])('refuses %j with a 400', (raw) => {
    try {
      parseDataSourceName(raw);
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ServiceError);
      expect((error as ServiceError).status).toBe(400);
      expect((error as ServiceError).code).toBe('invalid_data_source');
    }
  });
});

describe('Function: resolveDataSource', () => {
  it('finds objects case-insensitively, asking the catalogue each time', async () => {
    const db = fakeCatalogue([table('SUBJECT')]);
    expect((await resolveDataSource(db, 'subject', '*')).name).toBe('SUBJECT');
    await resolveDataSource(db, 'SUBJECT', '*');
    expect(db.lookups).toBe(2);
  });

  it('answers the same 404 for unknown, not allowed and never-served objects', async () => {
    const db = fakeCatalogue([table('SUBJECT'), table('UCET'), table('WS_APPLICATION')]);
    const status = (promise: Promise<unknown>) =>
      promise.then(
        () => 200,
        (e: ServiceError) => `${e.status} ${e.code}`,
      );
    expect(await status(resolveDataSource(db, 'NOPE', '*'))).toBe('404 data_source_not_found');
    expect(await status(resolveDataSource(db, 'UCET', ['SUBJECT']))).toBe('404 data_source_not_found');
    expect(await status(resolveDataSource(db, 'WS_APPLICATION', '*'))).toBe('404 data_source_not_found');
    expect(await status(resolveDataSource(db, 'dbo.ws_application', ['WS_APPLICATION']))).toBe(
      '404 data_source_not_found',
    );
    expect(await status(resolveDataSource(db, 'subject', ['SUBJECT']))).toBe(200);
    expect(await status(resolveDataSource(db, 'SUBJECT', ['dbo.subject']))).toBe(200);
  });
});

describe('Function: isInternalTable', () => {
  it.each([
    'WS_APPLICATION',
    'ws_replay_guard',
    'WEBHOOK_SECRET',
    'WEBHOOK_ENDPOINT',
    'WS_JOB_LEASE',
    'SVC_SIGNING_KEYS',
    'WEBHOOK_ENDPOINT_STATE',
    'webhook_secrets',
    'SVC_IDEMPOTENCY',
    'svc_idempotency',
  ])('%s is internal', (name) => {
    expect(isInternalTable(name)).toBe(true);
  });

  it.each([
    'WS_JOURNAL',
    'WEBHOOK_DELIVERY',
    'WS_OPERATION',
    'SVCDOC',
    'SUBJECT',
    'UCET_KEY',
    'DOKUMENT_STATE',
  ])("%s is served (the audit trail, or not the service's)", (name) => {
    expect(isInternalTable(name)).toBe(false);
  });

  it('refuses an internal table even where a tenant lists it', async () => {
    const db = fakeCatalogue([table('WS_REPLAY_GUARD'), table('WS_JOB_LEASE')]);
    for (const name of ['WS_REPLAY_GUARD', 'dbo.ws_replay_guard', 'WS_JOB_LEASE']) {
      await expect(resolveDataSource(db, name, ['WS_REPLAY_GUARD', 'WS_JOB_LEASE'])).rejects.toMatchObject({
        status: 404,
        code: 'data_source_not_found',
      });
    }
  });
});

describe('Function: rememberedCatalogue', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('asks the catalogue once per name (any case) and period; a name not found every time', async () => {
    vi.useFakeTimers();
    const db = fakeCatalogue([table('SUBJECT')]);
    const catalogue = rememberedCatalogue(db, 60_000);
    expect((await resolveDataSource(catalogue, 'subject', '*')).name).toBe('SUBJECT');
    expect((await resolveDataSource(catalogue, 'SUBJECT', '*')).name).toBe('SUBJECT');
    await expect(resolveDataSource(catalogue, 'NOPE', '*')).rejects.toThrow(/NOPE/);
    await expect(resolveDataSource(catalogue, 'nope', '*')).rejects.toThrow(/nope/);
    expect(db.lookups).toBe(3);
    // A schema-qualified name is its own lookup.
    await resolveDataSource(catalogue, 'dbo.SUBJECT', '*');
    expect(db.lookups).toBe(4);
    vi.advanceTimersByTime(60_001);
    await resolveDataSource(catalogue, 'SUBJECT', '*');
    expect(db.lookups).toBe(5);
  });

  it('shares one lookup between concurrent requests and forgets a failed one', async () => {
    let calls = 0;
    let fail = true;
    const catalogue = rememberedCatalogue(
      {
        listDataSources: async () => [],
        async findDataSource() {
          calls++;
          await new Promise((resolve) => setTimeout(resolve, 5));
          if (fail) throw new Error('connection lost');
          return table('SUBJECT');
        },
      },
      60_000,
    );
    const both = await Promise.allSettled([
      catalogue.findDataSource(undefined, 'SUBJECT'),
      catalogue.findDataSource(undefined, 'SUBJECT'),
    ]);
    expect(both.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    expect(calls).toBe(1);
    fail = false;
    expect((await catalogue.findDataSource(undefined, 'SUBJECT'))?.name).toBe('SUBJECT');
    expect(calls).toBe(2);
  });

  it('asks every time with a period of 0', async () => {
    const db = fakeCatalogue([table('SUBJECT')]);
    const catalogue = rememberedCatalogue(db, 0);
    await resolveDataSource(catalogue, 'SUBJECT', '*');
    await resolveDataSource(catalogue, 'SUBJECT', '*');
    expect(db.lookups).toBe(2);
  });
});
