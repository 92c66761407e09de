import { servedFileName } from './file-name.js';

// Lone UTF-16 surrogates (possible in nvarchar) would make encodeURIComponent throw.
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;
// RFC 8187 attr-char minus what encodeURIComponent leaves alone but attr-char does not allow.
const NOT_ATTR_CHAR = /['()*]/g;
// Everything a quoted-string fallback cannot carry safely: non-ASCII, controls, quote, backslash.
const NOT_QUOTABLE = /[^\x20-\x7e]|["\\]/g;

/**
 * `attachment; filename*=UTF-8''<percent-encoded name>; filename="<ASCII fallback>"`: the exact
 * name for every current client, an approximation for those that know only `filename`.
 */
export function attachmentDisposition(storedName: string): string {
  const fileName = servedFileName(storedName);
  const encoded = encodeURIComponent(fileName.replace(LONE_SURROGATE, '\ufffd')).replace(
    NOT_ATTR_CHAR,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  const fallback = fileName
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(NOT_QUOTABLE, '_');
  return `attachment; filename*=UTF-8''${encoded}; filename="${fallback}"`;
}
