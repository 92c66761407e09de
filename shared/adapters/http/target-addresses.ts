import { promises as dns } from 'node:dns';
import { forbiddenAddressReason, ipLiteralHost } from '../../core/webhook/target.js';

/**
 * Why the service must not call `url`'s host: one of the addresses its name resolves to is
 * loopback, private, link-local or a metadata address (CONTRACT 4c, 6); undefined when none is.
 * A name that does not resolve is refused too: nothing could be delivered to it. Deliveries check
 * the address they connect to again (webhook-sender.ts), so a name that changes later gains nothing.
 */
export async function forbiddenHostReason(url: URL): Promise<string | undefined> {
  const literal = ipLiteralHost(url);
  if (literal !== undefined) {
    const reason = forbiddenAddressReason(literal);
    return reason && `${literal} is ${reason}`;
  }
  let addresses: { address: string }[];
  try {
    addresses = await dns.lookup(url.hostname, { all: true });
  } catch {
    return `${url.hostname.slice(0, 100)} does not resolve`;
  }
  for (const { address } of addresses) {
    const reason = forbiddenAddressReason(address);
    if (reason) return `${url.hostname.slice(0, 100)} resolves to ${address}, which is ${reason}`;
  }
  return undefined;
}
