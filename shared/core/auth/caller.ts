import { createHash } from 'node:crypto';
import type { DataSourceName } from '../database.js';
import { ServiceError } from '../errors.js';
import { parseQualifiedName } from '../sql-names.js';

/**
 * The scopes of the Data API (CONTRACT 4d). A source scope (`data.read:SUBJECT`,
 * `changes.read:dbo.SUBJECT`) narrows its family to one table or view.
 */
export const SCOPES = [
  'data.read',
  'files.read',
  'files.write',
  'changes.read',
  'subscriptions.write',
] as const;
export type Scope = (typeof SCOPES)[number];
/** The scopes that may name one source. */
export type SourceScopeFamily = 'data.read' | 'changes.read';

const SOURCE_SCOPE = /^(data\.read|changes\.read):(.+)$/;

/** Whether `text` is a scope of the Data API: one of {@link SCOPES}, or a source scope naming `NAME` or `schema.NAME`. */
export function isScope(text: string): boolean {
  if ((SCOPES as readonly string[]).includes(text)) return true;
  const match = SOURCE_SCOPE.exec(text);
  return match !== null && parseQualifiedName(match[2]!) !== undefined;
}

/** The words of a scope's grammar, for the registry's and the token endpoint's refusals. */
export const SCOPE_GRAMMAR =
  'data.read, data.read:<Source>, files.read, files.write, changes.read, changes.read:<Source>, subscriptions.write';

/**
 * Whether `granted` (a client's scopes) covers `asked`: the same scope, or a source scope of a
 * family granted whole (`data.read` covers `data.read:SUBJECT`).
 */
export function scopeCovers(granted: readonly string[], asked: string): boolean {
  if (granted.includes(asked)) return true;
  const match = SOURCE_SCOPE.exec(asked);
  return match !== null && granted.includes(match[1]!);
}

/** Who made a Data API request. */
export type Caller =
  | { readonly kind: 'basic'; readonly user: string }
  | {
      readonly kind: 'bearer';
      /** The token's issuer (the gateway's own `<base_url>`, or a tenant's identity provider). */
      readonly issuer: string;
      /** `client_id` (or `azp`, `appid`), else `sub`: the integration the token was given to. */
      readonly client: string;
      readonly subject: string;
      /** Whether the gateway issued it (its `oauthClients`). */
      readonly ownIssuer: boolean;
      readonly scopes: ReadonlySet<string>;
    };

const MAX_OWNER_LENGTH = 300;

/**
 * The caller as the log names it and as a subscription's owner (CONTRACT 4c, 4d): `basic:<user>`,
 * `client:<client_id>` for the gateway's own clients, `bearer:<issuer> <sub>` for an identity
 * provider's (hashed when longer than the owner column holds).
 */
export function callerIdentity(caller: Caller): string {
  if (caller.kind === 'basic') return `basic:${caller.user}`;
  if (caller.ownIssuer) return `client:${caller.client}`;
  const plain = `bearer:${caller.issuer} ${caller.subject}`;
  if (plain.length <= MAX_OWNER_LENGTH) return plain;
  return `bearer:sha256:${createHash('sha256').update(caller.issuer).update('\0').update(caller.subject).digest('hex')}`;
}

/** Whether the caller holds `scope` (a Basic user holds every scope: the ERP's behaviour). */
export function holdsScope(caller: Caller, scope: Scope): boolean {
  return caller.kind === 'basic' || caller.scopes.has(scope);
}

/**
 * Whether the caller holds `scope` or, for a family of source scopes, one source's: what a route
 * asks before it reads its input (the source is checked once it is found).
 */
export function holdsRouteScope(caller: Caller, scope: Scope): boolean {
  if (holdsScope(caller, scope)) return true;
  if (caller.kind === 'basic' || (scope !== 'data.read' && scope !== 'changes.read')) return false;
  const prefix = `${scope}:`;
  for (const held of caller.scopes) if (held.startsWith(prefix)) return true;
  return false;
}

/** Whether the caller may use `family` on `source`: the whole family, or the source's own scope. */
export function holdsSourceScope(caller: Caller, family: SourceScopeFamily, source: DataSourceName): boolean {
  if (holdsScope(caller, family)) return true;
  if (caller.kind === 'basic') return true;
  const bare = source.name.toLowerCase();
  const qualified = `${source.schema}.${source.name}`.toLowerCase();
  const prefix = `${family}:`;
  for (const scope of caller.scopes) {
    if (!scope.startsWith(prefix)) continue;
    const named = scope.slice(prefix.length).toLowerCase();
    if (named === bare || named === qualified) return true;
  }
  return false;
}

/**
 * 403 `insufficient_scope` (RFC 6750 section 3.1), naming the scope needed in its
 * `WWW-Authenticate` and its message.
 */
export function insufficientScope(realm: string, needed: string): ServiceError {
  return new ServiceError(403, 'insufficient_scope', `The token lacks the scope this call needs: ${needed}`, {
    headers: {
      'www-authenticate': `Bearer realm="${realm}", error="insufficient_scope", error_description="The token lacks the scope ${needed}", scope="${needed}"`,
    },
  });
}

/** Refuses the caller unless it holds `scope` (or, for data.read and changes.read, one source's). */
export function requireScope(caller: Caller, realm: string, scope: Scope): void {
  if (!holdsRouteScope(caller, scope)) throw insufficientScope(realm, scope);
}

/**
 * What a caller may do with the sources a route resolves (read.ts `readCurrent`): checked once
 * the source is found and served, so that a source the tenant does not serve stays a 404 for
 * everyone, and one it serves but the token may not use is a 403.
 */
export interface SourceGrant {
  /** Throws 403 `insufficient_scope` when the caller may not use `source`. */
  check(source: DataSourceName): void;
  /** Whether the caller may use `source` (the description lists only those). */
  permits(source: DataSourceName): boolean;
}

/** The grant of `family` for `caller`. */
export function sourceGrant(caller: Caller, realm: string, family: SourceScopeFamily): SourceGrant {
  return {
    permits: (source) => holdsSourceScope(caller, family, source),
    check(source) {
      if (!holdsSourceScope(caller, family, source)) {
        throw insufficientScope(realm, `${family}:${source.name}`);
      }
    },
  };
}
