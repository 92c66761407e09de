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
 * XML values stay strings exactly as sent (`1234.50`, surrounding spaces, CDATA and entities
 * resolved). Elements the envelope does not know are refused, like unknown JSON fields, so that
 * a misspelt name is reported instead of silently ignored.
 */

const ENVELOPE_FIELDS = new Set(['vltyp', 'params']);
const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>';

const invalid = (message: string) => new WebApiError(WebApiErrorCode.invalidEnvelope, message);

function bodyText(body: Uint8Array): string {
  if (!isUtf8(body)) throw invalid('The body is not valid UTF-8');
  return Buffer.from(body.buffer, body.byteOffset, body.byteLength)
    .toString('utf8')
    .replace(/^\uFEFF/, '');
}

function decodeJson(body: Uint8Array): WebApiRequest {
  let value: unknown;
  try {
    value = JSON.parse(bodyText(body));
  } catch (error) {
    if (error instanceof SyntaxError)
      throw invalid(`The body is not valid JSON: ${error.message.slice(0, 200)}`);
    throw error;
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
  processEntities: true,
  // Also resolves numeric character references (&#269;); named ones beyond XML's five are HTML's.
  htmlEntities: true,
});

type XmlNode = Record<string, unknown>;
const TEXT = '#text';

function tagOf(node: XmlNode): string {
  return Object.keys(node).find((key) => key !== ':@') ?? '';
}

function childrenOf(node: XmlNode): XmlNode[] {
  return (node[tagOf(node)] as XmlNode[] | undefined) ?? [];
}

function isBlankText(node: XmlNode): boolean {
  return tagOf(node) === TEXT && String(node[TEXT]).trim() === '';
}

/** The text of an element that holds only text (CDATA included); 400 when it holds elements. */
function leafText(node: XmlNode, where: string): string {
  let text = '';
  for (const child of childrenOf(node)) {
    if (tagOf(child) !== TEXT)
      throw invalid(`<${where}> must hold a value, not the element <${tagOf(child)}>`);
    text += String(child[TEXT]);
  }
  return text;
}

/** Everything before the root element: a DOCTYPE there could declare entities, so it is refused. */
function refuseDoctype(text: string): void {
  let rest = text.trimStart();
  while (true) {
    const skipped = rest.replace(/^(<\?[\s\S]*?\?>|<!--[\s\S]*?-->)\s*/, '');
    if (skipped === rest) break;
    rest = skipped;
  }
  if (/^<!DOCTYPE/i.test(rest)) throw invalid('A DOCTYPE is not allowed in the body');
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
  refuseDoctype(text);
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
