import { generateKeyPairSync } from 'node:crypto';
import sql from 'mssql';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  mapError,
  parseConnectionString,
  refuseCleartextLogin,
} from '../../shared/adapters/mssql/connection.js';
import { readConnectionSecurity } from '../../shared/adapters/mssql/connection-security.js';
import { parseTenantRegistry } from '../../shared/config/tenants.js';
import { DatabaseTlsError, DatabaseUnavailableError } from '../../shared/core/database.js';
import { toServiceError } from '../../shared/lambda/http.js';
import { createTestCertificateAuthority } from '../support/tls-certificates.js';

const HASH = 'scrypt$16384$8$1$ZGVtby10ZW5hbnQtc2FsdA==$x2bp48ourmNi7AJz+st/kNLkTjPJ/XnX7NIpiDrZ8ig=';
const CONNECTION = 'Server=sql.acme.internal;Database=ERP;User Id=svc;Password=Secret-42';

let ca: string;
let otherCa: string;
beforeAll(async () => {
  const [acme, other] = await Promise.all([
    createTestCertificateAuthority('Acme CA'),
    createTestCertificateAuthority('Acme CA 2'),
  ]);
  ca = acme.certificate;
  otherCa = other.certificate;
});

describe('Function: readConnectionSecurity', () => {
  it('encrypts and verifies unless the connection string says otherwise', () => {
    expect(readConnectionSecurity(CONNECTION)).toEqual({ encrypt: true, trustServerCertificate: false });
    expect(readConnectionSecurity('mssql://svc:pw@sql.acme.internal/ERP')).toEqual({
      encrypt: true,
      trustServerCertificate: false,
    });
  });

  it("reads SQL Server's keywords and values in both forms, any case", () => {
    const encrypt = (value: string) => readConnectionSecurity(`${CONNECTION};Encrypt=${value}`).encrypt;
    expect(['true', 'Yes', 'MANDATORY', '1'].map(encrypt)).toEqual([true, true, true, true]);
    expect(['false', 'no', 'Optional', '0'].map(encrypt)).toEqual([false, false, false, false]);
    expect(encrypt('Strict')).toBe('strict');
    expect(
      readConnectionSecurity(
        `${CONNECTION};Trust Server Certificate=yes;Host Name In Certificate=db.acme.cz`,
      ),
    ).toEqual({ encrypt: true, trustServerCertificate: true, serverName: 'db.acme.cz' });
    expect(
      readConnectionSecurity(
        'mssql://svc:pw@10.0.0.5/ERP?Encrypt=strict&TrustServerCertificate=false&hostNameInCertificate=sql.acme.internal',
      ),
    ).toEqual({ encrypt: 'strict', trustServerCertificate: false, serverName: 'sql.acme.internal' });
  });

  it('reads a keyword inside a quoted or braced value as part of that value, as the driver does', () => {
    expect(readConnectionSecurity(`${CONNECTION.replace('Secret-42', '{x;Encrypt=false}')}`).encrypt).toBe(
      true,
    );
  });

  it("takes the registry's CA and name to verify", () => {
    expect(readConnectionSecurity(CONNECTION, { ca: 'PEM', serverName: 'db.acme.cz' })).toEqual({
      encrypt: true,
      trustServerCertificate: false,
      serverName: 'db.acme.cz',
      ca: 'PEM',
    });
    // The same name both ways is no contradiction.
    expect(
      readConnectionSecurity(`${CONNECTION};HostNameInCertificate=DB.acme.cz`, { serverName: 'db.acme.cz' })
        .serverName,
    ).toBe('db.acme.cz');
  });

  it('refuses values it cannot honour and settings the string would void, quoting no part of the string', () => {
    const refusal = (connectionString: string, tls?: { ca?: string; serverName?: string }) => {
      try {
        readConnectionSecurity(connectionString, tls);
      } catch (error) {
        expect((error as Error).message).not.toContain('Secret-42');
        return { setting: (error as { setting?: string }).setting, message: (error as Error).message };
      }
      throw new Error('accepted');
    };
    expect(refusal(`${CONNECTION};Encrypt=maybe`)).toEqual({
      setting: 'connectionString',
      message: 'Encrypt must be true, false or strict (or yes/no, mandatory/optional, 1/0)',
    });
    expect(refusal(`${CONNECTION};TrustServerCertificate=sometimes`).setting).toBe('connectionString');
    expect(refusal(`${CONNECTION};HostNameInCertificate=a b`).setting).toBe('connectionString');
    expect(refusal(`${CONNECTION};Encrypt=false`, { ca: 'PEM' })).toEqual({
      setting: 'tls',
      message: 'is set, but the connection string turns encryption off (Encrypt=false): remove one of them',
    });
    expect(refusal(`${CONNECTION};TrustServerCertificate=true`, { serverName: 'x' }).message).toMatch(
      /trusts any certificate \(TrustServerCertificate=true\), which would ignore it/,
    );
    expect(
      refusal(`${CONNECTION};HostNameInCertificate=a.acme.cz`, { serverName: 'b.acme.cz' }).setting,
    ).toBe('tls');
  });
});

describe('Function: parseConnectionString (encryption)', () => {
  it('gives the driver every encryption setting, not its defaults', () => {
    const config = parseConnectionString(CONNECTION);
    expect(config.options).toMatchObject({ encrypt: true, trustServerCertificate: false });
    expect(config.options).not.toHaveProperty('serverName');
    expect(config.options).not.toHaveProperty('cryptoCredentialsDetails');
    expect(config.beforeConnect).toEqual(expect.any(Function));
    // mssql's own reading of `Encrypt=optional` is true; SQL Server's is "not required".
    expect(parseConnectionString(`${CONNECTION};Encrypt=optional`).options?.encrypt).toBe(false);
    expect(parseConnectionString(`${CONNECTION};Encrypt=optional`).beforeConnect).toBeUndefined();
    expect(parseConnectionString(`${CONNECTION};Encrypt=strict`).options?.encrypt).toBe('strict');
  });

  it('maps the CA to the TLS context and the name to verify to serverName', () => {
    const config = parseConnectionString(`${CONNECTION.replace('sql.acme.internal', '10.0.0.5')}`, {
      ca,
      serverName: 'sql.acme.internal',
    });
    expect(config.server).toBe('10.0.0.5');
    expect(config.options).toMatchObject({
      encrypt: true,
      trustServerCertificate: false,
      serverName: 'sql.acme.internal',
      cryptoCredentialsDetails: { ca },
    });
    expect(parseConnectionString(`${CONNECTION};HostNameInCertificate=db.acme.cz`).options?.serverName).toBe(
      'db.acme.cz',
    );
  });

  it('says what is wrong without echoing the string', () => {
    expect(() => parseConnectionString(`${CONNECTION};Encrypt=maybe`)).toThrow(
      /^Invalid SQL Server connection string: Encrypt must be true, false or strict/,
    );
    expect(() => parseConnectionString(`${CONNECTION};Encrypt=no`, { ca })).toThrow(
      /^Invalid SQL Server connection string: tls is set, but the connection string turns encryption off/,
    );
  });
});

describe('Function: refuseCleartextLogin', () => {
  const negotiating = (encrypted: boolean) => {
    const connection = {
      closed: false,
      messageIo: { tlsNegotiationComplete: false },
      async performTlsNegotiation() {
        this.messageIo.tlsNegotiationComplete = encrypted;
      },
      close() {
        this.closed = true;
      },
    };
    return connection;
  };

  it('lets an encrypted negotiation through and refuses one that left the connection in the clear', async () => {
    const encrypted = negotiating(true);
    refuseCleartextLogin(encrypted);
    await expect(encrypted.performTlsNegotiation()).resolves.toBeUndefined();
    const clear = negotiating(false);
    refuseCleartextLogin(clear);
    await expect(clear.performTlsNegotiation()).rejects.toMatchObject({ code: 'ECLEARTEXT' });
  });

  it('makes no connection where the driver has no negotiation to check', () => {
    const connection = {
      closed: false,
      close() {
        this.closed = true;
      },
    };
    expect(() => refuseCleartextLogin(connection)).toThrow(/cannot be checked/);
    expect(connection.closed).toBe(true);
  });
});

describe('Function: mapError (TLS)', () => {
  /** A failed connection as mssql reports it: its ConnectionError around tedious's, around Node's. */
  const failedConnection = (code: string, message: string) =>
    new sql.ConnectionError(
      Object.assign(new Error(`Failed to connect to db.internal:1433 - ${message}`), {
        code: 'ESOCKET',
        cause: Object.assign(new Error(message), { code }),
      }) as unknown as string,
    );

  it('names the handshake problem in its own words, without hosts or ports', () => {
    const cases: [string, string, string][] = [
      [
        'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
        'unable to verify the first certificate',
        'certificate not trusted (unable to verify the first certificate)',
      ],
      [
        'DEPTH_ZERO_SELF_SIGNED_CERT',
        'self-signed certificate',
        'certificate not trusted (self-signed certificate)',
      ],
      ['CERT_HAS_EXPIRED', 'certificate has expired', 'certificate expired'],
      [
        'ERR_TLS_CERT_ALTNAME_INVALID',
        "Hostname/IP does not match certificate's altnames: Host: db.internal. is not in the cert's altnames: DNS:x",
        "certificate does not name the server (the name to verify is not among the certificate's names)",
      ],
      ['CERT_CHAIN_TOO_LONG', 'certificate chain too long', 'certificate not accepted (cert chain too long)'],
      [
        'ERR_SSL_TLSV1_ALERT_PROTOCOL_VERSION',
        'tlsv1 alert protocol version',
        'handshake failed (tlsv1 alert protocol version)',
      ],
      [
        'ECONNRESET',
        'Client network socket disconnected before secure TLS connection was established',
        'the server closed the connection during the handshake',
      ],
    ];
    for (const [code, message, problem] of cases) {
      const mapped = mapError(failedConnection(code, message));
      expect(mapped, code).toBeInstanceOf(DatabaseTlsError);
      expect(mapped, code).toBeInstanceOf(DatabaseUnavailableError);
      expect((mapped as Error).message).toBe(
        `The tenant database refused or failed the TLS handshake: ${problem}`,
      );
      expect((mapped as Error).message).not.toMatch(/db\.internal|1433/);
    }
  });

  it('tells a server that requires encryption from one that cannot be reached', () => {
    const required = mapError(
      // tedious's code for it, which mssql's types do not list.
      Object.assign(
        new sql.ConnectionError("Server requires encryption, set 'encrypt' config option to true."),
        {
          code: 'EENCRYPT',
        },
      ),
    );
    expect((required as DatabaseTlsError).problem).toBe(
      'the server requires encryption, which the connection string turns off (Encrypt=false)',
    );
    const refused = mapError(failedConnection('ECONNREFUSED', 'connect ECONNREFUSED 10.0.0.5:1433'));
    expect(refused).toBeInstanceOf(DatabaseUnavailableError);
    expect(refused).not.toBeInstanceOf(DatabaseTlsError);
  });
});

describe('Data API answer', () => {
  it('is 503 database_tls_failed with the problem', () => {
    const answer = toServiceError(new DatabaseTlsError('certificate expired'));
    expect(answer).toMatchObject({
      status: 503,
      code: 'database_tls_failed',
      expose: true,
      message: 'The tenant database refused or failed the TLS handshake: certificate expired',
    });
    expect(toServiceError(new DatabaseUnavailableError('x')).code).toBe('database_unavailable');
  });
});

describe('Tenant registry: tls of an mssql connection', () => {
  const registry = (database: unknown) =>
    parseTenantRegistry({
      tenants: { acme: { database, dataApiUsers: [{ name: 'u', passwordHash: HASH }], dataSources: '*' } },
    });
  const refusal = (database: unknown) => {
    try {
      registry(database);
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('accepted');
  };

  it('takes a CA bundle (text between certificates allowed) and a name to verify, or either', () => {
    const bundle = `# Subject: Acme CA\n${ca}\n# Subject: Acme CA 2\n${otherCa}`;
    const acme = registry({
      kind: 'mssql',
      connectionString: CONNECTION,
      tls: { ca: bundle, serverName: 'sql.acme.internal' },
    }).get('acme');
    expect(acme?.database).toEqual({
      kind: 'mssql',
      connectionString: CONNECTION,
      tls: { ca: bundle, serverName: 'sql.acme.internal' },
    });
    expect(() =>
      registry({ kind: 'mssql', connectionString: CONNECTION, tls: { serverName: '10.0.0.5' } }),
    ).not.toThrow();
    expect(() => registry({ kind: 'mssql', connectionString: CONNECTION, tls: { ca } })).not.toThrow();
  });

  it('refuses what is not PEM certificates, with the path and without the value', () => {
    const key = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    }) as string;
    const broken = ca.replace(/\n[A-Za-z0-9+/]{10}/, '\nAAAAAAAAAA');
    const cases: [string, string][] = [
      ['not a certificate', 'must be one or more PEM certificates'],
      [`${ca}${key}`, 'holds a private key: give the CA certificate'],
      [ca.replaceAll('\n', '\\n'), 'has its line breaks as a backslash and n'],
      [`${ca}${broken}`, 'certificate 2 of 2 is not a valid X.509 certificate'],
    ];
    for (const [text, problem] of cases) {
      const message = refusal({ kind: 'mssql', connectionString: CONNECTION, tls: { ca: text } });
      expect(message).toContain(`tenants.acme.database.tls.ca: ${problem}`);
      expect(message).not.toContain('PRIVATE KEY');
      expect(message).not.toContain('Secret-42');
    }
  });

  it('refuses a bad name to verify, empty settings and unknown keys', () => {
    expect(
      refusal({ kind: 'mssql', connectionString: CONNECTION, tls: { serverName: 'https://sql' } }),
    ).toContain('tenants.acme.database.tls.serverName: must be a host name or an IP address');
    expect(refusal({ kind: 'mssql', connectionString: CONNECTION, tls: {} })).toContain(
      'tenants.acme.database.tls: give ca, serverName or both',
    );
    expect(refusal({ kind: 'mssql', connectionString: CONNECTION, tls: { ca, trust: true } })).toMatch(
      /tenants\.acme\.database\.tls: .*\(trust\)/,
    );
  });

  it("refuses TLS settings the connection string would void, and keyword values it cannot honour, at the connection's path", () => {
    expect(
      refusal({ kind: 'mssql', connectionString: `${CONNECTION};Encrypt=false`, tls: { ca } }),
    ).toContain(
      'tenants.acme.database.tls: is set, but the connection string turns encryption off (Encrypt=false)',
    );
    expect(
      refusal({ kind: 'mssql', connectionString: `${CONNECTION};TrustServerCertificate=true`, tls: { ca } }),
    ).toContain('tenants.acme.database.tls: is set, but the connection string trusts any certificate');
    const badValue = refusal({ kind: 'mssql', connectionString: `${CONNECTION};Encrypt=perhaps` });
    expect(badValue).toContain(
      'tenants.acme.database.connectionString: Encrypt must be true, false or strict',
    );
    expect(badValue).not.toContain('Secret-42');
  });

  it('keeps a connection string alone working as before', () => {
    expect(
      registry({ kind: 'mssql', connectionString: `${CONNECTION};Encrypt=true` }).get('acme')?.database,
    ).toEqual({
      kind: 'mssql',
      connectionString: `${CONNECTION};Encrypt=true`,
    });
  });
});
