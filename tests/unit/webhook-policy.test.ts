import { describe, expect, it } from 'vitest';
import { DEFAULT_WEBHOOK_RETRY_SCHEDULE, getWebhookSettings } from '../../shared/config/webhook.js';
import {
  MAX_RETRY_DELAY_SECONDS,
  parseRetryAfter,
  parseRetrySchedule,
  retryDelaySeconds,
} from '../../shared/core/delivery/retry-policy.js';
import {
  documentReceivedMessage,
  InvalidDocumentEventError,
  parseDocumentReceivedEvent,
  webhookEventId,
} from '../../shared/core/webhook/event.js';
import { signWebhook } from '../../shared/core/webhook/signature.js';
import {
  checkWebhookUrl,
  FORBIDDEN_ADDRESSES,
  forbiddenAddressReason,
} from '../../shared/core/webhook/target.js';

describe('Function: parseDocumentReceivedEvent', () => {
  it('reads the event the access point sends', () => {
    expect(parseDocumentReceivedEvent('{"tenant":"demo","subjectId":1,"documentId":123456}')).toEqual({
      tenant: 'demo',
      subjectId: 1,
      documentId: 123456,
    });
  });

  it.each([
    ['not json', 'not JSON'],
    ['[1,2]', 'not a JSON object'],
    ['{"subjectId":1,"documentId":2}', '"tenant"'],
    ['{"tenant":"Demo!","subjectId":1,"documentId":2}', '"tenant"'],
    ['{"tenant":"demo","subjectId":"1","documentId":2}', '"subjectId"'],
    ['{"tenant":"demo","subjectId":0,"documentId":2}', '"subjectId"'],
    // SUBJECT.ID is an int: such an event could neither find its subject nor be recorded.
    [
      '{"tenant":"demo","subjectId":2147483648,"documentId":2}',
      '"subjectId" must be a positive integer up to',
    ],
    ['{"tenant":"demo","subjectId":1,"documentId":2.5}', '"documentId"'],
    ['{"tenant":"demo","subjectId":1,"documentId":9007199254740993}', '"documentId"'],
  ])('refuses %s naming the problem', (body, problem) => {
    expect(() => parseDocumentReceivedEvent(body)).toThrow(InvalidDocumentEventError);
    expect(() => parseDocumentReceivedEvent(body)).toThrow(problem);
  });

  it('reads the largest subject id an int holds', () => {
    expect(
      parseDocumentReceivedEvent('{"tenant":"demo","subjectId":2147483647,"documentId":2}').subjectId,
    ).toBe(2147483647);
  });

  it('writes the message body the consumer reads back', () => {
    const event = { tenant: 'demo', subjectId: 1, documentId: 123456 };
    expect(documentReceivedMessage(event)).toBe('{"tenant":"demo","subjectId":1,"documentId":123456}');
    expect(parseDocumentReceivedEvent(documentReceivedMessage(event))).toEqual(event);
  });
});

describe('Function: webhookEventId', () => {
  it('is the same for every copy of an event and differs between events', () => {
    const id = webhookEventId({ tenant: 'demo', subjectId: 1, documentId: 123456 });
    expect(id).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(webhookEventId({ tenant: 'demo', subjectId: 1, documentId: 123456 })).toBe(id);
    expect(webhookEventId({ tenant: 'demo', subjectId: 1, documentId: 123457 })).not.toBe(id);
    expect(webhookEventId({ tenant: 'demo', subjectId: 2, documentId: 123456 })).not.toBe(id);
    expect(webhookEventId({ tenant: 'other', subjectId: 1, documentId: 123456 })).not.toBe(id);
  });
});

describe('Function: signWebhook', () => {
  // Expected values from `printf '%s' 'msg_abc.1700000000.123456' | openssl dgst -sha256 -hmac <secret> -binary | base64`.
  it('is v1,<base64 HMAC-SHA256> keyed with the secret text over id.timestamp.body', () => {
    expect(signWebhook('demo-webhook-secret', 'msg_abc', 1700000000, '123456')).toBe(
      'v1,fz07RHFMztd58NEnGbkESWNmzy3N69AengLcfYxHesQ=',
    );
  });

  it('uses a whsec_ secret as it is, not base64-decoded', () => {
    expect(signWebhook('whsec_ce990be5ac7547d12934d879', 'msg_abc', 1700000000, '123456')).toBe(
      'v1,wU+LH7UOXX+jezj/sGAre/9f0KPBONUxGjQbEuEH2eI=',
    );
  });
});

describe('Function: parseRetrySchedule', () => {
  it('reads comma-separated seconds', () => {
    expect(parseRetrySchedule(DEFAULT_WEBHOOK_RETRY_SCHEDULE)).toEqual([
      5, 30, 120, 600, 1800, 7200, 18000, 36000,
    ]);
    expect(parseRetrySchedule(' 1, 2 ,4')).toEqual([1, 2, 4]);
  });

  it.each(['', '1,,2', '1,-2', '1.5', 'abc', '43201'])('refuses %j', (text) => {
    expect(() => parseRetrySchedule(text)).toThrow(/whole seconds/);
  });
});

describe('Function: getWebhookSettings', () => {
  it('counts the attempts from the schedule and names a bad setting', () => {
    const saved = { ...process.env };
    try {
      process.env.WEBHOOK_RETRY_SCHEDULE = '1,2,4';
      process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true';
      expect(getWebhookSettings()).toMatchObject({
        retrySchedule: [1, 2, 4],
        maxAttempts: 4,
        allowPrivateTargets: true,
        timeoutMs: 10_000,
      });
      delete process.env.WEBHOOK_RETRY_SCHEDULE;
      delete process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS;
      expect(getWebhookSettings()).toMatchObject({ maxAttempts: 9, allowPrivateTargets: false });
      process.env.WEBHOOK_RETRY_SCHEDULE = '5,x';
      expect(() => getWebhookSettings()).toThrow(/WEBHOOK_RETRY_SCHEDULE/);
      process.env.WEBHOOK_RETRY_SCHEDULE = '5';
      process.env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'maybe';
      expect(() => getWebhookSettings()).toThrow(/WEBHOOK_ALLOW_PRIVATE_TARGETS/);
    } finally {
      process.env = saved;
    }
  });
});

describe('Function: retryDelaySeconds', () => {
  const schedule = [5, 30, 120, 600, 1800, 7200, 18000, 36000];

  it('follows the schedule after each failed attempt, within ±10 %', () => {
    schedule.forEach((delay, index) => {
      const attempt = index + 1;
      expect(retryDelaySeconds(schedule, attempt, undefined, () => 0)).toBe(Math.round(delay * 0.9));
      expect(retryDelaySeconds(schedule, attempt, undefined, () => 0.5)).toBe(delay);
      const longest = retryDelaySeconds(schedule, attempt, undefined, () => 0.9999999);
      expect(longest).toBeGreaterThanOrEqual(Math.floor(delay * 1.1) - 1);
      expect(longest).toBeLessThanOrEqual(Math.ceil(delay * 1.1));
    });
  });

  it('spreads retries (jitter) rather than repeating one value', () => {
    const seen = new Set(Array.from({ length: 200 }, () => retryDelaySeconds(schedule, 4, undefined)));
    expect(seen.size).toBeGreaterThan(20);
    for (const value of seen) expect(value >= 540 && value <= 660).toBe(true);
  });

  it('waits at least as long as Retry-After asks, at most 12 h', () => {
    expect(retryDelaySeconds(schedule, 1, 120, () => 0.5)).toBe(120);
    expect(retryDelaySeconds(schedule, 2, 3, () => 0.5)).toBe(30);
    expect(retryDelaySeconds(schedule, 8, 10 * 86400, () => 0.5)).toBe(MAX_RETRY_DELAY_SECONDS);
  });
});

describe('Function: parseRetryAfter', () => {
  const now = Date.parse('2025-03-01T10:00:00Z');

  it('reads delay-seconds and HTTP dates', () => {
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter('Sat, 01 Mar 2025 10:05:00 GMT', now)).toBe(300);
    expect(parseRetryAfter('Sat, 01 Mar 2025 09:00:00 GMT', now)).toBe(0);
  });

  it('caps at 12 h and ignores what it cannot read', () => {
    expect(parseRetryAfter('999999', now)).toBe(12 * 3600);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
    expect(parseRetryAfter('-5', now)).toBeUndefined();
    expect(parseRetryAfter('2025', now)).toBe(2025);
  });
});

describe('Function: forbiddenAddressReason', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.255', 'carrier-grade NAT'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['255.255.255.255', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['192.0.2.10', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['::', 'unspecified'],
    ['::127.0.0.1', 'unspecified'],
    ['fc00::1', 'private'],
    ['fd00:ec2::254', 'private'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['2002:c0a8:0101::1', 'private'],
    ['2002:7f00:1::', 'loopback'],
    ['2001:db8::1', 'reserved'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'reserved'],
  ])('refuses %s (%s)', (address, label) => {
    expect(forbiddenAddressReason(address)).toContain(label);
  });

  it.each([
    '93.184.215.14',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '192.169.0.1',
    '2606:4700:4700::1111',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:0808:0808::1',
  ])('allows the public address %s', (address) => {
    expect(forbiddenAddressReason(address)).toBeUndefined();
  });
});

describe('Constant: FORBIDDEN_ADDRESSES (the blockList Node checks before connecting)', () => {
  it('blocks every forbidden range and lets public addresses through', () => {
    for (const address of [
      '127.0.0.1',
      '10.9.8.7',
      '172.20.0.1',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
    ]) {
      expect(FORBIDDEN_ADDRESSES.check(address, 'ipv4'), address).toBe(true);
    }
    for (const address of ['::1', 'fd00:ec2::254', 'fe80::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1']) {
      expect(FORBIDDEN_ADDRESSES.check(address, 'ipv6'), address).toBe(true);
    }
    expect(FORBIDDEN_ADDRESSES.check('93.184.215.14', 'ipv4')).toBe(false);
    expect(FORBIDDEN_ADDRESSES.check('2606:4700:4700::1111', 'ipv6')).toBe(false);
  });
});

describe('Function: checkWebhookUrl', () => {
  it('accepts http and https URLs', () => {
    expect(checkWebhookUrl('https://erp.example.cz/hook?x=1', false).ok).toBe(true);
    expect(checkWebhookUrl('http://erp.example.cz:8080/hook', false).ok).toBe(true);
  });

  it.each([
    ['ftp://erp.example.cz/hook', 'http or https'],
    ['file:///etc/passwd', 'http or https'],
    ['javascript:alert(1)', 'http or https'],
    ['not a url', 'not a valid absolute URL'],
    ['/relative/hook', 'not a valid absolute URL'],
  ])('refuses %s whatever the setting', (url, reason) => {
    for (const allow of [false, true]) {
      const check = checkWebhookUrl(url, allow);
      expect(check.ok).toBe(false);
      expect(!check.ok && check.reason).toContain(reason);
    }
  });

  it.each([
    'http://127.0.0.1:3000/_local/webhook-sink',
    'http://169.254.169.254/latest/meta-data/',
    'http://[::1]/hook',
    'http://[::ffff:127.0.0.1]/hook',
    'http://[fd00:ec2::254]/',
    'http://2130706433/',
    'http://0x7f.1/',
    'http://017700000001/',
    'http://10.0.0.1/',
    'http://0.0.0.0:3000/',
  ])('refuses the private IP literal in %s unless private targets are allowed', (url) => {
    const check = checkWebhookUrl(url, false);
    expect(check.ok).toBe(false);
    expect(!check.ok && check.reason).toMatch(/^target address .* is /);
    expect(checkWebhookUrl(url, true).ok).toBe(true);
  });
});
