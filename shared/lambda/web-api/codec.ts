import {
  bodyText,
  type CallResult,
  invalidEnvelope,
  validateEnvelope,
  vltypOfNumeral,
  type WebApiAnswer,
  type WebApiRequest,
} from '../../core/web-api/envelope.js';
import { rowElementName, xmlNameOf } from '../../core/web-api/names.js';
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
const XML_DECLARATION = '<?xml version="1.0" encoding="UTF-8"?>';

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

/** Decodes a JSON request body into the envelope; 400/100 naming the problem. */
export function decodeJsonRequest(body: Uint8Array): WebApiRequest {
  const text = bodyText(body);
  let value: unknown;
  // The text each `vltyp` number was written as, by the object holding it (the reviver's `this`),
  // so that JSON accepts the same numerals as XML (`1001.0` and `1e3` are numbers JSON.parse reads
  // as integers).
  const vltypNumerals = new WeakMap<object, string>();
  try {
    value = JSON.parse(
      text,
      function keepVltypNumeral(this: object, key, parsed, context?: { source?: string }) {
        if (key === 'vltyp' && typeof parsed === 'number' && context?.source !== undefined) {
          vltypNumerals.set(this, context.source);
        }
        return parsed;
      },
    );
  } catch (error) {
    if (error instanceof SyntaxError)
      throw invalidEnvelope(`The body is not valid JSON: ${error.message.slice(0, 200)}`);
    throw error;
  }
  const duplicate = duplicateJsonKey(text);
  if (duplicate !== undefined) {
    throw invalidEnvelope(`The key "${duplicate.slice(0, 64)}" appears twice in one JSON object`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw invalidEnvelope('The body must be a JSON object {"vltyp": <integer>, "params": [{…}]}');
  }
  const unknown = Object.keys(value).filter((key) => !ENVELOPE_FIELDS.has(key));
  if (unknown.length > 0) {
    throw invalidEnvelope(
      `Unknown field "${unknown[0]!.slice(0, 64)}": the envelope has only vltyp and params`,
    );
  }
  const numeral = vltypNumerals.get(value);
  if (numeral !== undefined) vltypOfNumeral(numeral);
  return validateEnvelope(value);
}

/** The decoder of a request body in `format`; the XML one (and its parser) is imported on first use. */
export async function requestDecoder(format: WireFormat): Promise<(body: Uint8Array) => WebApiRequest> {
  if (format === 'json') return decodeJsonRequest;
  return (await import('./xml-request.js')).decodeXmlRequest;
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
