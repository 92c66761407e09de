import fc from 'fast-check';
import { XMLParser } from 'fast-xml-parser';
import { describe, expect, it } from 'vitest';
import {
  type CallResult,
  journalIdOfResultRequest,
  type WebApiError,
} from '../../shared/core/web-api/envelope.js';
import { jsonNameOf, rowElementName, xmlNameOf } from '../../shared/core/web-api/names.js';
import {
  decodeJsonRequest,
  duplicateJsonKey,
  encodeAnswer,
  encodeObject,
} from '../../shared/lambda/web-api/codec.js';
import { webApiHttpStatus } from '../../shared/lambda/web-api/http.js';
import { decodeXmlRequest } from '../../shared/lambda/web-api/xml-request.js';

const json = (text: string) => decodeJsonRequest(Buffer.from(text, 'utf8'));
const xml = (text: string) => decodeXmlRequest(Buffer.from(text, 'utf8'));

/** The 400/100 refusal a decoder throws, or a failure when it accepts the body. */
function refusal(decode: () => unknown): WebApiError {
  try {
    decode();
  } catch (error) {
    return error as WebApiError;
  }
  throw new Error('the body was accepted');
}

const parsed = (text: string) =>
  new XMLParser({
    parseTagValue: false,
    isArray: (name) => name.startsWith('row') || name === 'error',
  }).parse(text);

describe('Function: xmlNameOf / jsonNameOf', () => {
  it.each([
    ['kod_uctu', 'kodUctu'],
    ['idws_journal', 'idwsJournal'],
    ['nazev', 'nazev'],
    ['ucet2_kod', 'ucet2Kod'],
    ['errorCode', 'errorCode'],
  ])('%s ↔ %s', (jsonName, xmlName) => {
    expect(xmlNameOf(jsonName)).toBe(xmlName);
    expect(jsonNameOf(xmlName)).toBe(jsonName === 'errorCode' ? 'error_code' : jsonName);
  });

  it('reads a run of capitals as one word', () => {
    expect(jsonNameOf('ICO')).toBe('ico');
    expect(jsonNameOf('kodDPHSazba')).toBe('kod_dph_sazba');
  });

  it('keeps odd column names from breaking XML', () => {
    expect(xmlNameOf('počet kusů')).toBe('po_et_kus_');
    expect(xmlNameOf('1st')).toBe('_1st');
    expect(rowElementName('subject')).toBe('rowSubject');
  });
});

describe('Function: decodeJsonRequest', () => {
  it('reads the envelope of the contract', () => {
    expect(json('{"vltyp":1001,"params":[{"nazev":"Alfa"}]}')).toEqual({
      vltyp: 1001,
      params: [{ nazev: 'Alfa' }],
    });
  });

  it('treats absent params as none', () => {
    expect(json('{"vltyp":7}')).toEqual({ vltyp: 7, params: [] });
  });

  it('keeps scalar values as sent, including a UTF-8 BOM-prefixed body', () => {
    expect(json('\uFEFF{"vltyp":1,"params":[{"a":"1234.50","b":12.5,"c":true,"d":null}]}').params).toEqual([
      { a: '1234.50', b: 12.5, c: true, d: null },
    ]);
  });

  it.each([
    ['not JSON', '{"vltyp":', /not valid JSON/],
    ['an array', '[1001]', /must be a JSON object/],
    ['no vltyp', '{"params":[]}', /vltyp is missing/],
    ['vltyp as text', '{"vltyp":"1001"}', /vltyp must be an integer/],
    ['vltyp a fraction', '{"vltyp":1.5}', /vltyp must be an integer/],
    ['params an object', '{"vltyp":1,"params":{"nazev":"x"}}', /params must be an array/],
    ['a params entry that is not an object', '{"vltyp":1,"params":["x"]}', /params\[0\] must be an object/],
    ['a nested value', '{"vltyp":1,"params":[{"a":{"b":1}}]}', /params\[0\]\.a must be a string/],
    ['an unknown field', '{"vltyp":1,"param":[]}', /Unknown field "param"/],
    ['vltyp twice', '{"vltyp":1001,"vltyp":7}', /"vltyp" appears twice/],
    ['vltyp twice, once escaped', '{"vltyp":1001,"vl\\u0074yp":7}', /"vltyp" appears twice/],
    ['params twice', '{"vltyp":7,"params":[{"a":"1"}],"params":[]}', /"params" appears twice/],
    [
      'a parameter twice',
      '{"vltyp":7,"params":[{"nazev":"A","ico":"1","nazev":"B"}]}',
      /"nazev" appears twice/,
    ],
    [
      'a key twice in the second params object',
      '{"vltyp":7,"params":[{"a":"x"},{"b":"1", "b" : "2"}]}',
      /"b" appears twice/,
    ],
    [
      'a key twice in an object nested deeper than the envelope reads',
      '{"vltyp":7,"params":[{"a":[{"k":1,"k":2}]}]}',
      /"k" appears twice/,
    ],
  ])('refuses %s with 400/100', (_case, body, message) => {
    const error = refusal(() => json(body));
    expect([webApiHttpStatus(error), error.errorCode]).toEqual([400, '100']);
    expect(error.message).toMatch(message);
  });

  it('finds no duplicate in any JSON that JSON.stringify writes, and finds one added at any depth', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.string(), (value, key) => {
        const text = JSON.stringify(value, null, 1);
        expect(duplicateJsonKey(text)).toBeUndefined();
        const doubled = JSON.stringify({ wrap: [value, { [key]: 1 }] }).replace(
          `{${JSON.stringify(key)}:1}`,
          () => `{${JSON.stringify(key)}:1,${JSON.stringify(key)}:2}`,
        );
        expect(duplicateJsonKey(doubled)).toBe(key);
      }),
    );
  });

  it('reads the same key in different objects, and keys that look alike in values', () => {
    expect(
      json('{"params":[{"a":"\\"a\\":","b":"{\\"a\\":1}"},{"a":"2","vltyp":"3"}],"vltyp":7}').params,
    ).toEqual([
      { a: '"a":', b: '{"a":1}' },
      { a: '2', vltyp: '3' },
    ]);
  });

  it('refuses a body that is not UTF-8', () => {
    const error = refusal(() => decodeJsonRequest(Buffer.from([0x7b, 0xff, 0x7d])));
    expect(error.message).toMatch(/UTF-8/);
  });
});

describe('Function: decodeXmlRequest', () => {
  it('reads the envelope of the contract, names turned into JSON names', () => {
    expect(
      xml('<data><vlTyp>1001</vlTyp><params><nazev>Alfa</nazev><kodUctu>311</kodUctu></params></data>'),
    ).toEqual({
      vltyp: 1001,
      params: [{ nazev: 'Alfa', kod_uctu: '311' }],
    });
  });

  it('keeps values as strings exactly as sent: 1234.50 stays 1234.50, 007 stays 007', () => {
    expect(
      xml('<data><vlTyp>1</vlTyp><params><castka>1234.50</castka><ico>007</ico></params></data>').params,
    ).toEqual([{ castka: '1234.50', ico: '007' }]);
  });

  it('resolves CDATA, the five XML entities and character references', () => {
    const request = xml(
      '<data><vlTyp>1</vlTyp><params><a><![CDATA[A & <b>]]></a><b>x &amp; y &lt;&gt; &quot;&apos;</b>' +
        '<c>&#269;&#x10D;</c><d>&amp;#269;</d></params></data>',
    );
    expect(request.params).toEqual([{ a: 'A & <b>', b: 'x & y <> "\'', c: 'čč', d: '&#269;' }]);
  });

  it("expands exactly XML's five entities and allowed character references, CDATA kept literal", () => {
    const request = xml(
      '<data><vlTyp>7</vlTyp><params><a>&#9;&#xA;&#xD7FF;&#xE000;&#xFFFD;&#x10000;&#1114111;</a>' +
        '<b><![CDATA[&e; &#0; <!DOCTYPE x>]]></b><!-- <!DOCTYPE x> &e; &#0; --><c>&amp;e;</c></params></data>',
    );
    expect(request.params).toEqual([
      { a: '\t\n\uD7FF\uE000\uFFFD\u{10000}\u{10FFFF}', b: '&e; &#0; <!DOCTYPE x>', c: '&e;' },
    ]);
  });

  it('reads a pretty-printed document with a declaration and comments', () => {
    const body = `<?xml version="1.0" encoding="UTF-8"?>
<!-- a call -->
<data>
  <vlTyp> 7 </vlTyp>
  <params>
    <kodUctu>21</kodUctu>
  </params>
</data>
`;
    expect(xml(body)).toEqual({ vltyp: 7, params: [{ kod_uctu: '21' }] });
  });

  it('treats empty <params/>, <params></params> and no params as no parameters', () => {
    expect(xml('<data><vlTyp>7</vlTyp><params/></data>').params).toEqual([]);
    expect(xml('<data><vlTyp>7</vlTyp><params></params></data>').params).toEqual([]);
    expect(xml('<data><vlTyp>7</vlTyp></data>').params).toEqual([]);
  });

  it('reads several <params> as several objects and an empty parameter as ""', () => {
    expect(
      xml('<data><vlTyp>1001</vlTyp><params><ico>1</ico></params><params><nazev/></params></data>').params,
    ).toEqual([{ ico: '1' }, { nazev: '' }]);
  });

  it('reads a namespaced document by its local names, with or without a prefix', () => {
    for (const body of [
      '<data xmlns="urn:erp"><vlTyp>7</vlTyp><params><kodUctu>21</kodUctu></params></data>',
      '<e:data xmlns:e="urn:erp"><e:vlTyp>7</e:vlTyp><e:params><e:kodUctu>21</e:kodUctu></e:params></e:data>',
    ]) {
      expect(xml(body)).toEqual({ vltyp: 7, params: [{ kod_uctu: '21' }] });
    }
  });

  it('reads idwsJournal as idws_journal', () => {
    expect(xml('<data><vlTyp>997</vlTyp><params><idwsJournal>42</idwsJournal></params></data>')).toEqual({
      vltyp: 997,
      params: [{ idws_journal: '42' }],
    });
  });

  it.each([
    ['malformed XML', '<data><vlTyp>7</vlTyp>', /not well-formed XML/],
    ['another root element', '<request><vlTyp>7</vlTyp></request>', /root element must be <data>/],
    [
      'two root elements',
      '<data><vlTyp>7</vlTyp></data><data/>',
      /root element must be <data>|not well-formed/,
    ],
    ['no vlTyp', '<data><params/></data>', /vltyp is missing/],
    ['a vlTyp that is not an integer', '<data><vlTyp>12a</vlTyp></data>', /vltyp must be an integer/],
    ['vlTyp twice', '<data><vlTyp>7</vlTyp><vlTyp>8</vlTyp></data>', /appears twice/],
    ['an unknown element', '<data><vlTyp>7</vlTyp><limit>5</limit></data>', /Unknown element <limit>/],
    ['the JSON spelling vltyp', '<data><vltyp>7</vltyp></data>', /Unknown element <vltyp>/],
    ['text inside <data>', '<data>hello<vlTyp>7</vlTyp></data>', /must hold elements/],
    ['text inside <params>', '<data><vlTyp>7</vlTyp><params>x<a>1</a></params></data>', /not text/],
    ['a parameter twice', '<data><vlTyp>7</vlTyp><params><a>1</a><a>2</a></params></data>', /appears twice/],
    [
      'a nested parameter',
      '<data><vlTyp>7</vlTyp><params><a><b>1</b></a></params></data>',
      /must hold a value/,
    ],
    [
      'a DOCTYPE',
      '<?xml version="1.0"?><!DOCTYPE data [<!ENTITY e "boom">]><data><vlTyp>&e;</vlTyp></data>',
      /DOCTYPE/,
    ],
    [
      'a DOCTYPE inside the root, whose entity would be expanded',
      '<data><!DOCTYPE data [<!ENTITY e "7">]><vlTyp>&e;</vlTyp></data>',
      /markup declaration \(<!DOCTYPE.*reads no DTD/,
    ],
    [
      'a DOCTYPE inside a parameter',
      '<data><vlTyp>7</vlTyp><params><a><!DOCTYPE a [<!ENTITY x "y">]>&x;</a></params></data>',
      /reads no DTD/,
    ],
    ['a DOCTYPE after the root', '<data><vlTyp>7</vlTyp></data><!DOCTYPE data>', /reads no DTD/],
    ['a lower-case doctype', '<!doctype data><data><vlTyp>7</vlTyp></data>', /reads no DTD/],
    ['an ENTITY declaration alone', '<data><!ENTITY e "7"><vlTyp>7</vlTyp></data>', /reads no DTD/],
    ['an undefined entity', '<data><vlTyp>7</vlTyp><params><a>&e;</a></params></data>', /&e; is not defined/],
    [
      "an HTML entity (not one of XML's five)",
      '<data><vlTyp>7</vlTyp><params><a>&nbsp;&copy;</a></params></data>',
      /&nbsp; is not defined/,
    ],
    ['an undefined entity in an attribute', '<data a="&e;"><vlTyp>7</vlTyp></data>', /&e; is not defined/],
    ['a bare &', '<data><vlTyp>7</vlTyp><params><a>A & B</a></params></data>', /must start a reference/],
    [
      'a reference without ;',
      '<data><vlTyp>7</vlTyp><params><a>&amp</a></params></data>',
      /must start a reference/,
    ],
    ['&#0;', '<data><vlTyp>7</vlTyp><params><a>&#0;</a></params></data>', /&#0; names a character XML/],
    ['&#x0;', '<data><vlTyp>7</vlTyp><params><a>&#x0;</a></params></data>', /names a character XML/],
    [
      '&#1; (a control character)',
      '<data><vlTyp>7</vlTyp><params><a>&#1;</a></params></data>',
      /names a character/,
    ],
    ['&#x1F;', '<data><vlTyp>7</vlTyp><params><a>&#x1F;</a></params></data>', /names a character/],
    ['&#xFFFE;', '<data><vlTyp>7</vlTyp><params><a>&#xFFFE;</a></params></data>', /names a character/],
    ['&#65535;', '<data><vlTyp>7</vlTyp><params><a>&#65535;</a></params></data>', /names a character/],
    [
      'a surrogate &#xD800;',
      '<data><vlTyp>7</vlTyp><params><a>&#xD800;</a></params></data>',
      /names a character/,
    ],
    [
      'a surrogate &#57343;',
      '<data><vlTyp>7</vlTyp><params><a>&#57343;</a></params></data>',
      /names a character/,
    ],
    [
      '&#x110000; (beyond Unicode)',
      '<data><vlTyp>7</vlTyp><params><a>&#x110000;</a></params></data>',
      /names a/,
    ],
    [
      'an empty reference &#;',
      '<data><vlTyp>7</vlTyp><params><a>&#;</a></params></data>',
      /&#; names|is not/,
    ],
    ['a raw control character', '<data><vlTyp>7</vlTyp><params><a>\u0001</a></params></data>', /U\+0001/],
    ['a raw U+FFFF', '<data><vlTyp>7</vlTyp><params><a>\uFFFF</a></params></data>', /U\+FFFF/],
    [
      'elements nested deeper than the parser reads',
      `<data><vlTyp>7</vlTyp><params>${'<a>'.repeat(200)}${'</a>'.repeat(200)}</params></data>`,
      /could not be read as XML: Maximum nested tags exceeded/,
    ],
  ])('refuses %s with 400/100', (_case, body, message) => {
    const error = refusal(() => xml(body));
    expect([webApiHttpStatus(error), error.errorCode]).toEqual([400, '100']);
    expect(error.message).toMatch(message);
  });
});

/** A body in both formats: the JSON text, and what XML sends for the same envelope. */
type BothFormats = readonly [json: string, xml: string];

describe('Strict envelopes (CONTRACT.md section 5), JSON and XML alike', () => {
  it.each([
    ['1001', 1001],
    ['-5', -5],
    ['0', 0],
    ['999999999999999', 999999999999999],
  ])('accepts the vltyp %s in both formats', (numeral, vltyp) => {
    expect(json(`{"vltyp":${numeral}}`).vltyp).toBe(vltyp);
    expect(xml(`<data><vlTyp>${numeral}</vlTyp></data>`).vltyp).toBe(vltyp);
    // Spaces around the number are layout in both.
    expect(json(`{"vltyp": ${numeral} }`).vltyp).toBe(vltyp);
    expect(xml(`<data><vlTyp> ${numeral} </vlTyp></data>`).vltyp).toBe(vltyp);
  });

  it.each([
    ['a fraction of zero', '1001.0'],
    ['an exponent', '1e3'],
    ['an exponent with a fraction', '1.001E3'],
    ['a negative zero fraction', '-0.0'],
    ['a number past 15 digits', '9007199254740991'],
    ['a number JSON cannot hold as finite', '1e999'],
  ])('refuses a vltyp written with %s (%s) in both formats', (_case, numeral) => {
    for (const decode of [
      () => json(`{"vltyp":${numeral}}`),
      () => xml(`<data><vlTyp>${numeral}</vlTyp></data>`),
    ]) {
      const error = refusal(decode);
      expect([webApiHttpStatus(error), error.errorCode]).toEqual([400, '100']);
      expect(error.message).toMatch(/vltyp must be an integer/);
    }
  });

  it.each(['01001', '+1001', '0x3E9', '1 001', ''])(
    'refuses the XML vltyp %j, which JSON cannot write as a number either',
    (numeral) => {
      const error = refusal(() => xml(`<data><vlTyp>${numeral}</vlTyp></data>`));
      expect([webApiHttpStatus(error), error.errorCode]).toEqual([400, '100']);
      expect(() => JSON.parse(`{"vltyp":${numeral}}`)).toThrow(SyntaxError);
    },
  );

  it.each([
    ['1e999', 'Infinity'],
    ['-1e999', '-Infinity'],
    ['1e400', 'Infinity'],
  ])(
    'refuses a parameter number JSON cannot hold as finite (%s), which would reach the procedure as null',
    (number) => {
      const error = refusal(() => json(`{"vltyp":1001,"params":[{"ico":${number}}]}`));
      expect([webApiHttpStatus(error), error.errorCode]).toEqual([400, '100']);
      expect(error.message).toMatch(/params\[0\]\.ico is a number outside the range of a finite number/);
    },
  );

  it('keeps the largest finite and the smallest numbers JSON holds', () => {
    expect(
      json('{"vltyp":1001,"params":[{"a":1.7976931348623157e308,"b":5e-324,"c":1e-400}]}').params,
    ).toEqual([{ a: 1.7976931348623157e308, b: 5e-324, c: 0 }]);
  });

  it.each([
    ['params null', '{"vltyp":7,"params":null}'],
    ['params a string', '{"vltyp":7,"params":"x"}'],
    ['params a number', '{"vltyp":7,"params":1}'],
    ['a params entry null', '{"vltyp":7,"params":[null]}'],
    ['a params entry an array', '{"vltyp":7,"params":[[]]}'],
  ])('refuses %s: params is an array of objects', (_case, body) => {
    const error = refusal(() => json(body));
    expect([webApiHttpStatus(error), error.errorCode]).toEqual([400, '100']);
  });

  const resultFor = (decoded: { params: Parameters<typeof journalIdOfResultRequest>[0] }) =>
    journalIdOfResultRequest(decoded.params);

  it.each<[string, BothFormats, number]>([
    [
      'a number',
      [
        '{"vltyp":997,"params":[{"idws_journal":42}]}',
        '<data><vlTyp>997</vlTyp><params><idwsJournal>42</idwsJournal></params></data>',
      ],
      42,
    ],
    [
      'digits as text',
      [
        '{"vltyp":997,"params":[{"idws_journal":"42"}]}',
        '<data><vlTyp>997</vlTyp><params><idwsJournal>42</idwsJournal></params></data>',
      ],
      42,
    ],
  ])('reads the 997 journal id given as %s, in both formats', (_case, [jsonBody, xmlBody], id) => {
    expect(resultFor(json(jsonBody))).toBe(id);
    expect(resultFor(xml(xmlBody))).toBe(id);
  });

  it.each<[string, BothFormats]>([
    [
      'a leading zero',
      [
        '{"vltyp":997,"params":[{"idws_journal":"01"}]}',
        '<data><vlTyp>997</vlTyp><params><idwsJournal>01</idwsJournal></params></data>',
      ],
    ],
    [
      'zero',
      [
        '{"vltyp":997,"params":[{"idws_journal":0}]}',
        '<data><vlTyp>997</vlTyp><params><idwsJournal>0</idwsJournal></params></data>',
      ],
    ],
    [
      'a negative id',
      [
        '{"vltyp":997,"params":[{"idws_journal":-3}]}',
        '<data><vlTyp>997</vlTyp><params><idwsJournal>-3</idwsJournal></params></data>',
      ],
    ],
    [
      'a fraction',
      [
        '{"vltyp":997,"params":[{"idws_journal":4.5}]}',
        '<data><vlTyp>997</vlTyp><params><idwsJournal>4.5</idwsJournal></params></data>',
      ],
    ],
    [
      'spaces around the digits',
      [
        '{"vltyp":997,"params":[{"idws_journal":" 42 "}]}',
        '<data><vlTyp>997</vlTyp><params><idwsJournal> 42 </idwsJournal></params></data>',
      ],
    ],
    [
      'a sign',
      [
        '{"vltyp":997,"params":[{"idws_journal":"+42"}]}',
        '<data><vlTyp>997</vlTyp><params><idwsJournal>+42</idwsJournal></params></data>',
      ],
    ],
    [
      'an exponent as text',
      [
        '{"vltyp":997,"params":[{"idws_journal":"4e1"}]}',
        '<data><vlTyp>997</vlTyp><params><idwsJournal>4e1</idwsJournal></params></data>',
      ],
    ],
    [
      'a key beside it',
      [
        '{"vltyp":997,"params":[{"idws_journal":42,"nazev":"x"}]}',
        '<data><vlTyp>997</vlTyp><params><idwsJournal>42</idwsJournal><nazev>x</nazev></params></data>',
      ],
    ],
    [
      'a second params object',
      [
        '{"vltyp":997,"params":[{"idws_journal":42},{"idws_journal":43}]}',
        '<data><vlTyp>997</vlTyp><params><idwsJournal>42</idwsJournal></params><params><idwsJournal>43</idwsJournal></params></data>',
      ],
    ],
    ['no params', ['{"vltyp":997}', '<data><vlTyp>997</vlTyp></data>']],
    [
      'another key only',
      ['{"vltyp":997,"params":[{"id":42}]}', '<data><vlTyp>997</vlTyp><params><id>42</id></params></data>'],
    ],
  ])('refuses a 997 with %s, in both formats', (_case, [jsonBody, xmlBody]) => {
    for (const decode of [() => resultFor(json(jsonBody)), () => resultFor(xml(xmlBody))]) {
      const error = refusal(decode);
      expect([webApiHttpStatus(error), error.errorCode]).toEqual([400, '100']);
      expect(error.message).toMatch(/vltyp 997 needs params/);
    }
  });
});

describe('Function: encodeAnswer', () => {
  const rows: CallResult = {
    answer: {
      id: 12,
      vlResult: 1,
      data: [
        { kod_uctu: '211000', nazev: 'Pokladna <hlavní> & spol.', zustatek: 48250.5 },
        { kod_uctu: '221003', nazev: 'Fio\u0001banka' },
      ],
    },
    rowName: 'Ucet',
  };

  it('writes JSON exactly as the answer holds it', () => {
    expect(JSON.parse(encodeAnswer(rows, 'json'))).toEqual(rows.answer);
  });

  it('writes XML rows as row<Name> with camelCase children, escaped', () => {
    const text = encodeAnswer(rows, 'xml');
    expect(text).toMatch(
      /^<\?xml version="1.0" encoding="UTF-8"\?><result><id>12<\/id><vlResult>1<\/vlResult><data><rowUcet>/,
    );
    expect(text).toContain('<kodUctu>211000</kodUctu><nazev>Pokladna &lt;hlavní&gt; &amp; spol.</nazev>');
    expect(parsed(text)).toEqual({
      '?xml': '',
      result: {
        id: '12',
        vlResult: '1',
        data: {
          rowUcet: [
            { kodUctu: '211000', nazev: 'Pokladna <hlavní> & spol.', zustatek: '48250.5' },
            { kodUctu: '221003', nazev: 'Fio\uFFFDbanka' },
          ],
        },
      },
    });
  });

  it('writes an error answer with id null as <id/> and the error entry under <data>', () => {
    const error: CallResult = {
      answer: {
        id: null,
        vlResult: -1,
        data: [{ error: [{ errorCode: '101', errorMessage: 'Missing header: x-api-key' }] }],
      },
      rowName: undefined,
    };
    expect(encodeAnswer(error, 'xml')).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><result><id/><vlResult>-1</vlResult><data><error>' +
        '<errorCode>101</errorCode><errorMessage>Missing header: x-api-key</errorMessage></error></data></result>',
    );
    expect(JSON.parse(encodeAnswer(error, 'json'))).toEqual(error.answer);
  });

  it('writes an empty result as an empty <data>', () => {
    const text = encodeAnswer({ answer: { id: 3, vlResult: 1, data: [] }, rowName: 'Subject' }, 'xml');
    expect(text).toContain('<data></data>');
  });

  it('writes a 997 answer with the original envelope and its rows inside resultForId', () => {
    const finished: CallResult = {
      answer: {
        id: 20,
        vlResult: 1,
        data: [{ resultForId: { id: 19, vlResult: 1, data: [{ slept: 5 }] }, id: 19 }],
      },
      rowName: 'Sleep',
    };
    expect(encodeAnswer(finished, 'xml')).toContain(
      '<data><resultForId><id>19</id><vlResult>1</vlResult><data><rowSleep><slept>5</slept></rowSleep></data>' +
        '</resultForId><id>19</id></data>',
    );
    const running: CallResult = {
      answer: {
        id: 21,
        vlResult: 1,
        data: [{ resultForId: [{ errorCode: 160, errorMessage: 'still running' }], idws_journal: 19 }],
      },
      rowName: undefined,
    };
    expect(encodeAnswer(running, 'xml')).toContain(
      '<data><resultForId><errorCode>160</errorCode><errorMessage>still running</errorMessage></resultForId>' +
        '<idwsJournal>19</idwsJournal></data>',
    );
  });

  it('writes the answer of test under <result>', () => {
    expect(encodeObject({ status: 'ok', version: '1.2.3' }, 'xml')).toBe(
      '<?xml version="1.0" encoding="UTF-8"?><result><status>ok</status><version>1.2.3</version></result>',
    );
    expect(JSON.parse(encodeObject({ status: 'ok', version: '1.2.3' }, 'json'))).toEqual({
      status: 'ok',
      version: '1.2.3',
    });
  });
});
