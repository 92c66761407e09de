import { isUtf8 } from 'node:buffer';
import { XMLParser, XMLValidator } from 'fast-xml-parser';
import {
  type CallResult,
  type ParamObject,
  validateEnvelope,
  type WebApiAnswer,
  WebApiError,
  WebApiErrorCode,
  type WebApiRequest,
} from '../../core/web-api/envelope.js';
import { jsonNameOf, rowElementName, xmlNameOf } from '../../core/web-api/names.js';
import type { WireFormat } from './format.js';

/**
 * The Web API's two wire formats. JSON is the canonical form (journaled as is); XML mirrors it
 * with camelCase names: `<data><vlTyp>…</vlTyp><params><kodUctu>…</kodUctu></params></data>` in,
 * `<result><id/><vlResult/><data><rowUcet><kodUctu>…</kodUctu></rowUcet></data></result>` out.
 *
 * XML values stay strings exactly as sent (`1234.50`, surrounding spaces, CDATA and references
 * resolved). Elements the envelope does not know are refused, like unknown JSON fields, so that
 * a misspelt name is reported instead of silently ignored.
 *
 * Both readers are strict: a JSON object with a key twice, and XML with any DTD (`<!DOCTYPE`
 * before, inside or after the root), a reference to an entity other than XML's five, or a
 * character XML does not allow (raw or as `&#…;`), are refused 400/100 rather than read one way
 * or another. The XML reader expands nothing itself: the parser hands over text as written and
 * {@link expandReferences} resolves exactly the references the check let through.
 */

const ENVELOPE_FIELDS = new Set(['vltyp', 'params']);
const TEXT = '#text';
const CDATA = '#cdata';
const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>';

const invalid = (message: string) => new WebApiError(WebApiErrorCode.invalidEnvelope, message);

function bodyText(body: Uint8Array): string {
  if (!isUtf8(body)) throw invalid('The body is not valid UTF-8');
  return Buffer.from(body.buffer, body.byteOffset, body.byteLength)
    .toString('utf8')
    .replace(/^\uFEFF/, '');
}

/**
 * The first key given twice in one object of a JSON text that `JSON.parse` accepted (which keeps
 * the last silently), compared as decoded (`"vltyp"` and `"vl\u0074yp"` are one key), at any depth.
 */
export function duplicateJsonKey(text: string): string | undefined {
  // One entry per open container: the keys seen so far of an object, undefined for an array.
  const open: (Set<string> | undefined)[] = [];
  let keyNext = false;
  for (let at = 0; at < text.length; at += 1) {
    const char = text[at];
    if (char === '"') {
      let end = at + 1;
      while (text[end] !== '"') end += text[end] === '\\' ? 2 : 1;
      const keys = open.at(-1);
      if (keys && keyNext) {
        const key = JSON.parse(text.slice(at, end + 1)) as string;
        if (keys.has(key)) return key;
        keys.add(key);
        keyNext = false;
      }
      at = end;
    } else if (char === '{') {
      open.push(new Set());
      keyNext = true;
    } else if (char === '[') {
      open.push(undefined);
    } else if (char === '}' || char === ']') {
      open.pop();
    } else if (char === ',') {
      keyNext = open.at(-1) !== undefined;
    }
  }
  return undefined;
}

function decodeJson(body: Uint8Array): WebApiRequest {
  const text = bodyText(body);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    if (error instanceof SyntaxError)
      throw invalid(`The body is not valid JSON: ${error.message.slice(0, 200)}`);
    throw error;
  }
  const duplicate = duplicateJsonKey(text);
  if (duplicate !== undefined) {
    throw invalid(`The key "${duplicate.slice(0, 64)}" appears twice in one JSON object`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalid('The body must be a JSON object {"vltyp": <integer>, "params": [{…}]}');
  }
  const unknown = Object.keys(value).filter((key) => !ENVELOPE_FIELDS.has(key));
  if (unknown.length > 0) {
    throw invalid(`Unknown field "${unknown[0]!.slice(0, 64)}": the envelope has only vltyp and params`);
  }
  return validateEnvelope(value);
}

// preserveOrder keeps every node, so that mixed content and repeated elements can be told apart.
const xmlParser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: true,
  // <ns:data xmlns:ns="…"> is read as <data>, as <data xmlns="…"> is: names are matched without their namespace.
  removeNSPrefix: true,
  parseTagValue: false,
  trimValues: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  // References are checked and expanded here, not by the parser (which would also read a DTD's entities).
  processEntities: false,
  htmlEntities: false,
  // CDATA apart from text: its "&amp;" is literal, not a reference.
  cdataPropName: CDATA,
});

type XmlNode = Record<string, unknown>;

function tagOf(node: XmlNode): string {
  return Object.keys(node).find((key) => key !== ':@') ?? '';
}

function childrenOf(node: XmlNode): XmlNode[] {
  return (node[tagOf(node)] as XmlNode[] | undefined) ?? [];
}

function isBlankText(node: XmlNode): boolean {
  return tagOf(node) === TEXT && String(node[TEXT]).trim() === '';
}

/** The text of an element that holds only text and CDATA, references expanded; 400 when it holds elements. */
function leafText(node: XmlNode, where: string): string {
  let text = '';
  for (const child of childrenOf(node)) {
    const tag = tagOf(child);
    if (tag === TEXT) text += expandReferences(String(child[TEXT]));
    else if (tag === CDATA)
      text += childrenOf(child)
        .map((part) => String(part[TEXT] ?? ''))
        .join('');
    else throw invalid(`<${where}> must hold a value, not the element <${tag}>`);
  }
  return text;
}

const PREDEFINED_ENTITIES: Readonly<Record<string, string>> = {
  lt: '<',
  gt: '>',
  amp: '&',
  quot: '"',
  apos: "'",
};

/** XML 1.0's `Char`: what a document may hold, raw or as a character reference. */
const isXmlCharacter = (codePoint: number) =>
  codePoint === 0x9 ||
  codePoint === 0xa ||
  codePoint === 0xd ||
  (codePoint >= 0x20 && codePoint <= 0xd7ff) ||
  (codePoint >= 0xe000 && codePoint <= 0xfffd) ||
  (codePoint >= 0x10000 && codePoint <= 0x10ffff);

const NOT_XML_CHARACTER = /[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/u;
const REFERENCE = /^&(?:#([0-9]{1,7})|#x([0-9a-fA-F]{1,6})|([A-Za-z_][\w.-]*));$/;

/** The character a reference stands for; undefined when XML does not allow it. */
function referencedCharacter(reference: string): string | undefined {
  const match = REFERENCE.exec(reference);
  if (!match) return undefined;
  if (match[3] !== undefined) return PREDEFINED_ENTITIES[match[3]];
  const codePoint = match[1] !== undefined ? Number(match[1]) : Number.parseInt(match[2]!, 16);
  return isXmlCharacter(codePoint) ? String.fromCodePoint(codePoint) : undefined;
}

/**
 * Comments, CDATA sections and processing instructions are passed over whole (a `&` or `<!` in
 * them is not markup); what is left is every other `<!` and every `&` up to its `;`.
 */
const MARKUP = /<!--[\s\S]*?-->|<!\[CDATA\[[\s\S]*?\]\]>|<\?[\s\S]*?\?>|<![^>]{0,40}|&[^&<;\s]{0,40};?/g;

/**
 * Refuses what the Web API does not read: any markup declaration (`<!DOCTYPE`, `<!ENTITY`,
 * wherever it stands: the service reads no DTD), references other than XML's five entities and
 * allowed characters, and characters outside XML's `Char`.
 */
function refuseUnreadMarkup(text: string): void {
  const character = NOT_XML_CHARACTER.exec(text);
  if (character) {
    const code = character[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
    throw invalid(`The body holds the character U+${code}, which XML does not allow`);
  }
  for (const [token] of text.matchAll(MARKUP)) {
    if (token.startsWith('<!--') || token.startsWith('<![CDATA[') || token.startsWith('<?')) {
      if (token.startsWith('<!--') && token.slice(4, -3).includes('--')) {
        throw invalid('The body is not well-formed XML: "--" inside a comment');
      }
      continue;
    }
    if (token.startsWith('<!')) {
      throw invalid(
        token.startsWith('<!--') || token.startsWith('<![CDATA[')
          ? 'The body is not well-formed XML: an unterminated comment or CDATA section'
          : `A markup declaration (${token.slice(0, 12)}…) is not allowed: the Web API reads no DTD`,
      );
    }
    if (referencedCharacter(token) === undefined) {
      const shown = token.slice(0, 20);
      throw invalid(
        /^&#/.test(token) && token.endsWith(';')
          ? `The character reference ${shown} names a character XML does not allow`
          : token.endsWith(';')
            ? `The entity reference ${shown} is not defined: only &lt; &gt; &amp; &quot; &apos; and character references are read`
            : `A "&" must start a reference such as &amp; (found ${shown})`,
      );
    }
  }
}

/** Resolves the references {@link refuseUnreadMarkup} allowed, in text outside CDATA. */
function expandReferences(text: string): string {
  return text.replace(/&[^&;]*;/g, (reference) => referencedCharacter(reference) ?? reference);
}

function decodeParams(node: XmlNode): ParamObject | undefined {
  const params: Record<string, string> = {};
  for (const child of childrenOf(node)) {
    const tag = tagOf(child);
    if (tag === TEXT) {
      if (isBlankText(child)) continue;
      throw invalid('<params> must hold one element per parameter, not text');
    }
    const name = jsonNameOf(tag);
    if (name in params) throw invalid(`The parameter <${tag}> appears twice in one <params>`);
    params[name] = leafText(child, tag);
  }
  return Object.keys(params).length > 0 ? params : undefined;
}

function decodeXml(body: Uint8Array): WebApiRequest {
  const text = bodyText(body);
  refuseUnreadMarkup(text);
  const validation = XMLValidator.validate(text);
  if (validation !== true) {
    const { msg, line } = validation.err;
    throw invalid(`The body is not well-formed XML: ${msg.slice(0, 200)} (line ${line})`);
  }
  let document: XmlNode[];
  try {
    document = xmlParser.parse(text) as XmlNode[];
  } catch (error) {
    // The parser's own limits (nesting deeper than 100, say) on a document the validator passed.
    throw invalid(`The body could not be read as XML: ${(error as Error).message.slice(0, 200)}`);
  }
  const roots = document.filter((node) => !isBlankText(node));
  if (roots.length !== 1 || tagOf(roots[0]!) !== 'data') {
    throw invalid('The XML root element must be <data> holding <vlTyp> and <params>');
  }
  let vltyp: unknown;
  const params: ParamObject[] = [];
  for (const child of childrenOf(roots[0]!)) {
    const tag = tagOf(child);
    if (tag === TEXT) {
      if (isBlankText(child)) continue;
      throw invalid('<data> must hold elements, not text');
    }
    if (tag === 'vlTyp') {
      if (vltyp !== undefined) throw invalid('<vlTyp> appears twice');
      const value = leafText(child, tag).trim();
      vltyp = /^-?\d{1,15}$/.test(value) ? Number(value) : value;
    } else if (tag === 'params') {
      const entry = decodeParams(child);
      if (entry) params.push(entry);
    } else {
      throw invalid(`Unknown element <${tag.slice(0, 64)}> in <data>: expected <vlTyp> and <params>`);
    }
  }
  return validateEnvelope({ vltyp, params });
}

/** Decodes a request body into the envelope; 400/100 naming the problem. */
export function decodeRequest(body: Uint8Array, format: WireFormat): WebApiRequest {
  return format === 'json' ? decodeJson(body) : decodeXml(body);
}

// XML 1.0 cannot carry most control characters, not even as references.
const NOT_XML_CHARACTERS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\uFFFE\uFFFF]/g;

function escapeText(value: string): string {
  return value
    .replace(NOT_XML_CHARACTERS, '\uFFFD')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;');
}

/** One JSON value as XML elements named `name`: arrays repeat the element, objects nest. */
function valueXml(jsonName: string, value: unknown): string {
  if (value === null || value === undefined) return '';
  const name = xmlNameOf(jsonName);
  if (Array.isArray(value)) return value.map((item) => valueXml(jsonName, item)).join('');
  if (typeof value === 'object') return `<${name}>${fieldsXml(value as Record<string, unknown>)}</${name}>`;
  return `<${name}>${escapeText(String(value))}</${name}>`;
}

function fieldsXml(fields: Record<string, unknown>): string {
  return Object.entries(fields)
    .map(([name, value]) => valueXml(name, value))
    .join('');
}

/**
 * The children of an answer envelope. Its `data` holds rows (`row<Name>` elements) when
 * `vlResult` is 1, except the one entry of a 997 answer (`resultForId`, which may hold a whole
 * envelope again); otherwise error entries.
 */
function envelopeXml(answer: WebApiAnswer, rowName: string | undefined): string {
  const id = answer.id === null ? '<id/>' : `<id>${answer.id}</id>`;
  const items = answer.data.map((item) => {
    const fields = item as Record<string, unknown>;
    if (answer.vlResult !== 1) return fieldsXml(fields);
    if ('resultForId' in fields) {
      const { resultForId, ...rest } = fields;
      const inner =
        typeof resultForId === 'object' && resultForId !== null && !Array.isArray(resultForId)
          ? `<resultForId>${envelopeXml(resultForId as WebApiAnswer, rowName)}</resultForId>`
          : valueXml('resultForId', resultForId);
      return inner + fieldsXml(rest);
    }
    const element = rowElementName(rowName ?? 'Row');
    return `<${element}>${fieldsXml(fields)}</${element}>`;
  });
  return `${id}<vlResult>${answer.vlResult}</vlResult><data>${items.join('')}</data>`;
}

/** Encodes an answer in the negotiated format. */
export function encodeAnswer(result: CallResult, format: WireFormat): string {
  if (format === 'json') return JSON.stringify(result.answer);
  return `${XML_DECLARATION}<result>${envelopeXml(result.answer, result.rowName)}</result>`;
}

/** Encodes a flat object (the answer of `test`) under `<result>` or as JSON. */
export function encodeObject(value: Record<string, string | number>, format: WireFormat): string {
  if (format === 'json') return JSON.stringify(value);
  return `${XML_DECLARATION}<result>${fieldsXml(value)}</result>`;
}
