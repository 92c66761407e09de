import { createHash, timingSafeEqual } from 'node:crypto';
import type { Application } from './store.js';

/** An application as the tenant registry gives it (CONTRACT.md section 2). */
export interface RegisteredApplication {
  readonly id: number;
  readonly apiKey: string;
  readonly apiHashes: readonly string[];
  readonly active: boolean;
}

const digestOf = (apiKey: string) => createHash('sha256').update(apiKey, 'utf8').digest();

interface Entry {
  readonly digest: Buffer;
  readonly application: Application;
}

// One index per list the registry holds: a registry read anew brings new lists, and the old
// indexes go with them.
const indexes = new WeakMap<readonly RegisteredApplication[], ReadonlyMap<string, Entry>>();

function indexOf(applications: readonly RegisteredApplication[]): ReadonlyMap<string, Entry> {
  let index = indexes.get(applications);
  if (!index) {
    const built = new Map<string, Entry>();
    for (const { id, apiKey, apiHashes, active } of applications) {
      const digest = digestOf(apiKey);
      built.set(digest.toString('base64'), { digest, application: { id, apiHashes, active } });
    }
    index = built;
    indexes.set(applications, index);
  }
  return index;
}

/**
 * The registry application of an `x-api-key`, or undefined. Found by the key's SHA-256 digest, so
 * that the key itself is never compared character by character (a compare that stops at the first
 * difference would tell, by its time, how much of a guess was right); the digest found is compared
 * again in constant time. Exact: case and spaces count.
 */
export function findRegisteredApplication(
  applications: readonly RegisteredApplication[],
  apiKey: string,
): Application | undefined {
  const digest = digestOf(apiKey);
  const entry = indexOf(applications).get(digest.toString('base64'));
  return entry && timingSafeEqual(entry.digest, digest) ? entry.application : undefined;
}
