import { describe, expect, it } from 'vitest';
import { AnswerWriter, completeAnswer, jsonStringLength, jsonTextLength } from '../../shared/core/answers.js';
import { memoryObjectStore as memoryStore } from '../support/memory-stores.js';

describe('Class: AnswerWriter', () => {
  it('keeps an answer within the limit in memory', async () => {
    const { store, objects } = memoryStore();
    const writer = new AnswerWriter(
      { inlineLimitBytes: 10, presignSeconds: 900, store, keyPrefix: 't' },
      'application/json',
      'json',
    );
    await writer.write('{"a":');
    await writer.write('[1]}');
    expect(await writer.finish()).toEqual({
      kind: 'inline',
      body: '{"a":[1]}',
      contentType: 'application/json',
    });
    expect(objects.size).toBe(0);
  });

  it('moves everything to the store once the limit is passed and redirects', async () => {
    const { store, objects } = memoryStore();
    const writer = new AnswerWriter(
      { inlineLimitBytes: 10, presignSeconds: 900, store, keyPrefix: 'answers/demo' },
      'application/json',
      'json',
    );
    for (const piece of ['{"a":[', '1,2,3,4,', '5,6', ']}']) await writer.write(piece);
    const answer = await writer.finish();
    expect(answer.kind).toBe('redirect');
    const [key, object] = [...objects.entries()][0]!;
    expect(key).toMatch(/^answers\/demo\/\d{4}-\d\d-\d\d\/[0-9a-f-]{36}\.json$/);
    expect(Buffer.concat(object.chunks).toString()).toBe('{"a":[1,2,3,4,5,6]}');
    expect(object.done).toBe(true);
    expect(answer).toEqual({
      kind: 'redirect',
      location: `https://bucket.example/${key}?X-Amz-Expires=900`,
      key,
    });
  });

  it('redirects an answer within the byte limit whose escaped JSON exceeds inlineEncodedLimitBytes', async () => {
    // {"A":1,"B":0}: 13 bytes, 17 once escaped inside a Lambda response.
    const { store, objects } = memoryStore();
    const limits = {
      inlineLimitBytes: 20,
      inlineEncodedLimitBytes: 16,
      presignSeconds: 900,
      store,
      keyPrefix: 't',
    };
    const writer = new AnswerWriter(limits, 'application/json', 'json');
    await writer.write('{"A":1,"B":0}');
    expect((await writer.finish()).kind).toBe('redirect');
    expect(Buffer.concat([...objects.values()][0]!.chunks).toString()).toBe('{"A":1,"B":0}');

    const fits = new AnswerWriter({ ...limits, inlineEncodedLimitBytes: 17 }, 'application/json', 'json');
    await fits.write('{"A":1,"B":0}');
    expect((await fits.finish()).kind).toBe('inline');
  });

  it('counts escapes exactly across chunks once the size no longer proves the answer fits', async () => {
    const { store } = memoryStore();
    const limits = {
      inlineLimitBytes: 1000,
      inlineEncodedLimitBytes: 60,
      presignSeconds: 900,
      store,
      keyPrefix: 't',
    };
    const quotes = '"'.repeat(10);
    const control = String.fromCharCode(1);
    // 10 bytes (60 escaped at most) need no count; with 10 quotes (30 escaped) they are counted;
    // 5 quotes more are 25 bytes, 40 escaped, within the bound again.
    const fits = new AnswerWriter(limits, 'application/json', 'json');
    for (const piece of ['0123456789', quotes, quotes.slice(0, 5)]) await fits.write(piece);
    expect(await fits.finish()).toEqual({
      kind: 'inline',
      body: `0123456789${quotes}${quotes.slice(0, 5)}`,
      contentType: 'application/json',
    });
    // 10 + 20 + 20 escaped, then a control character (6 escaped): 56, inline; one more: 62.
    const inline = new AnswerWriter(limits, 'application/json', 'json');
    for (const piece of ['0123456789', quotes, quotes, control]) await inline.write(piece);
    expect((await inline.finish()).kind).toBe('inline');
    const over = new AnswerWriter(limits, 'application/json', 'json');
    for (const piece of ['0123456789', quotes, quotes, control, control]) await over.write(piece);
    expect((await over.finish()).kind).toBe('redirect');
  });

  it('returns a small answer as its text and one over 1 MiB as UTF-8 bytes, the same content', async () => {
    const { store } = memoryStore();
    const limits = {
      inlineLimitBytes: 5_000_000,
      inlineEncodedLimitBytes: 6_000_000,
      presignSeconds: 900,
      store,
      keyPrefix: 't',
    };
    const piece = `"Žluťoučký kůň",${'x'.repeat(1000)}`;
    const small = new AnswerWriter(limits, 'application/json', 'json');
    await small.write(piece);
    const smallAnswer = await small.finish();
    expect(smallAnswer.kind === 'inline' && smallAnswer.body).toBe(piece);
    const large = new AnswerWriter(limits, 'application/json', 'json');
    const pieces = 1200;
    for (let i = 0; i < pieces; i++) await large.write(piece);
    const largeAnswer = await large.finish();
    expect(largeAnswer.kind).toBe('inline');
    const body = largeAnswer.kind === 'inline' ? largeAnswer.body : '';
    expect(Buffer.isBuffer(body)).toBe(true);
    expect(body.toString()).toBe(piece.repeat(pieces));
  });

  it('fails clearly when an answer is too large and there is no store', async () => {
    const writer = new AnswerWriter(
      { inlineLimitBytes: 4, presignSeconds: 900, store: undefined, keyPrefix: 't' },
      'application/json',
      'json',
    );
    await expect(writer.write('123456')).rejects.toThrow(/no large-answer bucket/);
  });

  it('aborts a partial upload', async () => {
    const { store, objects } = memoryStore();
    const writer = new AnswerWriter(
      { inlineLimitBytes: 1, presignSeconds: 900, store, keyPrefix: 't' },
      'application/json',
      'json',
    );
    await writer.write('abc');
    await writer.abort();
    expect([...objects.values()][0]!.aborted).toBe(true);
  });
});

describe('Function: completeAnswer', () => {
  it('returns an answer within the limits as the very text it was given', async () => {
    // Prepare
    const { store, objects } = memoryStore();
    const limits = {
      inlineLimitBytes: 64,
      inlineEncodedLimitBytes: 64,
      presignSeconds: 900,
      store,
      keyPrefix: 't',
    };
    const xml = '<?xml version="1.0" encoding="UTF-8"?><result/>';
    // Act
    const answer = await completeAnswer(limits, xml, 'application/xml; charset=utf-8', 'xml');
    // Assess
    expect(answer).toEqual({ kind: 'inline', body: xml, contentType: 'application/xml; charset=utf-8' });
    expect(objects.size).toBe(0);
  });

  it('stores an answer over the byte limit whole, with its content type, under the prefix, and redirects', async () => {
    const { store, objects } = memoryStore();
    const limits = { inlineLimitBytes: 16, presignSeconds: 600, store, keyPrefix: 'answers/demo/web-api' };
    const body = JSON.stringify({ id: 7, vlResult: 1, data: [{ nazev: 'Žluťoučký kůň' }] });
    const answer = await completeAnswer(limits, body, 'text/xml; charset=utf-8', 'xml');
    const [key, object] = [...objects.entries()][0]!;
    expect(key).toMatch(/^answers\/demo\/web-api\/\d{4}-\d\d-\d\d\/[0-9a-f-]{36}\.xml$/);
    expect(answer).toEqual({
      kind: 'redirect',
      location: `https://bucket.example/${key}?X-Amz-Expires=600`,
      key,
    });
    expect(Buffer.concat(object.chunks).toString('utf8')).toBe(body);
    expect([object.contentType, object.done]).toEqual(['text/xml; charset=utf-8', true]);
  });

  it('stores an answer within the byte limit that would not fit once escaped in a Lambda response', async () => {
    // 40 quotes: 40 bytes, 80 once escaped as a JSON string.
    const { store, objects } = memoryStore();
    const limits = {
      inlineLimitBytes: 100,
      inlineEncodedLimitBytes: 79,
      presignSeconds: 900,
      store,
      keyPrefix: 't',
    };
    expect((await completeAnswer(limits, '"'.repeat(40), 'application/json', 'json')).kind).toBe('redirect');
    expect(objects.size).toBe(1);
    const roomy = { ...limits, inlineEncodedLimitBytes: 80 };
    expect((await completeAnswer(roomy, '"'.repeat(40), 'application/json', 'json')).kind).toBe('inline');
  });

  it('aborts the upload when the store fails, and passes the failure on', async () => {
    const { store, objects } = memoryStore();
    const failing = {
      ...store,
      startUpload: (key: string, contentType: string) => {
        const upload = store.startUpload(key, contentType);
        return { ...upload, complete: () => Promise.reject(new Error('bucket gone')) };
      },
    };
    const limits = { inlineLimitBytes: 1, presignSeconds: 900, store: failing, keyPrefix: 't' };
    await expect(completeAnswer(limits, 'abc', 'application/json', 'json')).rejects.toThrow('bucket gone');
    expect([...objects.values()][0]!.aborted).toBe(true);
  });
});

describe('Function: jsonStringLength', () => {
  it.each([
    '',
    'plain',
    'Žluťoučký kůň – „uvozovky“',
    '{"a":"b\\"c"}',
    '\b\t\n\f\r',
    '\u0000\u0001\u001f\u007f',
    '\u2028',
  ])('counts the bytes JSON.stringify writes for %j', (text) => {
    expect(jsonStringLength(Buffer.from(text))).toBe(Buffer.byteLength(JSON.stringify(text)) - 2);
    expect(jsonTextLength(text)).toBe(Buffer.byteLength(JSON.stringify(text)) - 2);
  });
});
