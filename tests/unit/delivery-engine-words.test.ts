import { describe, expect, it } from 'vitest';
import { failingTime } from '../../shared/core/delivery/engine.js';

describe('a disabled receiver’s reason, in words', () => {
  it('says how long it failed in hours, or in minutes or seconds for a fraction of an hour, never "0 hours"', () => {
    expect(failingTime(120 * 3_600_000)).toBe('120 hours');
    expect(failingTime(0.25 * 3_600_000)).toBe('15 minutes');
    // WEBHOOK_DISABLE_AFTER_HOURS=0.005, as tests set it.
    expect(failingTime(0.005 * 3_600_000)).toBe('18 seconds');
    expect(failingTime(1.5 * 3_600_000)).toBe('1.5 hours');
  });
});
