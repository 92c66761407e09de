import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type LocalStack, startLocalStack } from '../../infra/local/stack.js';

/**
 * CONTRACT 3: the local stack has no network but loopback. Every socket this process listens on
 * once the stack runs (the gateway, the SQS/S3 emulator, the DynamoDB emulator's thread) is read
 * from the kernel's own tables (Linux /proc), not from what each server says of itself: fauxqs
 * reports a loopback URL while listening on every interface.
 */

let stack: LocalStack;
beforeAll(async () => {
  stack = await startLocalStack({ port: 0, database: 'embedded' });
});
afterAll(async () => {
  await stack?.stop();
});

/** The socket inodes this process holds open. */
function ownSocketInodes(): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
      if (inode) inodes.add(inode);
    } catch {
      // Closed meanwhile.
    }
  }
  return inodes;
}

/** Listening TCP sockets of this process: address (as the kernel writes it, hex) and port. */
function ownListeners(): { address: string; port: number; family: 4 | 6 }[] {
  const inodes = ownSocketInodes();
  const found: { address: string; port: number; family: 4 | 6 }[] = [];
  for (const [file, family] of [
    ['/proc/net/tcp', 4],
    ['/proc/net/tcp6', 6],
  ] as const) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== '0A') continue; // 0A: LISTEN
      if (!inodes.has(fields[9]!)) continue;
      const [address, port] = fields[1]!.split(':');
      found.push({ address: address!, port: Number.parseInt(port!, 16), family });
    }
  }
  return found;
}

/** 127.0.0.0/8, ::1, or ::ffff:127.x.x.x, in /proc's byte order (IPv4 little-endian words). */
function isLoopback({ address, family }: { address: string; family: 4 | 6 }): boolean {
  if (family === 4) return address.endsWith('7F');
  if (address === '00000000000000000000000001000000') return true;
  return address.startsWith('0000000000000000FFFF0000') && address.endsWith('7F');
}

describe.runIf(process.platform === 'linux')('local stack: loopback only', () => {
  it('listens on loopback only, the SQS/S3 emulator included', () => {
    const listeners = ownListeners();
    const emulatorPort = Number(new URL(process.env.AWS_ENDPOINT_URL!).port);
    // The gateway and the emulator at least; each bound to loopback.
    expect(listeners.map((l) => l.port)).toEqual(expect.arrayContaining([stack.port, emulatorPort]));
    expect(listeners.filter((l) => !isLoopback(l))).toEqual([]);
  });
});
