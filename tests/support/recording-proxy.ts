import { createServer, request as forward, type IncomingHttpHeaders } from 'node:http';

/** One request as it went over the wire to the emulator. */
export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

export interface RecordingProxy {
  /** The endpoint to give the SDK clients instead of the emulator's. */
  readonly endpoint: string;
  readonly requests: readonly RecordedRequest[];
  /** The SQS calls of one action (`SendMessage`, …) with their JSON bodies (AWS JSON 1.0 protocol). */
  sqsCalls(action: string): Record<string, unknown>[];
  close(): Promise<void>;
}

/**
 * A loopback HTTP proxy in front of the emulator that records every request the real SDK sends:
 * the emulator accepts fields it does not give back (fauxqs keeps no `MessageGroupId` on a
 * standard queue), so what the service sends is checked here, on the wire.
 */
export async function startRecordingProxy(targetEndpoint: string): Promise<RecordingProxy> {
  const target = new URL(targetEndpoint);
  const requests: RecordedRequest[] = [];
  const server = createServer((incoming, outgoing) => {
    const chunks: Buffer[] = [];
    incoming.on('data', (chunk: Buffer) => chunks.push(chunk));
    incoming.on('end', () => {
      const body = Buffer.concat(chunks);
      requests.push({
        method: incoming.method ?? 'GET',
        path: incoming.url ?? '/',
        headers: incoming.headers,
        body: body.toString('utf8'),
      });
      const upstream = forward(
        {
          host: target.hostname,
          port: target.port,
          method: incoming.method,
          path: incoming.url,
          headers: { ...incoming.headers, host: target.host },
        },
        (answer) => {
          outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(outgoing);
        },
      );
      upstream.on('error', () => outgoing.destroy());
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    sqsCalls(action) {
      return requests
        .filter((r) => r.headers['x-amz-target'] === `AmazonSQS.${action}`)
        .map((r) => JSON.parse(r.body) as Record<string, unknown>);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
