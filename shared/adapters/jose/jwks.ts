import http from 'node:http';
import https from 'node:https';
import type { JSONWebKeySet } from 'jose';
import { processWide } from '../../core/process-wide.js';
import { FORBIDDEN_ADDRESSES, forbiddenAddressReason, ipLiteralHost } from '../../core/webhook/target.js';
import { type AddressResolver, guardedLookup, systemResolver } from '../http/guarded-lookup.js';
import { KeySetUnavailableError } from './token-keys.js';

export { KeySetUnavailableError };

/** The most a JWKS may weigh: a key set is a few KB; more is not one. */
export const MAX_JWKS_BYTES = 64 * 1024;
/** How long a fetch of a key set may take. */
export const JWKS_FETCH_TIMEOUT_MS = 2000;
/**
 * A key set is fetched again on an unknown `kid` at most this often (CONTRACT 4d): a provider that
 * starts signing with a new key is followed within this, and a flood of made-up `kid`s costs the
 * provider one fetch per this per process.
 */
export const JWKS_REFETCH_INTERVAL_MS = 10_000;
/** A key set older than this is fetched again beside the requests (a removed key stops working). */
export const JWKS_MAX_AGE_MS = 10 * 60_000;

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

let resolveAddresses: AddressResolver = systemResolver;
/** Resolves the key sets' host names with `resolver` (tests); none: the system's again. */
export function useKeySetResolver(resolver?: AddressResolver): void {
  resolveAddresses = resolver ?? systemResolver;
}

/**
 * `WEBHOOK_ALLOW_PRIVATE_TARGETS`, read here where the tenant's `jwksUri` is fetched (an adapter
 * takes nothing from config, above it). A value other than true/false/1/0 never gets this far: the
 * registry checks every `jwksUri` against it (config/tenants.ts) and is refused over such a value.
 */
function privateTargetsAllowed(): boolean {
  return /^(?:true|1)$/i.test(process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS?.trim() ?? '');
}

/** The key set document's `keys`, or why it is not one. */
function keySetOf(body: Buffer): JSONWebKeySet {
  let document: unknown;
  try {
    document = JSON.parse(body.toString('utf8'));
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

/**
 * Fetches `url`'s key set: bounded in time ({@link JWKS_FETCH_TIMEOUT_MS}) and size
 * ({@link MAX_JWKS_BYTES}), no redirects followed, JSON with a `keys` array of objects. A `jwksUri`
 * is the tenant's word, as a webhook URL is: unless `WEBHOOK_ALLOW_PRIVATE_TARGETS` (the local
 * stack), the connection goes only to an address outside core/webhook/target.ts's forbidden ranges
 * (the metadata service, private networks, loopback), whatever the name resolves to. The registry
 * refuses such IP literals already; a name is judged on what it resolves to when fetched.
 */
function fetchKeySet(url: string): Promise<JSONWebKeySet> {
  const allowPrivateTargets = privateTargetsAllowed();
  const target = URL.parse(url);
  if (!target || (target.protocol !== 'https:' && target.protocol !== 'http:')) {
    return Promise.reject(new KeySetUnavailableError('the key set URL is not an http(s) URL'));
  }
  const literal = ipLiteralHost(target);
  const literalReason =
    literal !== undefined && !allowPrivateTargets ? forbiddenAddressReason(literal) : undefined;
  if (literalReason) {
    return Promise.reject(new KeySetUnavailableError(`the key set's address ${literal} is ${literalReason}`));
  }
  return new Promise<JSONWebKeySet>((resolve, reject) => {
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      outcome();
    };
    const fail = (message: string, cause?: unknown) => {
      settle(() => reject(new KeySetUnavailableError(message, cause === undefined ? undefined : { cause })));
      request.destroy();
    };
    const request = (target.protocol === 'https:' ? https : http).get(target, {
      headers: { accept: 'application/json' },
      // One fetch per 10 s at most: no kept-alive socket for Lambda to freeze half-closed.
      agent: false,
      lookup: guardedLookup(resolveAddresses, allowPrivateTargets),
      // Node checks the address it is about to connect to as well, whatever the look-up said.
      ...(allowPrivateTargets ? {} : { blockList: FORBIDDEN_ADDRESSES }),
    });
    const timer = setTimeout(
      () => fail(`the key set did not arrive within ${JWKS_FETCH_TIMEOUT_MS} ms`),
      JWKS_FETCH_TIMEOUT_MS,
    );
    request.on('error', (error) => fail(`the key set could not be fetched: ${error.message}`, error));
    request.on('response', (response) => {
      const status = response.statusCode ?? 0;
      // A redirect is not followed: the key set is where the registry says.
      if (status < 200 || status > 299) return fail(`the key set answered ${status}`);
      if (Number(response.headers['content-length'] ?? 0) > MAX_JWKS_BYTES) {
        return fail(`the key set is larger than ${MAX_JWKS_BYTES} bytes`);
      }
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.byteLength;
        if (size > MAX_JWKS_BYTES) fail(`the key set is larger than ${MAX_JWKS_BYTES} bytes`);
        else chunks.push(chunk);
      });
      response.on('error', (error) => fail(`the key set could not be read: ${error.message}`, error));
      response.on('end', () => {
        try {
          const jwks = keySetOf(Buffer.concat(chunks));
          settle(() => resolve(jwks));
        } catch (error) {
          settle(() => reject(error));
        }
      });
    });
  });
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
