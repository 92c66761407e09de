import { randomBytes } from 'node:crypto';
import { RegistrationError } from '../../shared/adapters/mssql/web-api-registration.js';
import { webApiApplication } from '../../shared/config/tenants.js';

/** A new secret to key signatures with: 32 characters of base64url (192 bits). */
export const newApiHash = (): string => randomBytes(24).toString('base64url');

/** The options of `npm run web-api -- application`. */
export interface ApplicationOptions {
  readonly id?: string;
  readonly name?: string;
  readonly key?: string;
  readonly hash?: string;
}

/**
 * The registry entry of a new application (`webApi.applications` of a tenant), its key and API
 * hash made at random unless given, checked as the registry checks it; a RegistrationError naming
 * the option otherwise.
 */
export function applicationEntry(options: ApplicationOptions): Record<string, unknown> {
  if (!options.id || !/^\d{1,10}$/.test(options.id)) {
    throw new RegistrationError(
      '--id is required: a whole number from 1, not used by another application of the tenant (nor of a tenant on the same database); it is what WS_JOURNAL.APPLICATION_ID records',
    );
  }
  if (!options.name) throw new RegistrationError('--name is required: who the application is');
  if (options.key !== undefined && !/^[\x21-\x7e]{8,100}$/.test(options.key)) {
    throw new RegistrationError('--key must be 8 to 100 printable ASCII characters without spaces');
  }
  if (options.hash !== undefined && !/^[\x21-\x7e]{16,200}$/.test(options.hash)) {
    throw new RegistrationError('--hash must be 16 to 200 printable ASCII characters without spaces');
  }
  const entry = {
    id: Number(options.id),
    name: options.name,
    apiKey: options.key ?? `key-${randomBytes(12).toString('base64url')}`,
    apiHashes: [options.hash ?? newApiHash()],
    active: true,
  };
  const checked = webApiApplication.safeParse(entry);
  if (!checked.success) {
    const issue = checked.error.issues[0]!;
    throw new RegistrationError(`--${String(issue.path[0] ?? 'id')}: ${issue.message}`);
  }
  return entry;
}
