import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import { describe, expect, it } from 'vitest';
import { DynamoDbJsonClient } from '../../shared/adapters/dynamodb/json-client.js';

const bytes = (data: string | ArrayBuffer | ArrayBufferView): Buffer =>
  typeof data === 'string'
    ? Buffer.from(data)
    : ArrayBuffer.isView(data)
      ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
      : Buffer.from(data);

/** node:crypto's SHA-256 and HMAC in the shape the AWS SDK's signer takes. */
class Sha256 {
  private readonly hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView) {
    this.hash.update(bytes(data));
  }
  async digest() {
    return new Uint8Array(this.hash.digest());
  }
  reset() {}
}

/**
 * The limiter's DynamoDB calls are signed by aws4, not by the AWS SDK (json-client.ts says why):
 * each call must carry exactly the signature AWS's own signer gives the same request, or every
 * call in AWS would be refused and every request would go on uncounted. The SDK's signer
 * (`@smithy/signature-v4`, what `@aws-sdk/client-dynamodb` signs with) is the reference.
 */
describe("the fair-share table's request signature", () => {
  const credentials = {
    accessKeyId: 'AKIDEXAMPLE',
    secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY',
    sessionToken: 'session-token-of-the-role',
  };

  for (const [where, endpoint] of [
    ['the region', undefined],
    ['an endpoint with a port', 'http://127.0.0.1:8000'],
  ] as const) {
    it(`is the AWS SDK signer's for the same call (${where})`, async () => {
      const client = new DynamoDbJsonClient({ region: 'eu-central-1', credentials, endpoint });
      const body = JSON.stringify({ TableName: 'tenant-limits', Key: { tenant: { S: 'demo' } } });
      const ours = client.signedHeaders('UpdateItem', body, '20261128T120000Z');
      const host = endpoint ? new URL(endpoint).host : 'dynamodb.eu-central-1.amazonaws.com';
      const reference = await new SignatureV4({
        credentials,
        region: 'eu-central-1',
        service: 'dynamodb',
        sha256: Sha256,
        applyChecksum: false,
      }).sign(
        {
          method: 'POST',
          protocol: 'https:',
          hostname: host,
          path: '/',
          query: {},
          headers: {
            host,
            'content-type': 'application/x-amz-json-1.0',
            'content-length': String(Buffer.byteLength(body)),
            'x-amz-target': 'DynamoDB_20120810.UpdateItem',
          },
          body,
        },
        { signingDate: new Date('2026-11-28T12:00:00Z') },
      );
      expect(ours.Authorization).toBe(reference.headers.authorization);
      expect(ours['X-Amz-Security-Token']).toBe(credentials.sessionToken);
      expect(ours.Host).toBe(host);
    });
  }
});

/**
 * A kept-alive connection the server closed while it was idle: the next request written on it fails
 * before the server read it (ECONNRESET), and is sent once more on a new connection, as the AWS SDK
 * retries it. Without that, a Lambda instance thawed after DynamoDB closed its idle connection
 * would let its next request go on uncounted (and the limiter's alarm fire).
 */
describe("the fair-share table's client on a connection the server closed", () => {
  it('sends the request again on a new connection, once', async () => {
    const { createServer } = await import('node:http');
    const seen: { socket: number; reused: boolean }[] = [];
    const sockets = new Map<unknown, number>();
    const server = createServer((request, response) => {
      const known = sockets.has(request.socket);
      if (!known) sockets.set(request.socket, sockets.size + 1);
      seen.push({ socket: sockets.get(request.socket)!, reused: known });
      // The second request on a connection: the server closes it unanswered, as an idle close races it.
      if (known) {
        request.socket.destroy();
        return;
      }
      request.resume();
      request.on('end', () => {
        response.writeHead(200, { 'content-type': 'application/x-amz-json-1.0' });
        response.end('{"Item":{"tenant":{"S":"demo"}}}');
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    const client = new DynamoDbJsonClient({
      region: 'eu-central-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      endpoint: `http://127.0.0.1:${port}`,
    });
    try {
      const get = () => client.call('GetItem', { TableName: 't', Key: { tenant: { S: 'demo' } } }, 2000);
      await get();
      // On the kept-alive connection, which the server closes: answered on a new one.
      expect(await get()).toEqual({ Item: { tenant: { S: 'demo' } } });
      expect(seen.map((s) => s.socket)).toEqual([1, 1, 2]);
    } finally {
      client.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
