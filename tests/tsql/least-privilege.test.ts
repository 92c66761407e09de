import { randomBytes } from 'node:crypto';
import { InvokeCommand, LambdaClient } from '@aws-sdk/client-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_SERVICE_ROLE } from '../../infra/local/demo-database.js';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';
import { createMssqlDatabase } from '../../shared/adapters/mssql/index.js';
import { SERVICE_GRANTS } from '../../shared/adapters/mssql/service-grants.js';
import type { DatabaseConnection } from '../../shared/config/tenants.js';
import { DatabasePermissionError } from '../../shared/core/database.js';
import type { LogFields } from '../../shared/core/log.js';
import { webhookEventId } from '../../shared/core/webhook/event.js';
import { useObservability } from '../../shared/lambda/observability.js';
import { DEMO_AUTH } from '../support/demo.js';
import { recordKeys, stillRecorded } from '../support/expired-keys.js';
import { envelope, signedCall } from '../support/web-api.js';

/**
 * CONTRACT.md section 7 on the T-SQL engine: the demo tenant logs in with a login that holds only
 * the role `npm run db:apply -- --role` creates (LOCAL_DATABASE_LOGIN=service-role), and each grant
 * docs/sql-server.md lists is taken away in turn (then given back): the documented answer, the log
 * line naming the object, the metric. The whole e2e suite passing on such a login is
 * `npm run test:least-privilege`.
 */

let stack: LocalStack;
let lambda: LambdaClient;
const logged: { message: string; fields: LogFields }[] = [];
const counted: Record<string, number>[] = [];

beforeAll(async () => {
  stack = await startLocalStack({ port: 0, database: 'tsql', databaseLogin: 'service-role' });
  lambda = new LambdaClient({
    endpoint: stack.url,
    region: 'eu-central-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const keep = (message: string, fields: LogFields = {}) => {
    logged.push({ message, fields });
  };
  useObservability({
    log: { debug: () => undefined, info: () => undefined, warn: keep, error: keep },
    metrics: { count: (values) => counted.push({ ...values }) },
  });
}, 180_000);
afterAll(async () => {
  await stack?.stop();
});

/** The demo tenant's connection as the stack's registry gives it: the login of the service's role. */
const demoTenantConnection = () =>
  (stack.registry as { tenants: { demo: { database: DatabaseConnection } } }).tenants.demo.database;

/** Runs `probe` with `permission` on `object` taken from the service's role, then gives it back. */
async function without(object: string, permission: string, probe: () => Promise<void>) {
  await stack.database.query(`REVOKE ${permission} ON ${object} FROM ${LOCAL_SERVICE_ROLE}`);
  try {
    await probe();
  } finally {
    await stack.database.query(`GRANT ${permission} ON ${object} TO ${LOCAL_SERVICE_ROLE}`);
  }
}

const data = (path: string) =>
  fetch(`${stack.url}/demo/JsonAPI/${path}`, { headers: { authorization: DEMO_AUTH } });
const setFile = (query = '') => {
  const form = new FormData();
  form.append('file', new Blob([Buffer.from('least privilege')], { type: 'text/plain' }), 'grant.txt');
  return fetch(`${stack.url}/demo/JsonAPI/File/setFile${query}`, {
    method: 'POST',
    headers: { authorization: DEMO_AUTH },
    body: form,
  });
};
const webCall = async (vltyp: number, params: Record<string, unknown>[] = [{ name: 'Alfa' }]) => {
  const call = signedCall(envelope(vltyp, params));
  const response = await fetch(`${stack.url}/demo/WebAPI/getData`, {
    method: 'POST',
    headers: call.headers,
    body: call.body,
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};
const admin = async (event: Record<string, unknown>) => {
  const result = await lambda.send(
    new InvokeCommand({
      FunctionName: 'webhookAdmin',
      Payload: new TextEncoder().encode(JSON.stringify(event)),
    }),
  );
  return JSON.parse(new TextDecoder().decode(result.Payload)) as Record<string, unknown>;
};
const erpWrite = async () => {
  const response = await fetch(`${stack.url}/_local/erp/writes`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      writes: [{ table: 'SUBJECT', op: 'update', key: { ID: 2 }, set: { MESTO: `Brno ${Date.now()}` } }],
    }),
  });
  expect(response.status).toBe(200);
};

/** The Data API's answer for a missing permission: 500, its code, a message naming object and grant. */
async function expectDenied(response: Response, object: string, grant: RegExp) {
  expect(response.status).toBe(500);
  const body = (await response.json()) as { error: { code: string; message: string } };
  expect(body.error.code).toBe('database_permission_denied');
  expect(body.error.message).toContain(`may not use ${object}`);
  expect(body.error.message).toMatch(grant);
  // The service's words, never the engine's.
  expect(body.error.message).not.toMatch(/permission denied for/i);
}

/** The Web API's: 500, errorCode 180, the same words. */
function expectWebDenied(answer: { status: number; body: Record<string, unknown> }, object: string) {
  expect(answer.status).toBe(500);
  const error = (answer.body.data as { error: { errorCode: string; errorMessage: string }[] }[])[0]!
    .error[0]!;
  expect(error.errorCode).toBe('180');
  expect(error.errorMessage).toContain(`may not use ${object}`);
}

/** That the log named the object (and the metric counted it) since `from`. */
function expectLogged(from: number, object: string) {
  const line = logged.slice(from).find((entry) => entry.message === 'database permission denied');
  expect(line?.fields.object).toBe(object);
  expect(counted.some((values) => values.DatabasePermissionDenied === 1)).toBe(true);
}

/** A subject whose webhook has never been sent (no WEBHOOK_ENDPOINT row), its URL the local sink. */
async function freshSubject(): Promise<number> {
  const [row] = await stack.database.query(
    `SELECT TOP (1) s.ID AS id FROM dbo.SUBJECT AS s
      WHERE NOT EXISTS (SELECT 1 FROM dbo.WEBHOOK_ENDPOINT AS e WHERE e.SUBJECT_ID = s.ID) ORDER BY s.ID DESC`,
  );
  const id = Number(row!.id);
  const response = await fetch(`${stack.url}/_local/subjects/${id}/webhook`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ url: `${stack.url}/_local/webhook-sink`, secret: 'least-privilege-secret' }),
  });
  expect(response.status).toBe(200);
  return id;
}
const received = async (subjectId: number, documentId: number) => {
  const response = await fetch(`${stack.url}/_local/documents/received`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ subjectId, documentId }),
  });
  expect(response.status).toBe(202);
};
const sinkHas = async (documentId: number) => {
  const sink = (await (await fetch(`${stack.url}/_local/webhook-sink`)).json()) as { body: string }[];
  // The receipt webhook's body is the document's id.
  return sink.some((entry) => entry.body.trim() === String(documentId));
};

/**
 * Without `permission` on `object`, a receipt event is never sent: each attempt fails before the
 * POST (logged naming the object), is retried on the schedule (locally 1, 2, 4 s), then dead-lettered.
 */
const receiptNeverSent =
  (object: string, permission: string, subject: () => Promise<number> = async () => 1) =>
  async () => {
    const subjectId = await subject();
    const documentId = 1_002_000 + Math.floor(Math.random() * 100_000);
    await without(object, permission, async () => {
      const from = logged.length;
      await received(subjectId, documentId);
      await expect
        .poll(() => logged.slice(from).some((e) => e.fields.object === object), { timeout: 20_000 })
        .toBe(true);
      expectLogged(from, object);
      await expect
        .poll(
          () =>
            logged
              .slice(from)
              .some(
                (e) => e.message === 'webhook' && e.fields.documentId === documentId && e.fields.deadLetter,
              ),
          { timeout: 40_000, interval: 500 },
        )
        .toBe(true);
      expect(await sinkHas(documentId)).toBe(false);
    });
  };

/**
 * Without `permission` on `object`, a receipt event is sent, but what follows the POST fails, the
 * log naming the object: resolves to the event's document id.
 */
async function receiptSentLogged(object: string, permission: string): Promise<number> {
  const documentId = 1_004_000 + Math.floor(Math.random() * 100_000);
  await without(object, permission, async () => {
    const from = logged.length;
    await received(1, documentId);
    await expect.poll(() => sinkHas(documentId), { timeout: 20_000, interval: 500 }).toBe(true);
    await expect
      .poll(() => logged.slice(from).some((e) => e.fields.object === object), { timeout: 20_000 })
      .toBe(true);
    expectLogged(from, object);
  });
  return documentId;
}

/** Without `permission` on `object`, a signed call of 1001 answers 500/180 naming the object. */
const signedCallDenied = (object: string, permission: string) => async () => {
  await without(object, permission, async () => {
    expectWebDenied(await webCall(1001), object);
  });
};

/** Change notifications' routes (CONTRACT 4c) with the demo user. */
const subscriptions = (path = '', init: RequestInit = {}) =>
  fetch(`${stack.url}/demo/JsonAPI/Subscriptions${path}`, {
    ...init,
    headers: { authorization: DEMO_AUTH, 'content-type': 'application/json' },
  });
const subscribe = () =>
  subscriptions('', {
    method: 'POST',
    body: JSON.stringify({ source: 'SUBJECT', url: `${stack.url}/_local/webhook-sink` }),
  });
/** A subscription made with every grant; deleted after `probe`. */
async function withSubscription(probe: (id: string) => Promise<void>) {
  const made = await subscribe();
  expect(made.status).toBe(201);
  const { id } = (await made.json()) as { id: string };
  try {
    await probe(id);
  } finally {
    await subscriptions(`/${id}`, { method: 'DELETE' });
  }
}
/** Without `permission` on `object`, a new subscription's ping cannot be delivered: the log names the object. */
const pingNotRecorded = (object: string, permission: string) => async () => {
  await without(object, permission, async () => {
    const from = logged.length;
    await withSubscription(async () => {
      await expect
        .poll(() => logged.slice(from).some((e) => e.fields.object === object), { timeout: 20_000 })
        .toBe(true);
      expectLogged(from, object);
    });
  });
};
/** Without `permission` on `object`, creating a subscription answers 500 naming the object. */
const creationDenied = (object: string, permission: string) => async () => {
  await without(object, permission, async () => {
    await expectDenied(await subscribe(), object, new RegExp(permission));
  });
};

/** Runs `work` with a pool of the tenant's own login (the service's role only), closed after. */
async function asTenant<T>(work: (db: ReturnType<typeof createMssqlDatabase>) => Promise<T>): Promise<T> {
  const login = demoTenantConnection() as { connectionString: string };
  const db = createMssqlDatabase({ connectionString: `${login.connectionString};Application Name=probe` });
  try {
    return await work(db);
  } finally {
    await db.close();
  }
}
const keyDigest = () => randomBytes(32).toString('hex');
/** Exactly once's statements on the keys' table (CONTRACT 5a), as the tenant's login sends them. */
const KEY_STATEMENTS = {
  SELECT:
    'SELECT FINGERPRINT AS fingerprint FROM dbo.SVC_IDEMPOTENCY WHERE KEY_DIGEST = @p1 AND EXPIRES_AT > SYSUTCDATETIME()',
  INSERT: `INSERT INTO dbo.SVC_IDEMPOTENCY (KEY_DIGEST, TENANT, FINGERPRINT, HTTP_STATUS, EXPIRES_AT)
    VALUES (@p1, N'demo', @p1, 200, DATEADD(hour, 24, SYSUTCDATETIME()))`,
} as const;
/**
 * Without `permission` on the keys' table, its statement is refused naming the table and the
 * grant. (The answer of a keyed call, 500/180, comes with the Web API's Idempotency-Key route.)
 */
const keyStatementDenied = (permission: keyof typeof KEY_STATEMENTS) => async () => {
  // With the grant, the statement runs.
  await asTenant((db) => db.query(KEY_STATEMENTS[permission], [keyDigest()]));
  await without('dbo.SVC_IDEMPOTENCY', permission, async () => {
    const refused = await asTenant((db) => db.query(KEY_STATEMENTS[permission], [keyDigest()])).catch(
      (e: unknown) => e,
    );
    expect(refused).toBeInstanceOf(DatabasePermissionError);
    expect((refused as DatabasePermissionError).object).toBe('dbo.SVC_IDEMPOTENCY');
    expect((refused as DatabasePermissionError).grant).toMatch(new RegExp(permission));
  });
};

/** What each documented grant's absence looks like, by `object permission`. */
const probes: Record<string, () => Promise<void>> = {
  'dbo.SVCDOC SELECT': async () => {
    const { fileGUID } = (await (await setFile()).json()) as { fileGUID: string };
    await without('dbo.SVCDOC', 'SELECT', async () => {
      await expectDenied(await data(`File/getFile/${fileGUID}`), 'dbo.SVCDOC', /grant SELECT/);
    });
  },
  'dbo.SVCDOC INSERT': async () => {
    await without('dbo.SVCDOC', 'INSERT', async () => {
      await expectDenied(await setFile(), 'dbo.SVCDOC', /INSERT/);
    });
  },
  'dbo.WS_OPERATION SELECT': async () => {
    await without('dbo.WS_OPERATION', 'SELECT', async () => {
      // A vltyp the service has not remembered.
      expectWebDenied(await webCall(40_000 + Math.floor(Math.random() * 10_000)), 'dbo.WS_OPERATION');
    });
  },
  'dbo.WS_REPLAY_GUARD SELECT': signedCallDenied('dbo.WS_REPLAY_GUARD', 'SELECT'),
  'dbo.WS_REPLAY_GUARD INSERT': signedCallDenied('dbo.WS_REPLAY_GUARD', 'INSERT'),
  'dbo.WS_REPLAY_GUARD UPDATE': signedCallDenied('dbo.WS_REPLAY_GUARD', 'UPDATE'),
  'dbo.WS_REPLAY_GUARD DELETE': async () => {
    await without('dbo.WS_REPLAY_GUARD', 'DELETE', async () => {
      // Calls are answered; only expired claims stay.
      expect((await webCall(1001)).status).toBe(200);
    });
  },
  'dbo.WS_JOURNAL SELECT': signedCallDenied('dbo.WS_JOURNAL', 'SELECT'),
  'dbo.WS_JOURNAL INSERT': signedCallDenied('dbo.WS_JOURNAL', 'INSERT'),
  'dbo.WS_JOURNAL UPDATE': signedCallDenied('dbo.WS_JOURNAL', 'UPDATE'),
  'dbo.SVC_JOURNAL SELECT': async () => {
    const journaled = await webCall(1001);
    expect(journaled.status).toBe(200);
    await without('dbo.SVC_JOURNAL', 'SELECT', async () => {
      // 997 reads whose call the journal row is.
      expectWebDenied(await webCall(997, [{ idws_journal: journaled.body.id }]), 'dbo.SVC_JOURNAL');
    });
  },
  'dbo.SVC_JOURNAL INSERT': signedCallDenied('dbo.SVC_JOURNAL', 'INSERT'),
  'dbo.SUBJECT SELECT': async () => {
    await without('dbo.SUBJECT', 'SELECT', async () => {
      expect(await admin({ action: 'status', tenant: 'demo', subjectId: 1 })).toMatchObject({
        ok: false,
        code: 'database_permission_denied',
      });
      // Also a table the tenant serves: now like an unknown one.
      expect((await data('Data/getRowsCount/SUBJECT')).status).toBe(404);
    });
  },
  'dbo.WEBHOOK_ENDPOINT SELECT': async () => {
    await without('dbo.WEBHOOK_ENDPOINT', 'SELECT', async () => {
      const answer = await admin({ action: 'status', tenant: 'demo', subjectId: 1 });
      expect(answer).toMatchObject({ ok: false, code: 'database_permission_denied' });
      expect(answer.error).toContain('dbo.WEBHOOK_ENDPOINT');
    });
  },
  // A subject with no endpoint row yet: its first event makes one.
  'dbo.WEBHOOK_ENDPOINT INSERT': receiptNeverSent('dbo.WEBHOOK_ENDPOINT', 'INSERT', freshSubject),
  'dbo.WEBHOOK_ENDPOINT UPDATE': async () => {
    await without('dbo.WEBHOOK_ENDPOINT', 'UPDATE', async () => {
      expect(await admin({ action: 'enable', tenant: 'demo', subjectId: 1 })).toMatchObject({
        ok: false,
        code: 'database_permission_denied',
      });
    });
  },
  'dbo.WEBHOOK_DELIVERY SELECT': async () => {
    await without('dbo.WEBHOOK_DELIVERY', 'SELECT', async () => {
      const answer = await admin({ action: 'recover', tenant: 'demo', since: '2026-01-01T00:00:00Z' });
      expect(answer).toMatchObject({ ok: false, code: 'database_permission_denied' });
      expect(answer.error).toContain('dbo.WEBHOOK_DELIVERY');
    });
  },
  // Sent, but its attempt is not recorded: the log says what to grant.
  'dbo.WEBHOOK_DELIVERY INSERT': async () => {
    await receiptSentLogged('dbo.WEBHOOK_DELIVERY', 'INSERT');
  },
  'dbo.SVC_WEBHOOK_SENDING SELECT': receiptNeverSent('dbo.SVC_WEBHOOK_SENDING', 'SELECT'),
  'dbo.SVC_WEBHOOK_SENDING INSERT': receiptNeverSent('dbo.SVC_WEBHOOK_SENDING', 'INSERT'),
  'dbo.SVC_WEBHOOK_SENDING UPDATE': receiptNeverSent('dbo.SVC_WEBHOOK_SENDING', 'UPDATE'),
  'dbo.SVC_WEBHOOK_SENDING DELETE': async () => {
    // Sent and recorded; only the claim stays (until it lapses), and the log says what to grant:
    // that the claim could not be ended, not that the attempt could not be recorded.
    const from = logged.length;
    const documentId = await receiptSentLogged('dbo.SVC_WEBHOOK_SENDING', 'DELETE');
    const eventId = webhookEventId({ tenant: 'demo', subjectId: 1, documentId });
    const [claim] = await stack.database.query(
      `SELECT COUNT(*) AS n FROM dbo.SVC_WEBHOOK_SENDING WHERE TENANT = N'demo' AND EVENT_ID = @p1`,
      [eventId],
    );
    expect(Number(claim!.n)).toBe(1);
    const attempts = await stack.database.query(
      `SELECT OUTCOME AS outcome FROM dbo.WEBHOOK_DELIVERY WHERE TENANT = N'demo' AND EVENT_ID = @p1`,
      [eventId],
    );
    expect(attempts.map((row) => String(row.outcome).trim())).toEqual(['delivered']);
    const messages = logged.slice(from).map((entry) => entry.message);
    expect(messages).toContain('could not release the claim to send the webhook (it lapses at its time)');
    expect(messages).not.toContain('could not record the webhook attempt');
  },
  'dbo.SVC_CHANGE_FEED SELECT': async () => {
    await without('dbo.SVC_CHANGE_FEED', 'SELECT', async () => {
      await expectDenied(await data('Data/getChanges/SUBJECT'), 'dbo.SVC_CHANGE_FEED', /SELECT/);
    });
  },
  'dbo.SVC_SUBSCRIPTION SELECT': async () => {
    await without('dbo.SVC_SUBSCRIPTION', 'SELECT', async () => {
      await expectDenied(await subscriptions(), 'dbo.SVC_SUBSCRIPTION', /SELECT/);
    });
  },
  'dbo.SVC_SUBSCRIPTION INSERT': creationDenied('dbo.SVC_SUBSCRIPTION', 'INSERT'),
  'dbo.SVC_SUBSCRIPTION UPDATE': async () => {
    await withSubscription(async (id) => {
      await without('dbo.SVC_SUBSCRIPTION', 'UPDATE', async () => {
        await expectDenied(
          await subscriptions(`/${id}/rotate`, { method: 'POST' }),
          'dbo.SVC_SUBSCRIPTION',
          /UPDATE/,
        );
      });
    });
  },
  'dbo.SVC_SUBSCRIPTION DELETE': async () => {
    await withSubscription(async (id) => {
      await without('dbo.SVC_SUBSCRIPTION', 'DELETE', async () => {
        await expectDenied(
          await subscriptions(`/${id}`, { method: 'DELETE' }),
          'dbo.SVC_SUBSCRIPTION',
          /DELETE/,
        );
      });
    });
  },
  'dbo.SVC_NOTIFICATION_DELIVERY SELECT': pingNotRecorded('dbo.SVC_NOTIFICATION_DELIVERY', 'SELECT'),
  'dbo.SVC_NOTIFICATION_DELIVERY INSERT': pingNotRecorded('dbo.SVC_NOTIFICATION_DELIVERY', 'INSERT'),
  'dbo.SVC_NOTIFIER_STATE SELECT': creationDenied('dbo.SVC_NOTIFIER_STATE', 'SELECT'),
  'dbo.SVC_NOTIFIER_STATE INSERT': creationDenied('dbo.SVC_NOTIFIER_STATE', 'INSERT'),
  'dbo.SVC_NOTIFIER_STATE UPDATE': creationDenied('dbo.SVC_NOTIFIER_STATE', 'UPDATE'),
  'dbo.SVC_IDEMPOTENCY SELECT': keyStatementDenied('SELECT'),
  'dbo.SVC_IDEMPOTENCY INSERT': keyStatementDenied('INSERT'),
  'dbo.SVC_IDEMPOTENCY DELETE': async () => {
    // A key past its time, for the clean-up to remove.
    const [expired] = await recordKeys(stack.database, 'demo', 1, -48);
    await without('dbo.SVC_IDEMPOTENCY', 'DELETE', async () => {
      const from = logged.length;
      const result = await lambda.send(
        new InvokeCommand({ FunctionName: 'changeFeedRetention', Payload: new TextEncoder().encode('{}') }),
      );
      expect(result.FunctionError).toBeDefined();
      expectLogged(from, 'dbo.SVC_IDEMPOTENCY');
      expect(logged.slice(from).some((e) => e.message === 'idempotency retention failed')).toBe(true);
      expect(await stillRecorded(stack.database, [expired!])).toEqual([expired]);
    });
    // With it given back, the next run removes the key.
    const result = await lambda.send(
      new InvokeCommand({ FunctionName: 'changeFeedRetention', Payload: new TextEncoder().encode('{}') }),
    );
    expect(result.FunctionError).toBeUndefined();
    expect(await stillRecorded(stack.database, [expired!])).toEqual([]);
  },
  'dbo.SVC_CHANGE_FEED UPDATE': async () => {
    await without('dbo.SVC_CHANGE_FEED', 'UPDATE', async () => {
      await erpWrite();
      await expectDenied(await data('Data/getChanges/SUBJECT'), 'dbo.SVC_CHANGE_FEED', /UPDATE/);
    });
  },
};

describe('least privilege on the T-SQL engine (the tenant logs in with the service role only)', () => {
  it('serves what the role may read and nothing else: a table it was not granted is 404 and not described', async () => {
    expect((await data('Data/getRowsCount/SUBJECT')).status).toBe(200);
    // The ERP adds a table; the role was not granted it.
    await stack.database.query(
      "IF OBJECT_ID(N'dbo.ERP_NEW_TABLE', N'U') IS NULL CREATE TABLE dbo.ERP_NEW_TABLE (ID int NOT NULL PRIMARY KEY)",
    );
    const refused = await data('Data/getRowsCount/ERP_NEW_TABLE');
    expect(refused.status).toBe(404);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe('data_source_not_found');
    const description = await (await data('openapi.json')).text();
    expect(description).toContain('SUBJECT');
    expect(description).not.toContain('ERP_NEW_TABLE');
    await stack.database.query(`GRANT SELECT ON dbo.ERP_NEW_TABLE TO ${LOCAL_SERVICE_ROLE}`);
    expect((await data('Data/getRowsCount/ERP_NEW_TABLE')).status).toBe(200);
  });

  it("holds nothing on the demo's WS_APPLICATION: the demo tenant's applications are in the registry, and the Web API answers", async () => {
    // The tenant's login, on a pool of its own (closing it leaves the stack's).
    const login = demoTenantConnection() as { connectionString: string };
    const asTenant = createMssqlDatabase({
      connectionString: `${login.connectionString};Application Name=probe`,
    });
    try {
      await expect(asTenant.query('SELECT COUNT(*) AS n FROM dbo.WS_APPLICATION')).rejects.toBeInstanceOf(
        DatabasePermissionError,
      );
    } finally {
      await asTenant.close();
    }
    const test = await fetch(`${stack.url}/demo/WebAPI/test`, { headers: { 'x-api-key': 'other-api-key' } });
    expect(test.status).toBe(200);
    expect((await webCall(1001)).status).toBe(200);
  });

  it('answers a read permission taken away since the table was looked up with 404, as an unknown name', async () => {
    expect((await data('Data/getRowsCount/UCET')).status).toBe(200);
    await without('dbo.UCET', 'SELECT', async () => {
      const response = await data('Data/getRowsCount/UCET');
      expect(response.status).toBe(404);
    });
    expect((await data('Data/getRowsCount/UCET')).status).toBe(200);
  });

  for (const grant of SERVICE_GRANTS) {
    it(`without ${grant.permission} on ${grant.object}: ${grant.without}`, async () => {
      const probe = probes[`${grant.object} ${grant.permission}`];
      // Every grant the docs list has its probe here.
      expect(probe, `no probe for ${grant.permission} on ${grant.object}`).toBeDefined();
      await probe!();
    }, 120_000);
  }

  it("takes a key's application lock with no grant of its own (sp_getapplock is public's): held by its transaction, refused to another", async () => {
    const lock = `DECLARE @result int;
      EXEC @result = sp_getapplock @Resource = @p1, @LockMode = 'Exclusive', @LockOwner = 'Transaction', @LockTimeout = 0;
      SELECT @result AS result`;
    const resource = `svc-idempotency:${keyDigest()}`;
    await asTenant(async (first) => {
      await asTenant(async (second) => {
        let held!: () => void;
        const holding = new Promise<void>((resolve) => {
          held = resolve;
        });
        let release!: () => void;
        const released = new Promise<void>((resolve) => {
          release = resolve;
        });
        const owner = first.transaction(async (tx) => {
          expect(await tx.query(lock, [resource])).toEqual([{ result: 0 }]);
          held();
          await released;
        });
        await holding;
        // Another transaction is refused at once: -999 on the engine (SQL Server: -1), a negative either way.
        const refused = await second.transaction((tx) => tx.query(lock, [resource]));
        expect(Number(refused[0]!.result)).toBeLessThan(0);
        release();
        await owner;
        // Given back with the transaction's end.
        expect(await second.transaction((tx) => tx.query(lock, [resource]))).toEqual([{ result: 0 }]);
      });
    });
  });

  it("runs the demo's writing operation 2001 with the role (and the demo procedures' own grants on the engine)", async () => {
    const answer = await webCall(2001, [{ cislo: `LP-${Date.now()}`, subject_id: 1, castka: 12.5 }]);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ vlResult: 1, data: [{ id: expect.any(Number) }] });
  });

  it("without EXECUTE on an operation's procedure: that vltyp answers 500/180, journaled as failed", async () => {
    await without('dbo.WS_OP_SUBJECT_SEARCH', 'EXECUTE', async () => {
      const from = logged.length;
      const answer = await webCall(1001);
      expectWebDenied(answer, 'ws_op_subject_search');
      expect(answer.body.id).toEqual(expect.any(Number));
      expectLogged(from, 'ws_op_subject_search');
      // Journaled as failed with the same error: 997 gives it.
      const later = await webCall(997, [{ idws_journal: answer.body.id }]);
      expect(later.status).toBe(200);
      expect(later.body.data).toEqual([{ resultForId: answer.body, id: answer.body.id }]);
    });
  });

  it("without EXECUTE on an asynchronous operation's procedure: the job ends at once with 180", async () => {
    await without('dbo.WS_OP_SLEEP', 'EXECUTE', async () => {
      const from = logged.length;
      const call = signedCall(envelope(9001, [{ seconds: 0 }]));
      const response = await fetch(`${stack.url}/demo/WebAPI/getDataAsync`, {
        method: 'POST',
        headers: call.headers,
        body: call.body,
      });
      const body = (await response.json()) as { id: number; vlResult: number; data: unknown };
      // The job's answer, given within CommandTimeoutAsync: failed, saying what to grant.
      expect([response.status, body.vlResult]).toEqual([200, -1]);
      expect(body.data).toEqual([
        { error: [{ errorCode: '180', errorMessage: expect.stringContaining('may not use ws_op_sleep') }] },
      ]);
      expectLogged(from, 'ws_op_sleep');
    });
  });

  it('without EXECUTE on a setFile procedure: 502 procedure_failed naming the grant, the file kept', async () => {
    await without('dbo.DEMO_FILE_RECEIVED', 'EXECUTE', async () => {
      const response = await setFile('?userDBProcedure=DEMO_FILE_RECEIVED');
      expect(response.status).toBe(502);
      const body = (await response.json()) as { error: { code: string; message: string; fileGUID: string } };
      expect(body.error.code).toBe('procedure_failed');
      expect(body.error.message).toContain('grant EXECUTE');
      expect((await data(`File/getFile/${body.error.fileGUID}`)).status).toBe(200);
    });
  });

  it("without SELECT or UPDATE on a recorded table's change table: getChanges 500 naming it", async () => {
    await without('dbo.SVC_CHANGES_SUBJECT', 'SELECT', async () => {
      await expectDenied(
        await data('Data/getChanges/SUBJECT'),
        'svc_changes_subject',
        /SELECT, UPDATE, DELETE/,
      );
    });
    await without('dbo.SVC_CHANGES_SUBJECT', 'UPDATE', async () => {
      await erpWrite();
      await expectDenied(
        await data('Data/getChanges/SUBJECT'),
        'svc_changes_subject',
        /SELECT, UPDATE, DELETE/,
      );
    });
  });

  it('without DELETE on a change table: the retention clean-up fails, and the log names the table', async () => {
    // A change stamped (by a read) long enough ago for the clean-up to remove it.
    await erpWrite();
    expect((await data('Data/getChanges/SUBJECT?rows=1')).status).toBe(200);
    await stack.database.query(
      'UPDATE dbo.SVC_CHANGES_SUBJECT SET STAMPED_AT = DATEADD(day, -30, SYSUTCDATETIME()) WHERE BATCH IS NOT NULL',
    );
    await without('dbo.SVC_CHANGES_SUBJECT', 'DELETE', async () => {
      const from = logged.length;
      const result = await lambda.send(
        new InvokeCommand({ FunctionName: 'changeFeedRetention', Payload: new TextEncoder().encode('{}') }),
      );
      expect(result.FunctionError).toBeDefined();
      expectLogged(from, 'svc_changes_subject');
    });
  });
});
