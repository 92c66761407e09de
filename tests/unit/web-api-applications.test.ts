import { describe, expect, it } from 'vitest';
import { findRegisteredApplication } from '../../shared/core/web-api/applications.js';

describe('Function: findRegisteredApplication', () => {
  const applications = Object.freeze([
    { id: 1, apiKey: 'demo-api-key', apiHashes: ['demo-api-hash'], active: true },
    { id: 7, apiKey: 'Partner Key', apiHashes: ['a', 'b'], active: false },
  ]);

  it('finds an application by its exact key: id, API hashes and active, never the key', () => {
    expect(findRegisteredApplication(applications, 'demo-api-key')).toEqual({
      id: 1,
      apiHashes: ['demo-api-hash'],
      active: true,
    });
    expect(findRegisteredApplication(applications, 'Partner Key')).toEqual({
      id: 7,
      apiHashes: ['a', 'b'],
      active: false,
    });
  });

  it('finds nothing for a key that differs in case, spaces or length, or is empty', () => {
    for (const key of [
      'DEMO-API-KEY',
      'demo-api-key ',
      ' demo-api-key',
      'demo-api-ke',
      'demo-api-keyy',
      '',
      'partner key',
    ]) {
      expect(findRegisteredApplication(applications, key), key).toBeUndefined();
    }
    expect(findRegisteredApplication([], 'demo-api-key')).toBeUndefined();
  });

  it('indexes each list once: a list read anew (a new registry) is looked up anew', () => {
    const first = findRegisteredApplication(applications, 'demo-api-key');
    expect(findRegisteredApplication(applications, 'demo-api-key')).toBe(first);
    const rotated = Object.freeze([{ ...applications[0]!, apiHashes: ['new-hash'] }]);
    expect(findRegisteredApplication(rotated, 'demo-api-key')?.apiHashes).toEqual(['new-hash']);
  });
});
