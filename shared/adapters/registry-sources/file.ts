import { readFile } from 'node:fs/promises';

/** The tenant registry's text in a JSON file (`TENANT_REGISTRY_FILE`: the local stack, tests). */
export function readRegistry(path: string): Promise<string> {
  return readFile(path, 'utf8');
}
