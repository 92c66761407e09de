import type { JSONWebKeySet } from 'jose';
import { processWide } from '../../config/process-wide.js';

/** The most a JWKS may weigh: a key set is a few KB; more is not one. */
export const MAX_JWKS_BYTES = 64 * 1024;
/** How long a fetch of a key set may take. */
export const JWKS_FETCH_TIMEOUT_MS = 2000;
/** A key set is fetched again on an unknown `kid` at most this often (CONTRACT 4d). */
export const JWKS_REFETCH_INTERVAL_MS = 60_000;
/** A key set older than this is fetched again beside the requests (a removed key stops working). */
export const JWKS_MAX_AGE_MS = 10 * 60_000;

/** The identity provider could not be asked for its keys, and none are known yet. */
export class KeySetUnavailableError extends Error {
  override readonly name = 'KeySetUnavailableError';
}

interface KeySetState {
  jwks?: JSONWebKeySet;
  fetchedAt: number;
  /** When a fetch last started, whatever came of it. */
  triedAt: number;
  fetching?: Promise<JSONWebKeySet>;
}

/** One per process and URL: every function copy of the local stack shares what was fetched. */
const keySets = processWide('jwks-cache', () => new Map<string, KeySetState>());

/** Forgets every cached key set (tests). */
export function forgetKeySets(): void {
  keySets.clear();
}

/**
 * Fetches `url`'s key set: bounded in time ({@link JWKS_FETCH_TIMEOUT_MS}) and size
 * ({@link MAX_JWKS_BYTES}), no redirects followed, JSON with a `keys` array of objects.
 */
async function fetchKeySet(url: string): Promise<JSONWebKeySet> {
  const signal = AbortSignal.timeout(JWKS_FETCH_TIMEOUT_MS);
  const response = await fetch(url, { redirect: 'error', signal, headers: { accept: 'application/json' } });
  if (!response.ok || !response.body) {
    await response.body?.cancel();
    throw new KeySetUnavailableError(`the key set answered ${response.status}`);
  }
  const declared = Number(response.headers.get('content-length') ?? 0);
  if (declared > MAX_JWKS_BYTES) {
    await response.body.cancel();
    throw new KeySetUnavailableError(`the key set is larger than ${MAX_JWKS_BYTES} bytes`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.byteLength;
    if (size > MAX_JWKS_BYTES) {
      await response.body.cancel().catch(() => undefined);
      throw new KeySetUnavailableError(`the key set is larger than ${MAX_JWKS_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  let document: unknown;
  try {
    document = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new KeySetUnavailableError('the key set is not JSON');
  }
  const keys = (document as { keys?: unknown } | null)?.keys;
  if (
    !Array.isArray(keys) ||
    !keys.every((key) => key !== null && typeof key === 'object' && !Array.isArray(key))
  ) {
    throw new KeySetUnavailableError('the key set has no "keys" array of keys');
  }
  return { keys } as JSONWebKeySet;
}

function startFetch(url: string, state: KeySetState, now: number): Promise<JSONWebKeySet> {
  if (state.fetching) return state.fetching;
  state.triedAt = now;
  const fetching = fetchKeySet(url).then(
    (jwks) => {
      Object.assign(state, { jwks, fetchedAt: Date.now(), fetching: undefined });
      return jwks;
    },
    (error: unknown) => {
      state.fetching = undefined;
      throw error instanceof KeySetUnavailableError
        ? error
        : new KeySetUnavailableError('the key set could not be fetched', { cause: error });
    },
  );
  state.fetching = fetching;
  return fetching;
}

/**
 * The key set of an identity provider at `url` (CONTRACT 4d), cached per process: the first use
 * fetches it (awaited); a key set older than {@link JWKS_MAX_AGE_MS} is fetched again beside the
 * request; `unknownKid` (a token names a key the cached set lacks) fetches again, awaited, at
 * most once per {@link JWKS_REFETCH_INTERVAL_MS}. A fetch that fails keeps the cached keys (the
 * issuer unreachable does not stop tokens signed by keys already known); only without any is it
 * {@link KeySetUnavailableError}.
 */
export async function identityProviderKeys(url: string, unknownKid = false): Promise<JSONWebKeySet> {
  let state = keySets.get(url);
  if (!state) {
    if (keySets.size >= 1000) keySets.clear();
    state = { fetchedAt: 0, triedAt: 0 };
    keySets.set(url, state);
  }
  const now = Date.now();
  if (!state.jwks) {
    if (state.triedAt > 0 && now - state.triedAt < 1000 && !state.fetching) {
      throw new KeySetUnavailableError('the key set could not be fetched a moment ago');
    }
    return startFetch(url, state, now);
  }
  if (unknownKid && now - state.triedAt >= JWKS_REFETCH_INTERVAL_MS) {
    try {
      return await startFetch(url, state, now);
    } catch {
      return state.jwks;
    }
  }
  if (now - state.fetchedAt >= JWKS_MAX_AGE_MS && now - state.triedAt >= JWKS_REFETCH_INTERVAL_MS) {
    void startFetch(url, state, now).catch(() => undefined);
  }
  return state.jwks;
}
