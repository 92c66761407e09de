/**
 * The service's version (the Web API `test` answer reports it). Kept here rather than read from
 * package.json, which would otherwise be bundled whole into a function; a unit test keeps the two equal.
 */
export const SERVICE_VERSION = '0.1.0';
