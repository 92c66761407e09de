import { describe, expect, it } from 'vitest';
import { atMost } from '../../shared/core/time-limit.js';

const resolvedAfter = <T>(ms: number, value: T) =>
  new Promise<T>((resolve) => setTimeout(() => resolve(value), ms));

describe('atMost', () => {
  it("answers the work's value when it ends first, and never calls whenLate", async () => {
    let lateCalls = 0;
    await expect(atMost(resolvedAfter(5, 'done'), 200, () => lateCalls++)).resolves.toBe('done');
    await resolvedAfter(250, undefined);
    expect(lateCalls).toBe(0);
  });

  it("passes the work's failure on when it fails first", async () => {
    await expect(atMost(Promise.reject(new Error('broken')), 200, () => 'late')).rejects.toThrow('broken');
  });

  it("answers whenLate's value once the time has passed, leaving the work to go on", async () => {
    const work = resolvedAfter(150, 'done');
    const started = performance.now();
    await expect(atMost(work, 20, () => 'late' as const)).resolves.toBe('late');
    expect(performance.now() - started).toBeLessThan(140);
    await expect(work).resolves.toBe('done');
  });

  it('rejects with what whenLate throws', async () => {
    await expect(
      atMost(resolvedAfter(150, 'done'), 10, () => {
        throw new RangeError('too slow');
      }),
    ).rejects.toThrow(RangeError);
  });

  it('treats a time already past as none left', async () => {
    await expect(atMost(new Promise(() => undefined), -50, () => 'late')).resolves.toBe('late');
  });
});
