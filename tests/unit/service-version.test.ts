import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SERVICE_VERSION } from '../../shared/config/version.js';

describe('SERVICE_VERSION', () => {
  it("is package.json's version (kept apart so that no bundle carries package.json)", () => {
    expect(SERVICE_VERSION).toBe(JSON.parse(readFileSync('package.json', 'utf8')).version);
  });
});
