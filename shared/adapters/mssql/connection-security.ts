import { isIP } from 'node:net';
import { parse } from '@tediousjs/connection-string';

/**
 * How a SQL Server connection is encrypted and verified, read from its connection string and the
 * tenant's TLS settings in the registry. The tenant registry checks every connection with this when
 * it is read (so it is in every function's bundle), the adapter (connection.ts) builds the driver's
 * options from it: no driver here, only the connection-string parser mssql itself uses (a few KB).
 */

/** A tenant connection's TLS settings in the registry (`database.tls`). */
export interface SqlServerTls {
  /** CA certificates (PEM) trusted for this server instead of the system's. */
  readonly ca?: string;
  /** The name the server's certificate must carry, when it is not the host the string connects to. */
  readonly serverName?: string;
}

export interface ConnectionSecurity {
  /**
   * `true`: TLS negotiated after the pre-login (TDS 7.x, every SQL Server); `'strict'`: TLS before
   * anything else (TDS 8.0, SQL Server 2022 and later); `false`: no encryption asked for (a server
   * that forces it still refuses the connection).
   */
  readonly encrypt: boolean | 'strict';
  /** Accept any certificate: no check of who answers. Only with `TrustServerCertificate=true`. */
  readonly trustServerCertificate: boolean;
  /** The name to verify; absent: the host the string connects to (a name or an IP address). */
  readonly serverName?: string;
  /** The CAs to trust (PEM); absent: Node's roots, plus `NODE_EXTRA_CA_CERTS` when set. */
  readonly ca?: string;
}

/**
 * A connection string or TLS setting that cannot be honoured. `setting` is where the problem is, for
 * the registry's error path; the message never quotes the connection string (it holds a password).
 */
export class ConnectionSecurityError extends Error {
  override readonly name = 'ConnectionSecurityError';
  constructor(
    message: string,
    readonly setting: 'connectionString' | 'tls',
  ) {
    super(message);
  }
}

/** A DNS name (labels of letters, digits, `-`, `_`) or an IP address: what a certificate can name. */
export function isServerName(value: string): boolean {
  if (isIP(value.replace(/^\[(.*)\]$/, '$1'))) return true;
  return /^(?=.{1,253}\.?$)[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?)*\.?$/.test(
    value,
  );
}

// SQL Server's own spellings (Microsoft.Data.SqlClient): `Encrypt=Mandatory|Optional|Strict` as well
// as the older true/false/yes/no; the URL form has always taken 1 and 0 too.
const ENCRYPT_VALUES: Readonly<Record<string, boolean | 'strict'>> = {
  true: true,
  yes: true,
  '1': true,
  mandatory: true,
  false: false,
  no: false,
  '0': false,
  optional: false,
  strict: 'strict',
};
const BOOLEAN_VALUES: Readonly<Record<string, boolean>> = {
  true: true,
  yes: true,
  '1': true,
  false: false,
  no: false,
  '0': false,
};

interface SecurityKeywords {
  readonly encrypt?: string;
  readonly trustServerCertificate?: string;
  readonly hostNameInCertificate?: string;
}

/** The three keywords, by any of their names, from either form of connection string. */
function securityKeywords(connectionString: string): SecurityKeywords {
  const text = connectionString.trim();
  if (/^(mssql|sqlserver):\/\//i.test(text)) {
    let query: URLSearchParams;
    try {
      query = new URL(text).searchParams;
    } catch {
      throw new ConnectionSecurityError('is not a valid SQL Server connection string', 'connectionString');
    }
    // Query keys any case, as the ADO form's keywords.
    const value = (...names: string[]) => {
      for (const [key, entry] of query) if (names.includes(key.toLowerCase())) return entry;
      return undefined;
    };
    return {
      encrypt: value('encrypt'),
      trustServerCertificate: value('trustservercertificate'),
      hostNameInCertificate: value('hostnameincertificate'),
    };
  }
  // The driver's own parser (mssql reads the string with it), so that quoting and braces are read
  // the same way here as there.
  const parsed = parse(text);
  const value = (...names: string[]) =>
    names.map((name) => parsed.get(name)).find((entry) => entry !== undefined);
  return {
    encrypt: value('encrypt'),
    trustServerCertificate: value('trustservercertificate', 'trust server certificate'),
    hostNameInCertificate: value('hostnameincertificate', 'host name in certificate'),
  };
}

function choice<T>(
  values: Readonly<Record<string, T>>,
  value: string | undefined,
  refusal: string,
): T | undefined {
  if (value === undefined) return undefined;
  const chosen = values[value.trim().toLowerCase()];
  if (chosen === undefined) throw new ConnectionSecurityError(refusal, 'connectionString');
  return chosen;
}

/**
 * How `connectionString` (with the registry's `tls`) encrypts. Encrypted and verified unless the
 * string says otherwise: `Encrypt` absent is `true`, `TrustServerCertificate` absent is `false`.
 * TLS settings that the string would void (encryption off, any certificate trusted) or contradict
 * (another name to verify) are refused, not silently ignored.
 */
export function readConnectionSecurity(connectionString: string, tls?: SqlServerTls): ConnectionSecurity {
  const keywords = securityKeywords(connectionString);
  const encrypt =
    choice(
      ENCRYPT_VALUES,
      keywords.encrypt,
      'Encrypt must be true, false or strict (or yes/no, mandatory/optional, 1/0)',
    ) ?? true;
  const trustServerCertificate =
    choice(
      BOOLEAN_VALUES,
      keywords.trustServerCertificate,
      'TrustServerCertificate must be true or false (or yes/no, 1/0)',
    ) ?? false;
  const hostNameInCertificate = keywords.hostNameInCertificate?.trim();
  if (hostNameInCertificate !== undefined && !isServerName(hostNameInCertificate)) {
    throw new ConnectionSecurityError(
      'HostNameInCertificate must be a host name or an IP address',
      'connectionString',
    );
  }
  if (tls?.ca !== undefined || tls?.serverName !== undefined) {
    if (encrypt === false) {
      throw new ConnectionSecurityError(
        'is set, but the connection string turns encryption off (Encrypt=false): remove one of them',
        'tls',
      );
    }
    if (trustServerCertificate) {
      throw new ConnectionSecurityError(
        'is set, but the connection string trusts any certificate (TrustServerCertificate=true), which would ignore it: remove one of them',
        'tls',
      );
    }
  }
  if (
    tls?.serverName !== undefined &&
    hostNameInCertificate !== undefined &&
    tls.serverName.toLowerCase() !== hostNameInCertificate.toLowerCase()
  ) {
    throw new ConnectionSecurityError(
      "names another server to verify than the connection string's HostNameInCertificate: keep one",
      'tls',
    );
  }
  const serverName = tls?.serverName ?? hostNameInCertificate;
  return {
    encrypt,
    trustServerCertificate,
    ...(serverName !== undefined && { serverName }),
    ...(tls?.ca !== undefined && { ca: tls.ca }),
  };
}
