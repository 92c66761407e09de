import { connect, createServer, type Socket } from 'node:net';

export interface TcpProxy {
  readonly port: number;
  /** Cuts every connection and refuses new ones until resume(): the target looks unreachable. */
  cut(): void;
  resume(): void;
  close(): Promise<void>;
}

export interface TcpProxyOptions {
  /** Sees every chunk the client sends, before it goes on (what crosses the wire). */
  readonly onClientData?: (chunk: Buffer) => void;
}

/** A loopback TCP proxy to `targetPort` that a fault test can cut and restore. */
export async function startTcpProxy(targetPort: number, options: TcpProxyOptions = {}): Promise<TcpProxy> {
  const sockets = new Set<Socket>();
  let cut = false;
  const server = createServer((client) => {
    if (cut) {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {
        client.destroy();
        upstream.destroy();
      });
    }
    if (options.onClientData) client.on('data', options.onClientData);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    cut() {
      cut = true;
      for (const socket of sockets) socket.resetAndDestroy();
    },
    resume() {
      cut = false;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
