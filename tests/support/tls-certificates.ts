import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A certificate authority made for a test: its certificate and key, PEM. */
export interface TestCertificateAuthority {
  readonly certificate: string;
  readonly key: string;
}

/** A server identity signed by a test CA: certificate and key, PEM. */
export interface TestServerIdentity {
  readonly certificate: string;
  readonly key: string;
}

/** What a certificate is for: DNS names and IP addresses (its subjectAltName). */
export interface CertificateNames {
  readonly dns?: readonly string[];
  readonly ip?: readonly string[];
}

const serverExtensions = (names: CertificateNames) => [
  `subjectAltName=${[...(names.dns ?? []).map((n) => `DNS:${n}`), ...(names.ip ?? []).map((n) => `IP:${n}`)].join(',')}`,
  'basicConstraints=CA:FALSE',
  'keyUsage=critical,digitalSignature,keyEncipherment',
  'extendedKeyUsage=serverAuth',
];

const commonName = (names: CertificateNames) => names.dns?.[0] ?? names.ip?.[0] ?? 'server';

/** Runs `openssl` in a scratch directory holding `files`; returns the named outputs. */
async function openssl(
  steps: readonly (readonly string[])[],
  files: Record<string, string>,
  outputs: readonly string[],
): Promise<string[]> {
  const dir = await mkdtemp(join(tmpdir(), 'test-tls-'));
  try {
    for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
    for (const args of steps) await run('openssl', args, { cwd: dir });
    return await Promise.all(outputs.map((name) => readFile(join(dir, name), 'utf8')));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** A self-signed CA, valid for two days (an X.509 v3 CA certificate, as an internal PKI issues). */
export async function createTestCertificateAuthority(commonName: string): Promise<TestCertificateAuthority> {
  const [certificate, key] = await openssl(
    [
      [
        'req',
        '-x509',
        ...EC_KEY,
        '-keyout',
        'ca.key',
        '-out',
        'ca.pem',
        '-days',
        '2',
        '-subj',
        `/CN=${commonName}`,
        '-addext',
        'basicConstraints=critical,CA:TRUE',
        '-addext',
        'keyUsage=critical,keyCertSign,cRLSign',
      ],
    ],
    {},
    ['ca.pem', 'ca.key'],
  );
  return { certificate: certificate!, key: key! };
}

/**
 * A TLS server certificate for `names` signed by `ca`, valid for two days: what a server gets from
 * an internal CA.
 */
export async function createTestServerIdentity(
  ca: TestCertificateAuthority,
  names: CertificateNames,
): Promise<TestServerIdentity> {
  const [certificate, key] = await openssl(
    [
      [
        'req',
        '-new',
        ...EC_KEY,
        '-keyout',
        'server.key',
        '-out',
        'server.csr',
        '-subj',
        `/CN=${commonName(names)}`,
      ],
      [
        'x509',
        '-req',
        '-in',
        'server.csr',
        '-CA',
        'ca.pem',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-out',
        'server.pem',
        '-days',
        '2',
        '-extfile',
        'server.ext',
      ],
    ],
    { 'ca.pem': ca.certificate, 'ca.key': ca.key, 'server.ext': `${serverExtensions(names).join('\n')}\n` },
    ['server.pem', 'server.key'],
  );
  return { certificate: certificate!, key: key! };
}

/**
 * A self-signed TLS server certificate for `names`, valid for two days: what `New-SelfSignedCertificate
 * -DnsName …` makes for a SQL Server without a CA; trusted by giving the certificate itself as the CA.
 */
export async function createSelfSignedServerIdentity(names: CertificateNames): Promise<TestServerIdentity> {
  const [certificate, key] = await openssl(
    [
      [
        'req',
        '-x509',
        ...EC_KEY,
        '-keyout',
        'server.key',
        '-out',
        'server.pem',
        '-days',
        '2',
        '-subj',
        `/CN=${commonName(names)}`,
        ...serverExtensions(names).flatMap((extension) => ['-addext', extension]),
      ],
    ],
    {},
    ['server.pem', 'server.key'],
  );
  return { certificate: certificate!, key: key! };
}
