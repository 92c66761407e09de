import type { StoredFileInfo } from './document-store.js';

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** A strong ETag: the content's SHA-256, or the GUID where the stored hash is unusable (content never changes under a GUID). */
export function entityTag(file: Pick<StoredFileInfo, 'sha256' | 'fileGuid'>): string {
  return SHA256_HEX.test(file.sha256) ? `"${file.sha256}"` : `"${file.fileGuid.toLowerCase()}"`;
}

/** `If-None-Match` semantics (RFC 9110 13.1.2): `*` or any listed tag, compared weakly. */
export function matchesIfNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const value = header.trim();
  if (value === '*') return true;
  const opaque = (tag: string) => tag.replace(/^W\//, '');
  const wanted = opaque(etag);
  for (const match of value.matchAll(/(?:W\/)?"[^"]*"/g)) {
    if (opaque(match[0]) === wanted) return true;
  }
  return false;
}
