import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { WebApiError } from '../../shared/core/web-api/envelope.js';
import {
  parseSignatureHeader,
  signatureHeader,
  signBody,
  verifySignature,
} from '../../shared/core/web-api/signature.js';
import { webApiHttpStatus } from '../../shared/lambda/web-api/http.js';

const HASH = 'demo-api-hash';
const NOW = 1_700_000_000;
const body = Buffer.from('{"vltyp":1001,"params":[{"nazev":"alfa"}]}');

function refusal(check: () => unknown): WebApiError {
  try {
    check();
  } catch (error) {
    return error as WebApiError;
  }
  throw new Error('the signature was accepted');
}

describe('Function: signBody', () => {
  it('is HMAC-SHA256 keyed with the API hash over "<t>.<body>", in hex (openssl gives the same)', () => {
    // printf '1700000000.%s' "$BODY" | openssl dgst -sha256 -hmac demo-api-hash
    expect(signBody(HASH, NOW, body)).toBe(
      'ecd4b977f1ee9926f8b12d6dd14a4b53abd2e7027b6121cc6f917d51290d114a',
    );
    expect(signatureHeader(HASH, body, NOW)).toBe(`t=${NOW},v1=${signBody(HASH, NOW, body)}`);
  });
});

describe('Function: parseSignatureHeader', () => {
  it('reads t and every v1, ignoring other schemes and spaces', () => {
    const v1 = 'a'.repeat(64);
    const parsed = parseSignatureHeader(`t=${NOW}, v0=xyz, v1=${v1}, v1=${'B'.repeat(64)}`);
    expect(parsed?.timestamp).toBe(NOW);
    expect(parsed?.candidates.map((c) => c.toString('hex'))).toEqual([v1, 'b'.repeat(64)]);
  });

  it('keeps t exactly as sent, a leading zero included', () => {
    const parsed = parseSignatureHeader(`t=0${NOW},v1=${'a'.repeat(64)}`);
    expect([parsed?.timestampText, parsed?.timestamp]).toEqual([`0${NOW}`, NOW]);
  });

  it.each([
    ['empty', ''],
    ['t with a sign', `t=+${NOW},v1=${'a'.repeat(64)}`],
    ['t with a fraction', `t=${NOW}.5,v1=${'a'.repeat(64)}`],
    ['t in exponent form', `t=1.7e9,v1=${'a'.repeat(64)}`],
    ['t with a space inside its item', `t= ${NOW},v1=${'a'.repeat(64)}`],
    ['t with non-ASCII digits', `t=١٧٠٠٠٠٠٠٠٠,v1=${'a'.repeat(64)}`],
    ['t longer than 15 digits', `t=${'0'.repeat(6)}${NOW},v1=${'a'.repeat(64)}`],
    ['no t', `v1=${'a'.repeat(64)}`],
    ['no v1', `t=${NOW}`],
    ['t twice', `t=1,t=2,v1=${'a'.repeat(64)}`],
    ['t not a number', `t=abc,v1=${'a'.repeat(64)}`],
    ['v1 not hex', `t=${NOW},v1=${'z'.repeat(64)}`],
    ['v1 too short', `t=${NOW},v1=abcd`],
    ['a part without =', `t=${NOW},v1`],
  ])('refuses a header with %s', (_case, header) => {
    expect(parseSignatureHeader(header)).toBeUndefined();
  });
});

describe('Function: verifySignature', () => {
  const header = signatureHeader(HASH, body, NOW);

  it('accepts the signature of the body and gives the digest of the signed bytes', () => {
    const verified = verifySignature(header, HASH, body, NOW, 300);
    expect(verified.timestamp).toBe(NOW);
    expect(verified.requestDigest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('accepts any one matching v1 of several (key rotation), in any order', () => {
    const stale = signBody('old-api-hash', NOW, body);
    const good = signBody(HASH, NOW, body);
    const a = verifySignature(`t=${NOW},v1=${stale},v1=${good}`, HASH, body, NOW, 300);
    const b = verifySignature(`t=${NOW},v1=${good.toUpperCase()},v1=${stale}`, HASH, body, NOW, 300);
    // The same signed request, however its header is written, is the same request for the replay guard.
    expect(a.requestDigest).toBe(b.requestDigest);
  });

  it("accepts a signature keyed with any of the application's API hashes (a rotation), and with none other", () => {
    const hashes = ['new-api-hash', HASH];
    for (const hash of hashes) {
      expect(verifySignature(signatureHeader(hash, body, NOW), hashes, body, NOW, 300).timestamp).toBe(NOW);
    }
    // Several v1 against several hashes: one pair matching suffices.
    const both = `t=${NOW},v1=${signBody('stale-hash', NOW, body)},v1=${signBody(HASH, NOW, body)}`;
    expect(verifySignature(both, hashes, body, NOW, 300).timestamp).toBe(NOW);
    const error = refusal(() =>
      verifySignature(signatureHeader('stale-hash', body, NOW), hashes, body, NOW, 300),
    );
    expect([webApiHttpStatus(error), error.errorCode]).toEqual([401, '103']);
    expect(error.message).not.toMatch(/new-api-hash|demo-api-hash|stale-hash/);
    expect(() => verifySignature(header, [], body, NOW, 300)).toThrow(/does not match/);
  });

  it('refuses a changed body, another key and a changed time stamp with 401/103', () => {
    for (const check of [
      () => verifySignature(header, HASH, Buffer.from(`${body} `), NOW, 300),
      () => verifySignature(header, 'other-api-hash', body, NOW, 300),
      () => verifySignature(header.replace(`t=${NOW}`, `t=${NOW + 1}`), HASH, body, NOW, 300),
    ]) {
      const error = refusal(check);
      expect([webApiHttpStatus(error), error.errorCode]).toEqual([401, '103']);
      expect(error.message).toMatch(/does not match/);
    }
  });

  it('names the usual causes of a mismatch (a re-encoded body, curl -d instead of --data-binary), and nothing of the request', () => {
    // What `curl -d @body.json` sends for a file signed with its line breaks: the newlines stripped.
    const signedFile = Buffer.from('{\n  "vltyp": 1001\n}\n');
    const sentByCurlD = Buffer.from('{  "vltyp": 1001}');
    const error = refusal(() =>
      verifySignature(signatureHeader(HASH, signedFile, NOW), HASH, sentByCurlD, NOW, 300),
    );
    expect(error.errorCode).toBe('103');
    expect(error.message).toContain('the body was changed after it was signed');
    expect(error.message).toContain('JSON re-encoded');
    expect(error.message).toContain('curl --data-binary @file, not -d');
    expect(error.message).toContain("another hash than this key's API hash");
    // Neither the hash, the expected HMAC nor the body is told.
    const expected = signBody(HASH, NOW, sentByCurlD);
    for (const secret of [HASH, expected, '"vltyp"']) expect(error.message).not.toContain(secret);
  });

  it('checks the HMAC over t exactly as sent: a leading zero is signed, not normalised away', () => {
    const sent = `0${NOW}`;
    const overSent = signBody(HASH, sent, body);
    const overNormalised = signBody(HASH, NOW, body);
    expect(overSent).not.toBe(overNormalised);
    expect(verifySignature(`t=${sent},v1=${overSent}`, HASH, body, NOW, 300).timestamp).toBe(NOW);
    const error = refusal(() => verifySignature(`t=${sent},v1=${overNormalised}`, HASH, body, NOW, 300));
    expect([webApiHttpStatus(error), error.errorCode]).toEqual([401, '103']);
    // openssl agrees on the bytes: printf '01700000000.%s' "$BODY" | openssl dgst -sha256 -hmac demo-api-hash
    expect(overSent).toBe(
      createHmac('sha256', HASH)
        .update(Buffer.concat([Buffer.from(`${sent}.`), body]))
        .digest('hex'),
    );
  });

  it('gives t=0170… and t=170… different digests for the replay guard (they are different signed bytes)', () => {
    const a = verifySignature(signatureHeader(HASH, body, `0${NOW}`), HASH, body, NOW, 300);
    const b = verifySignature(signatureHeader(HASH, body, NOW), HASH, body, NOW, 300);
    expect(a.requestDigest).not.toBe(b.requestDigest);
  });

  it('refuses a malformed header with 401/103 that shows the expected form', () => {
    const error = refusal(() => verifySignature('sha256=abc', HASH, body, NOW, 300));
    expect([webApiHttpStatus(error), error.errorCode]).toEqual([401, '103']);
    expect(error.message).toMatch(/t=<unix seconds>,v1=/);
  });

  it('accepts a time stamp exactly RequestMaxSecValidity away and refuses one beyond with 401/104', () => {
    expect(() => verifySignature(header, HASH, body, NOW + 300, 300)).not.toThrow();
    expect(() => verifySignature(header, HASH, body, NOW - 300, 300)).not.toThrow();
    for (const now of [NOW + 301, NOW - 301]) {
      const error = refusal(() => verifySignature(header, HASH, body, now, 300));
      expect([webApiHttpStatus(error), error.errorCode]).toEqual([401, '104']);
    }
  });

  it('refuses a correctly signed time stamp in milliseconds with 401/104 that says so', () => {
    const ms = NOW * 1000 + 123;
    const error = refusal(() => verifySignature(signatureHeader(HASH, body, ms), HASH, body, NOW, 300));
    expect([webApiHttpStatus(error), error.errorCode]).toEqual([401, '104']);
    expect(error.message).toMatch(/in seconds, not milliseconds/);
  });

  it('signs the raw bytes, so a body that is not UTF-8 text verifies too', () => {
    const bytes = Buffer.from([0x3c, 0xe8, 0x3e]);
    const signed = `t=${NOW},v1=${createHmac('sha256', HASH)
      .update(Buffer.concat([Buffer.from(`${NOW}.`), bytes]))
      .digest('hex')}`;
    expect(() => verifySignature(signed, HASH, bytes, NOW, 300)).not.toThrow();
  });
});
