import { connect } from 'node:net';

export interface RawAnswer {
  /** 0 when the server closed the connection without an answer. */
  readonly status: number;
  readonly head: string;
  readonly body: string;
}

/**
 * Sends bytes exactly as given on a fresh TCP connection and reads until the server closes it (or
 * `timeoutMs` passes: then the promise rejects, a hang being a failure of its own). The client's
 * side stays open `halfCloseMs` (a second by default), as a browser's or curl's would: a client
 * that half-closes tells Node's server it is gone, and gets no answer (HTTP allows both), so a
 * request the service may take longer over (a whole table, say) needs a later half-close. The
 * half-close is what ends a request whose body is shorter than its `Content-Length`.
 */
export function rawRequest(
  port: number,
  bytes: string | Buffer,
  timeoutMs = 10_000,
  halfCloseMs = 1000,
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(bytes);
      setTimeout(() => socket.end(), halfCloseMs).unref();
    });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer within ${timeoutMs} ms to ${JSON.stringify(String(bytes).slice(0, 80))}`));
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const split = text.indexOf('\r\n\r\n');
      const head = split < 0 ? text : text.slice(0, split);
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head)?.[1] ?? 0);
      resolve({ status, head, body: split < 0 ? '' : text.slice(split + 4) });
    });
  });
}

/** A request line plus `Host` and `Connection: close`. */
export const requestLine = (line: string, headers = '') =>
  `${line}\r\nHost: localhost\r\n${headers}Connection: close\r\n\r\n`;
