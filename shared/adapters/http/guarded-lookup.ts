import { promises as dns, type LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { forbiddenAddressReason } from '../../core/webhook/target.js';

/** Resolves a host name to every address it has (the system resolver unless a test passes its own). */
export type AddressResolver = (hostname: string) => Promise<readonly LookupAddress[]>;

export const systemResolver: AddressResolver = (hostname) => dns.lookup(hostname, { all: true });

/** A host name resolves to an address the service must not connect to. */
export class ForbiddenAddressError extends Error {
  override readonly name = 'ForbiddenAddressError';
}

/**
 * A `lookup` for `http.request` that refuses a name with any address in the forbidden ranges of
 * core/webhook/target.ts ({@link ForbiddenAddressError}), unless `allowPrivateTargets`. The socket
 * connects to exactly the addresses checked here, so a name that resolves differently a moment
 * later (DNS rebinding) gains nothing. IP literals never reach a `lookup`: the caller judges them.
 */
export function guardedLookup(resolve: AddressResolver, allowPrivateTargets: boolean): LookupFunction {
  return (hostname, options, callback) => {
    const fail = (error: NodeJS.ErrnoException) => (callback as (e: NodeJS.ErrnoException) => void)(error);
    resolve(hostname).then((addresses) => {
      const forbidden = allowPrivateTargets
        ? undefined
        : addresses
            .map(({ address }) => ({ address, reason: forbiddenAddressReason(address) }))
            .find(({ reason }) => reason !== undefined);
      if (forbidden) {
        return fail(
          new ForbiddenAddressError(
            `${hostname} resolves to ${forbidden.address}, which is ${forbidden.reason}`,
          ),
        );
      }
      const family = options.family === 4 || options.family === 6 ? options.family : undefined;
      const usable = family ? addresses.filter((a) => a.family === family) : [...addresses];
      const first = usable[0];
      if (!first)
        return fail(Object.assign(new Error(`no address found for ${hostname}`), { code: 'ENOTFOUND' }));
      if (options.all) return callback(null, usable);
      callback(null, first.address, first.family);
    }, fail);
  };
}
