/** What a file without a (usable) content type is served as. */
export const DEFAULT_CONTENT_TYPE = 'application/octet-stream';

const MAX_LENGTH = 200; // SVCDOC.CONTENT_TYPE
const TOKEN = "[!#$%&'*+.^_`|~0-9A-Za-z-]+";
const QUOTED = '"(?:[\\x20\\x21\\x23-\\x5b\\x5d-\\x7e]|\\\\[\\x20-\\x7e])*"';
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(?:[ \\t]*;[ \\t]*${TOKEN}=(?:${TOKEN}|${QUOTED}))*$`);

/** True for `type/subtype[; name=value]...` in ASCII that fits `SVCDOC.CONTENT_TYPE`: safe to store and to send as a header. */
export function isMediaType(value: string): boolean {
  return value.length <= MAX_LENGTH && MEDIA_TYPE.test(value);
}
