import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { handler as getRowsCount } from '../../functions/data-api/getRowsCount.js';
import { handler as webGetData } from '../../functions/web-api/getData.js';
import { startTsqlDemo, type TsqlDemo, tsqlEngineDir } from '../../infra/local/tsql-engine.js';
import { fetchServerCertificates } from '../../infra/tools/server-certificates.js';
import { createPowertoolsLog } from '../../shared/adapters/powertools/log.js';
import { openDatabase } from '../../shared/config/databases.js';
import { setTenantRegistry } from '../../shared/config/tenant-registry.js';
import { type DatabaseConnection, parseTenantRegistry } from '../../shared/config/tenants.js';
import { type Database, DatabaseTlsError } from '../../shared/core/database.js';
import { logFormatFromEnv, serviceLog, useObservability } from '../../shared/lambda/observability.js';
import { DEMO_AUTH } from '../support/demo.js';
import { httpApiEvent, invokeHttp } from '../support/http-api-event.js';
import { mssqlUrl } from '../support/mssql.js';
import { startTcpProxy } from '../support/tcp-proxy.js';
import {
  createSelfSignedServerIdentity,
  createTestCertificateAuthority,
  createTestServerIdentity,
  type TestCertificateAuthority,
  type TestServerIdentity,
} from '../support/tls-certificates.js';
import { DEMO_WEB_API, envelope } from '../support/web-api.js';
import { signedWebApiEvent } from '../support/web-api-event.js';

/**
 * Encrypted and verified connections (CONTRACT.md section 7) on the T-SQL engine with TLS on: a CA
 * and server certificates made here with openssl, engine copies presenting them, and the service's
 * own path to a tenant database (the registry's connection, openDatabase, the SQL Server adapter,
 * the handlers). Runs in `npm run test:tsql` (and wherever MSSQL_URL is set) when the engine is at
 * hand: a SQL Server's certificate is not something a test can set.
 */
const engineAtHand = existsSync(join(tsqlEngineDir(), 'engine.sh'));
const runs = Boolean(mssqlUrl) && engineAtHand;
if (mssqlUrl && !engineAtHand) console.warn('T-SQL engine not found: the TLS suite needs it and is skipped');

const ENCRYPTION = 'SELECT encrypt_option FROM sys.dm_exec_connections WHERE session_id = @@SPID';
const HASH = 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=';
const PASSWORD = process.env.BABELFISH_PASSWORD ?? '12345678';
const HANDSHAKE = 'The tenant database refused or failed the TLS handshake: ';
const NOT_TRUSTED = `${HANDSHAKE}certificate not trusted (unable to verify the first certificate)`;
const WRONG_NAME = `${HANDSHAKE}certificate does not name the server (the name to verify is not among the certificate's names)`;

/** The same connection string with the engine reached by its IP address instead of its name. */
const byAddress = (url: string) => url.replace('Server=localhost,', 'Server=127.0.0.1,');

describe.skipIf(!runs)('SQL Server connections over TLS (T-SQL engine with TLS on)', () => {
  let tenantCa: TestCertificateAuthority;
  let otherCa: TestCertificateAuthority;
  let serverIdentity: TestServerIdentity;
  /** Presents a certificate for localhost and 127.0.0.1 from tenantCa, and requires encryption. */
  let withCa: TsqlDemo;
  /** Presents a self-signed certificate for localhost, as a server without a CA does. */
  let selfSigned: TsqlDemo;
  let selfSignedCertificate: string;
  /** TLS off: a server (or a man in the middle) that answers it does not support encryption. */
  let plain: TsqlDemo;
  const opened: Database[] = [];

  /** The tenant database of `connection`, opened as the service opens it. */
  const open = async (connection: DatabaseConnection) => {
    const database = await openDatabase(connection);
    opened.push(database);
    return database;
  };
  const encryption = async (connection: DatabaseConnection) =>
    (await (await open(connection)).query(ENCRYPTION))[0]?.encrypt_option;
  const failure = async (connection: DatabaseConnection) =>
    (await open(connection)).query('SELECT 1 AS one').then(
      () => undefined,
      (error: unknown) => error,
    );

  beforeAll(async () => {
    [tenantCa, otherCa] = await Promise.all([
      createTestCertificateAuthority('Tenant CA'),
      createTestCertificateAuthority('Someone else'),
    ]);
    const [server, ownCertificate] = await Promise.all([
      createTestServerIdentity(tenantCa, { dns: ['localhost'], ip: ['127.0.0.1'] }),
      createSelfSignedServerIdentity({ dns: ['localhost'] }),
    ]);
    serverIdentity = server;
    selfSignedCertificate = ownCertificate.certificate;
    withCa = await startTsqlDemo({ tls: server });
    selfSigned = await startTsqlDemo({ tls: ownCertificate });
    plain = await startTsqlDemo({ engine: true });
  }, 180_000);

  afterAll(async () => {
    setTenantRegistry(undefined);
    await Promise.all(opened.map((database) => database.close().catch(() => undefined)));
    await Promise.all([withCa, selfSigned, plain].map((demo) => demo?.stop()));
  });

  it('encrypts and verifies with the CA from the registry: the server sees an encrypted connection', async () => {
    // The connection string says nothing about encryption: on, and verified, by default.
    expect(withCa.url).not.toMatch(/encrypt|trust/i);
    expect(
      await encryption({ kind: 'mssql', connectionString: withCa.url, tls: { ca: tenantCa.certificate } }),
    ).toBe('TRUE');
  });

  it("refuses a server whose certificate comes from another CA, or from none the system trusts, with the handshake's reason", async () => {
    for (const tls of [{ ca: otherCa.certificate }, undefined]) {
      const error = await failure({ kind: 'mssql', connectionString: withCa.url, ...(tls && { tls }) });
      expect(error).toBeInstanceOf(DatabaseTlsError);
      expect((error as Error).message).toBe(NOT_TRUSTED);
    }
  });

  it('refuses a certificate that does not name the server to verify (registry or HostNameInCertificate)', async () => {
    for (const connection of [
      {
        kind: 'mssql',
        connectionString: withCa.url,
        tls: { ca: tenantCa.certificate, serverName: 'sql.acme.internal' },
      },
      {
        kind: 'mssql',
        connectionString: `${withCa.url};HostNameInCertificate=sql.acme.internal`,
        tls: { ca: tenantCa.certificate },
      },
    ] as const) {
      const error = await failure(connection);
      expect(error).toBeInstanceOf(DatabaseTlsError);
      expect((error as Error).message).toBe(WRONG_NAME);
    }
  });

  it('reaches a server by its IP address and verifies the name its certificate carries', async () => {
    const ca = tenantCa.certificate;
    const url = byAddress(withCa.url);
    // The address itself is in the certificate; so is the name given to verify.
    expect(await encryption({ kind: 'mssql', connectionString: url, tls: { ca } })).toBe('TRUE');
    expect(
      await encryption({ kind: 'mssql', connectionString: url, tls: { ca, serverName: 'localhost' } }),
    ).toBe('TRUE');
    expect(
      await encryption({
        kind: 'mssql',
        connectionString: `${url};HostNameInCertificate=localhost`,
        tls: { ca },
      }),
    ).toBe('TRUE');
  });

  it("trusts a server's self-signed certificate given as its CA, and nothing else signed that way", async () => {
    expect(
      await encryption({
        kind: 'mssql',
        connectionString: selfSigned.url,
        tls: { ca: selfSignedCertificate, serverName: 'localhost' },
      }),
    ).toBe('TRUE');
    const error = await failure({
      kind: 'mssql',
      connectionString: selfSigned.url,
      tls: { ca: tenantCa.certificate },
    });
    expect((error as Error).message).toBe(`${HANDSHAKE}certificate not trusted (self-signed certificate)`);
  });

  it('encrypts without verifying with TrustServerCertificate=true (the man-in-the-middle opening docs/sql-server.md warns of)', async () => {
    expect(
      await encryption({ kind: 'mssql', connectionString: `${withCa.url};TrustServerCertificate=true` }),
    ).toBe('TRUE');
  });

  it('answers a server that requires encryption, where the string turns it off, with the reason', async () => {
    const error = await failure({ kind: 'mssql', connectionString: `${withCa.url};Encrypt=false` });
    expect(error).toBeInstanceOf(DatabaseTlsError);
    expect((error as Error).message).toBe(
      `${HANDSHAKE}the server requires encryption, which the connection string turns off (Encrypt=false)`,
    );
  });

  it('sends no login in the clear to a server that answers it does not support encryption', async () => {
    // What crosses the wire from the client: TDS packets start with their type, LOGIN7 is 0x10.
    const sent: Buffer[] = [];
    const proxy = await startTcpProxy(plain.port!, { onClientData: (chunk) => sent.push(chunk) });
    try {
      const url = plain.url
        .replace(/Server=[^;]*/, `Server=127.0.0.1,${proxy.port}`)
        .replace(';Encrypt=false;TrustServerCertificate=true', '');
      for (const connectionString of [url, `${url};TrustServerCertificate=true`]) {
        const error = await failure({ kind: 'mssql', connectionString });
        expect(error).toBeInstanceOf(DatabaseTlsError);
        expect((error as Error).message).toBe(
          `${HANDSHAKE}the server does not offer encryption, which the connection string requires`,
        );
      }
      expect(sent.length).toBeGreaterThan(0);
      expect(sent.filter((chunk) => chunk[0] === 0x10)).toEqual([]);
      // Only a connection string that turns encryption off gets through, in the clear, as it asked.
      expect(await encryption({ kind: 'mssql', connectionString: `${url};Encrypt=false` })).toBe('FALSE');
      expect(sent.some((chunk) => chunk[0] === 0x10)).toBe(true);
    } finally {
      await proxy.close();
    }
  });

  it('shows the certificate a server presents (npm run db:certificate), sending none of the login', async () => {
    const sent: Buffer[] = [];
    const proxy = await startTcpProxy(withCa.port!, { onClientData: (chunk) => sent.push(chunk) });
    try {
      const [certificate, ...more] = await fetchServerCertificates(
        withCa.url.replace(/Server=[^;]*/, `Server=localhost,${proxy.port}`),
      );
      expect(more).toEqual([]);
      expect(certificate).toMatchObject({
        subject: 'CN=localhost',
        issuer: 'CN=Tenant CA',
        subjectAltName: 'DNS:localhost, IP Address:127.0.0.1',
        selfSigned: false,
        pem: serverIdentity.certificate,
      });
      // The login went over TLS, but it was not the tenant's: the bytes hold no trace of it.
      expect(Buffer.concat(sent).includes('babelfish_user')).toBe(false);
      expect(Buffer.concat(sent).includes(Buffer.from('babelfish_user', 'utf16le'))).toBe(false);
    } finally {
      await proxy.close();
    }
    const [own] = await fetchServerCertificates(selfSigned.url);
    expect(own).toMatchObject({ selfSigned: true, pem: selfSignedCertificate });
    await expect(fetchServerCertificates(plain.url)).rejects.toThrow(/does not offer encryption/);
  });

  describe('through the handlers', () => {
    const tenant = (connection: DatabaseConnection) => ({
      database: connection,
      dataApiUsers: [{ name: 'demo', passwordHash: HASH }],
      dataSources: '*',
      webApi: { applications: DEMO_WEB_API.applications },
    });
    const rowsCount = (tenantId: string) =>
      invokeHttp(
        getRowsCount,
        httpApiEvent({
          method: 'GET',
          route: '/{tenant}/JsonAPI/Data/getRowsCount/{dataSource}',
          pathParameters: { tenant: tenantId, dataSource: 'SUBJECT' },
          headers: { authorization: DEMO_AUTH },
        }),
      );
    // A signed call: its operation is looked up in the database (`test` reads the registry only).
    const webApi = (tenantId: string) =>
      invokeHttp(
        webGetData,
        signedWebApiEvent('getData', envelope(1001, [{ ico: '25596641' }]), { tenant: tenantId }),
      );

    /** What the process writes (its log lines) while `act` runs. */
    async function logged<T>(act: () => Promise<T>): Promise<{ result: T; output: string }> {
      const lines: string[] = [];
      const capture = (chunk: unknown) => {
        lines.push(String(chunk));
        return true;
      };
      const out = vi.spyOn(process.stdout, 'write').mockImplementation(capture as never);
      const err = vi.spyOn(process.stderr, 'write').mockImplementation(capture as never);
      // The service's real log (tests/support/captured-log.ts keeps lines aside otherwise): what it
      // writes, redacted, is what is checked here.
      const kept = serviceLog();
      useObservability({ log: createPowertoolsLog(logFormatFromEnv()) });
      try {
        return { result: await act(), output: lines.join('') };
      } finally {
        useObservability({ log: kept });
        out.mockRestore();
        err.mockRestore();
      }
    }

    /** No secret and no connection detail in an answer; no secret in the log. */
    const expectNothingSecret = (response: APIGatewayProxyStructuredResultV2, output: string) => {
      for (const secret of [PASSWORD, 'babelfish_user', 'BEGIN CERTIFICATE', String(withCa.port)]) {
        expect(response.body).not.toContain(secret);
      }
      expect(output).not.toContain(`Password=${PASSWORD}`);
      expect(output).not.toContain(withCa.url);
    };

    beforeAll(() => {
      setTenantRegistry(
        parseTenantRegistry({
          tenants: {
            'tls-right': tenant({
              kind: 'mssql',
              connectionString: withCa.url,
              tls: { ca: tenantCa.certificate },
            }),
            'tls-wrong-ca': tenant({
              kind: 'mssql',
              connectionString: withCa.url,
              tls: { ca: otherCa.certificate },
            }),
            'tls-wrong-name': tenant({
              kind: 'mssql',
              connectionString: withCa.url,
              tls: { ca: tenantCa.certificate, serverName: 'sql.acme.internal' },
            }),
          },
        }),
      );
    });

    it('Data API: 200 with the right CA; 503 database_tls_failed naming the TLS problem otherwise', async () => {
      const ok = await rowsCount('tls-right');
      expect(ok.statusCode).toBe(200);
      expect(JSON.parse(ok.body!)).toEqual({ SUBJECT: [{ rowsCount: expect.any(Number) }] });

      for (const [tenantId, message] of [
        ['tls-wrong-ca', NOT_TRUSTED],
        ['tls-wrong-name', WRONG_NAME],
      ] as const) {
        const { result: response, output } = await logged(() => rowsCount(tenantId));
        expect(response.statusCode).toBe(503);
        expect(JSON.parse(response.body!)).toEqual({
          error: { code: 'database_tls_failed', message, requestId: 'aws-test-request' },
        });
        expectNothingSecret(response, output);
        // The log keeps the cause, for whoever runs the service.
        expect(output).toContain('request failed');
      }
    });

    it('Web API: answered with the right CA; 503 with errorCode 150 naming the TLS problem otherwise', async () => {
      const ok = await webApi('tls-right');
      expect(ok.statusCode).toBe(200);
      expect(JSON.parse(ok.body!)).toMatchObject({ vlResult: 1, data: [{ ico: '25596641' }] });

      for (const [tenantId, message] of [
        ['tls-wrong-ca', NOT_TRUSTED],
        ['tls-wrong-name', WRONG_NAME],
      ] as const) {
        const { result: response, output } = await logged(() => webApi(tenantId));
        expect(response.statusCode).toBe(503);
        expect(JSON.parse(response.body!)).toEqual({
          id: null,
          vlResult: -1,
          data: [{ error: [{ errorCode: '150', errorMessage: message }] }],
        });
        expectNothingSecret(response, output);
      }
    });
  });
});
