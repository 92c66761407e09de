/**
 * Characters a file name may not hold (CONTRACT.md section 4): controls, C0, DEL and C1
 * (`\p{Cc}`), and the bidirectional formatting characters (`\p{Bidi_Control}`: overrides,
 * embeddings, isolates, marks), with which `invoice\u202Efdp.exe` shows as `invoiceexe.pdf`.
 */
const UNSAFE_IN_FILE_NAME = /[\p{Cc}\p{Bidi_Control}]/u;
const UNSAFE_IN_FILE_NAME_ALL = /[\p{Cc}\p{Bidi_Control}]/gu;

/** Whether a file name holds a control or bidirectional formatting character. */
export function hasUnsafeFileNameCharacter(fileName: string): boolean {
  return UNSAFE_IN_FILE_NAME.test(fileName);
}

/**
 * The name as served back: without the characters `setFile` refuses, for a row stored before the
 * rule or by the ERP itself, so that what a user sees is the name's real order.
 */
export function servedFileName(fileName: string): string {
  return fileName.replace(UNSAFE_IN_FILE_NAME_ALL, '');
}
