import { BlockList, isIP } from 'node:net';

/**
 * Which webhook targets the service may call. A subject's WEBHOOK_URL is data a tenant controls:
 * without these rules it would make the service call its own network (metadata service, databases,
 * other tenants' internal hosts).
 */

type AddressRange = readonly [network: string, prefix: number];

// IANA special-purpose registries (RFC 6890 and successors): everything that is not plainly public.
const FORBIDDEN: readonly {
  readonly label: string;
  readonly v4: AddressRange[];
  readonly v6: AddressRange[];
}[] = [
  { label: 'loopback', v4: [['127.0.0.0', 8]], v6: [['::1', 128]] },
  {
    label: 'private',
    v4: [
      ['10.0.0.0', 8],
      ['172.16.0.0', 12],
      ['192.168.0.0', 16],
    ],
    // Unique local addresses; includes the EC2 metadata service's fd00:ec2::254.
    v6: [['fc00::', 7]],
  },
  {
    label: 'link-local (includes the cloud metadata service)',
    v4: [['169.254.0.0', 16]],
    v6: [
      ['fe80::', 10],
      ['fec0::', 10],
    ],
  },
  { label: 'carrier-grade NAT', v4: [['100.64.0.0', 10]], v6: [] },
  {
    label: 'unspecified',
    v4: [['0.0.0.0', 8]],
    // ::/96 also holds the deprecated IPv4-compatible addresses (::a.b.c.d).
    v6: [['::', 96]],
  },
  { label: 'multicast', v4: [['224.0.0.0', 4]], v6: [['ff00::', 8]] },
  {
    label: 'reserved',
    v4: [
      ['192.0.0.0', 24],
      ['192.0.2.0', 24],
      ['192.88.99.0', 24],
      ['198.18.0.0', 15],
      ['198.51.100.0', 24],
      ['203.0.113.0', 24],
      ['240.0.0.0', 4],
    ],
    v6: [
      ['100::', 64],
      ['2001::', 32], // Teredo: hides an IPv4 address behind a tunnel
      ['2001:2::', 48],
      ['2001:db8::', 32],
      ['3fff::', 20],
      ['64:ff9b:1::', 48],
      ['5f00::', 16],
    ],
  },
];

function blockList(ranges: readonly (typeof FORBIDDEN)[number][]): BlockList {
  const list = new BlockList();
  for (const { v4, v6 } of ranges) {
    for (const [network, prefix] of v4) list.addSubnet(network, prefix, 'ipv4');
    for (const [network, prefix] of v6) list.addSubnet(network, prefix, 'ipv6');
  }
  return list;
}

const RULES = FORBIDDEN.map((range) => ({ label: range.label, list: blockList([range]) }));

/**
 * Every forbidden range in one list, for `net.connect`'s `blockList`: Node then refuses to
 * connect to such an address whatever resolved it (a second line behind the checked look-up).
 */
export const FORBIDDEN_ADDRESSES: BlockList = blockList(FORBIDDEN);

/** The 16 bytes of an IPv6 address (which `isIP` has already accepted). */
function ipv6Bytes(address: string): number[] {
  let text = address.split('%')[0]!;
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted[1]!.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, undefined];
  const headGroups = head ? head.split(':') : [];
  const tailGroups = tail ? tail.split(':') : [];
  const groups =
    tail === undefined
      ? headGroups
      : [...headGroups, ...Array(8 - headGroups.length - tailGroups.length).fill('0'), ...tailGroups];
  return groups.flatMap((group) => {
    const value = Number.parseInt(group, 16);
    return [value >> 8, value & 0xff];
  });
}

/** IPv4 addresses that an IPv6 address carries through NAT64 (64:ff9b::/96) or 6to4 (2002::/16). */
function embeddedIpv4(address: string): string | undefined {
  const bytes = ipv6Bytes(address);
  const isNat64 =
    bytes[0] === 0x00 &&
    bytes[1] === 0x64 &&
    bytes[2] === 0xff &&
    bytes[3] === 0x9b &&
    bytes.slice(4, 12).every((b) => b === 0);
  if (isNat64) return bytes.slice(12, 16).join('.');
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return bytes.slice(2, 6).join('.');
  return undefined;
}

/**
 * Why the service must not connect to `address` (an IP literal), or undefined when it may.
 * IPv4-mapped (::ffff:a.b.c.d), NAT64 and 6to4 addresses are judged by the IPv4 address inside.
 */
export function forbiddenAddressReason(address: string): string | undefined {
  const version = isIP(address);
  if (version === 0) return 'not an IP address';
  const type = version === 4 ? 'ipv4' : 'ipv6';
  for (const { label, list } of RULES) if (list.check(address, type)) return label;
  if (version === 6) {
    const inner = embeddedIpv4(address);
    if (inner !== undefined) {
      const reason = forbiddenAddressReason(inner);
      if (reason) return `${reason} (inside ${address})`;
    }
  }
  return undefined;
}

/** A URL's host as an IP literal (brackets of IPv6 removed), or undefined for a name. */
export function ipLiteralHost(url: URL): string | undefined {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) ? host : undefined;
}

export type WebhookUrlCheck =
  | { readonly ok: true; readonly url: URL }
  | { readonly ok: false; readonly reason: string };

/**
 * Checks a WEBHOOK_URL before any network use: an absolute http(s) URL, and (unless private
 * targets are allowed) not an IP literal of a forbidden range. Names are checked on the address
 * actually connected to, by the HTTP adapter.
 */
export function checkWebhookUrl(text: string, allowPrivateTargets: boolean): WebhookUrlCheck {
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return { ok: false, reason: 'WEBHOOK_URL is not a valid absolute URL' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return {
      ok: false,
      reason: `WEBHOOK_URL must be http or https, not ${url.protocol.slice(0, -1).slice(0, 20)}`,
    };
  }
  if (!allowPrivateTargets) {
    const literal = ipLiteralHost(url);
    const reason = literal === undefined ? undefined : forbiddenAddressReason(literal);
    if (reason) return { ok: false, reason: `target address ${literal} is ${reason}` };
  }
  return { ok: true, url };
}
