import { randomBytes, X509Certificate } from 'node:crypto';
import type { DetailedPeerCertificate } from 'node:tls';
import sql from 'mssql';
import {
  mapError,
  parseConnectionString,
  refuseCleartextLogin,
} from '../../shared/adapters/mssql/connection.js';

/** A certificate a SQL Server presents in its TLS handshake. */
export interface PresentedCertificate {
  readonly subject: string;
  readonly issuer: string;
  /** Its names (`DNS:…`, `IP Address:…`), what the name to verify must be among. */
  readonly subjectAltName: string | undefined;
  readonly validFrom: string;
  readonly validTo: string;
  readonly fingerprint256: string;
  /** Issued by itself: trusted by giving the certificate itself as the CA. */
  readonly selfSigned: boolean;
  readonly pem: string;
}

/** The peer's chain as Node hands it over: each certificate with its issuer, the last its own. */
function presented(peer: DetailedPeerCertificate): PresentedCertificate[] {
  const chain: PresentedCertificate[] = [];
  const seen = new Set<string>();
  for (let link: DetailedPeerCertificate | undefined = peer; link?.raw; link = link.issuerCertificate) {
    const certificate = new X509Certificate(link.raw);
    if (seen.has(certificate.fingerprint256)) break;
    seen.add(certificate.fingerprint256);
    chain.push({
      subject: certificate.subject.replaceAll('\n', ', '),
      issuer: certificate.issuer.replaceAll('\n', ', '),
      subjectAltName: certificate.subjectAltName,
      validFrom: certificate.validFrom,
      validTo: certificate.validTo,
      fingerprint256: certificate.fingerprint256,
      // Not checkIssued(): OpenSSL's check wants keyCertSign, which a server's own certificate lacks.
      selfSigned: certificate.subject === certificate.issuer && certificate.verify(certificate.publicKey),
      pem: certificate.toString(),
    });
  }
  return chain;
}

/**
 * The certificates the SQL Server of `connectionString` presents (its own first, then any CA it
 * sends along), for the registry's `tls.ca`. The connection trusts whatever answers, so it carries
 * none of the string's credentials: a made-up login, refused after the handshake. What it shows is
 * only as trustworthy as the network it came over: compare the fingerprint with the server's
 * administrators before trusting it.
 */
export async function fetchServerCertificates(connectionString: string): Promise<PresentedCertificate[]> {
  const { server, port, options } = parseConnectionString(connectionString);
  let chain: PresentedCertificate[] | undefined;
  const pool = new sql.ConnectionPool({
    server,
    port,
    user: 'certificate-probe',
    password: randomBytes(18).toString('base64url'),
    connectionTimeout: 15_000,
    options: {
      ...(options?.instanceName !== undefined && { instanceName: options.instanceName }),
      encrypt: true,
      trustServerCertificate: true,
    },
    beforeConnect: (connection) => {
      connection.on('secure', (socket) => {
        chain = presented(socket.getPeerCertificate(true));
      });
      // A server without TLS gets no login at all, not even the made-up one.
      refuseCleartextLogin(connection as unknown as Parameters<typeof refuseCleartextLogin>[0]);
    },
  });
  pool.on('error', () => undefined);
  try {
    await pool.connect();
  } catch (error) {
    // Expected once the certificate is in hand: the made-up login is refused.
    if (!chain) throw mapError(error);
  } finally {
    await pool.close().catch(() => undefined);
  }
  if (!chain?.length) throw new Error('The server presented no certificate');
  return chain;
}
