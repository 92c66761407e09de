import { generateKeyPairSync, randomBytes } from 'node:crypto';

// Usage: npm run token-signing-key [-- ES256|EdDSA|RS256]   (prints a private JWK for the registry's
// tokenSigningKeys, with a new kid; put it first, keep the old one until its tokens have expired)
const alg = process.argv[2] ?? 'ES256';
const pair =
  alg === 'ES256'
    ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
    : alg === 'EdDSA'
      ? generateKeyPairSync('ed25519')
      : alg === 'RS256'
        ? generateKeyPairSync('rsa', { modulusLength: 2048 })
        : undefined;
if (!pair) {
  console.error('usage: npm run token-signing-key [-- ES256|EdDSA|RS256]');
  process.exit(2);
}
const kid = `${new Date().toISOString().slice(0, 10)}-${randomBytes(4).toString('hex')}`;
console.log(JSON.stringify({ ...pair.privateKey.export({ format: 'jwk' }), kid }));
