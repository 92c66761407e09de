import { fetchServerCertificates } from './server-certificates.js';

// Usage: npm run db:certificate -- 'Server=sql.acme.internal,1433'   (a whole connection string will
// do: only its server, port and instance are used, never its login)
// Prints the certificates the SQL Server presents, for the tenant registry's `tls.ca` (docs/sql-server.md,
// "Encrypted connections to SQL Server").
const connectionString = process.argv[2];
if (!connectionString || process.argv.length > 3) {
  console.error("usage: npm run db:certificate -- 'Server=host,port'");
  process.exit(2);
}
try {
  const chain = await fetchServerCertificates(connectionString);
  for (const [index, certificate] of chain.entries()) {
    console.log(`# certificate ${index + 1} of ${chain.length}${index === 0 ? " (the server's)" : ''}`);
    console.log(`#   subject:  ${certificate.subject}`);
    console.log(`#   issuer:   ${certificate.issuer}${certificate.selfSigned ? ' (self-signed)' : ''}`);
    console.log(`#   names:    ${certificate.subjectAltName ?? '(none: it can be verified by no name)'}`);
    console.log(`#   valid:    ${certificate.validFrom} to ${certificate.validTo}`);
    console.log(`#   SHA-256:  ${certificate.fingerprint256}`);
    console.log(certificate.pem.trim());
  }
  const top = chain.at(-1)!;
  console.log(
    top.selfSigned
      ? "# The last certificate is self-signed: it is what goes into tls.ca, once its fingerprint is confirmed by the server's administrators."
      : `# The server did not send its CA. Ask for the certificate of "${top.issuer}" (PEM) for tls.ca.`,
  );
} catch (error) {
  console.error(`db:certificate failed: ${(error as Error).message}`);
  process.exitCode = 1;
}
