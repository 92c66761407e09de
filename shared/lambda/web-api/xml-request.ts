import { XMLParser, XMLValidator } from 'fast-xml-parser';
import {
  bodyText,
  invalidEnvelope,
  type ParamObject,
  validateEnvelope,
  vltypOfNumeral,
  type WebApiRequest,
} from '../../core/web-api/envelope.js';
import { jsonNameOf } from '../../core/web-api/names.js';

// The XML half of the codec (see codec.ts), in a module of its own so that the parser is loaded
// only by a request that sends XML, never during a cold start.

const TEXT = '#text';
const CDATA = '#cdata';

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
    else throw invalidEnvelope(`<${where}> must hold a value, not the element <${tag}>`);
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
    throw invalidEnvelope(`The body holds the character U+${code}, which XML does not allow`);
  }
  for (const [token] of text.matchAll(MARKUP)) {
    if (token.startsWith('<!--') || token.startsWith('<![CDATA[') || token.startsWith('<?')) {
      if (token.startsWith('<!--') && token.slice(4, -3).includes('--')) {
        throw invalidEnvelope('The body is not well-formed XML: "--" inside a comment');
      }
      continue;
    }
    if (token.startsWith('<!')) {
      throw invalidEnvelope(
        token.startsWith('<!--') || token.startsWith('<![CDATA[')
          ? 'The body is not well-formed XML: an unterminated comment or CDATA section'
          : `A markup declaration (${token.slice(0, 12)}…) is not allowed: the Web API reads no DTD`,
      );
    }
    if (referencedCharacter(token) === undefined) {
      const shown = token.slice(0, 20);
      throw invalidEnvelope(
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
      throw invalidEnvelope('<params> must hold one element per parameter, not text');
    }
    const name = jsonNameOf(tag);
    if (name in params) throw invalidEnvelope(`The parameter <${tag}> appears twice in one <params>`);
    params[name] = leafText(child, tag);
  }
  return Object.keys(params).length > 0 ? params : undefined;
}

/** Decodes an XML request body (`<data><vlTyp/><params/></data>`); 400/100 naming the problem. */
export function decodeXmlRequest(body: Uint8Array): WebApiRequest {
  const text = bodyText(body);
  refuseUnreadMarkup(text);
  const validation = XMLValidator.validate(text);
  if (validation !== true) {
    const { msg, line } = validation.err;
    throw invalidEnvelope(`The body is not well-formed XML: ${msg.slice(0, 200)} (line ${line})`);
  }
  let document: XmlNode[];
  try {
    document = xmlParser.parse(text) as XmlNode[];
  } catch (error) {
    // The parser's own limits (nesting deeper than 100, say) on a document the validator passed.
    throw invalidEnvelope(`The body could not be read as XML: ${(error as Error).message.slice(0, 200)}`);
  }
  const roots = document.filter((node) => !isBlankText(node));
  if (roots.length !== 1 || tagOf(roots[0]!) !== 'data') {
    throw invalidEnvelope('The XML root element must be <data> holding <vlTyp> and <params>');
  }
  let vltyp: unknown;
  const params: ParamObject[] = [];
  for (const child of childrenOf(roots[0]!)) {
    const tag = tagOf(child);
    if (tag === TEXT) {
      if (isBlankText(child)) continue;
      throw invalidEnvelope('<data> must hold elements, not text');
    }
    if (tag === 'vlTyp') {
      if (vltyp !== undefined) throw invalidEnvelope('<vlTyp> appears twice');
      // Spaces around the number are layout, as around a JSON number; the numeral itself is read as JSON's is.
      vltyp = vltypOfNumeral(leafText(child, tag).trim());
    } else if (tag === 'params') {
      const entry = decodeParams(child);
      if (entry) params.push(entry);
    } else {
      throw invalidEnvelope(`Unknown element <${tag.slice(0, 64)}> in <data>: expected <vlTyp> and <params>`);
    }
  }
  return validateEnvelope({ vltyp, params });
}
