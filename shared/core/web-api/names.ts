/**
 * Names of the Web API in its two formats: JSON uses the database's lower-case snake_case names
 * (`kod_uctu`, `idws_journal`), XML their camelCase (`kodUctu`, `idwsJournal`).
 */

/** `kod_uctu` → `kodUctu`; names without an underscore stay as they are (`errorCode`). */
export function xmlNameOf(jsonName: string): string {
  const camel = jsonName.replace(/_+([A-Za-z0-9])/g, (_all, next: string) => next.toUpperCase());
  return xmlSafe(camel);
}

/** `kodUctu` → `kod_uctu`; a run of capitals is one word (`ICO` → `ico`, `kodDPH` → `kod_dph`). */
export function jsonNameOf(xmlName: string): string {
  return xmlName
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase();
}

/** The element of one result row: row name `Subject` → `rowSubject`. */
export function rowElementName(rowName: string): string {
  return xmlSafe(`row${rowName.charAt(0).toUpperCase()}${rowName.slice(1)}`);
}

/**
 * Column names come from database procedures: anything an XML element name cannot hold becomes
 * `_`, so that an odd column can never break the document.
 */
function xmlSafe(name: string): string {
  const cleaned = name.replace(/[^A-Za-z0-9_.-]/g, '_');
  return /^[A-Za-z_]/.test(cleaned) ? cleaned : `_${cleaned}`;
}
