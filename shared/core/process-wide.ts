/**
 * State that is one per process rather than one per copy of the module holding it. In Lambda a
 * function's bundle is the only copy. The local stack with `LOCAL_FUNCTIONS=packaged` runs every
 * function's bundle (each with copies of these modules of its own) beside the stack's sources: the
 * embedded databases the stack opens, the registry it sets and the settings it resets must be the
 * ones every copy sees. Keyed by a registered symbol, which every copy resolves to the same key.
 * Here, on the ground floor, because every layer keeps such state (adapters their key sets, config
 * the registry and settings, lambda the credentials it remembers) and none may import one above it.
 */
export function processWide<T extends object>(name: string, create: () => T): T {
  const slots = globalThis as unknown as Record<symbol, T | undefined>;
  const key = Symbol.for(`erp-integration-gateway:${name}`);
  slots[key] ??= create();
  return slots[key];
}
