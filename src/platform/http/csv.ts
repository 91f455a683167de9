/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, quote or line break. A cell a spreadsheet
 * would run as a formula, one starting with = + - @ | or a tab or carriage return, gets a leading
 * apostrophe (OWASP "CSV injection"; `|` starts a DDE call in some spreadsheets). A plain negative
 * number (a debit of -0.003625) is a number, not a formula, and stays as it is.
 */
export function csvCell(v: unknown): string {
  let s = v === null || v === undefined ? '' : String(v);
  if (/^[=+\-@|\t\r]/.test(s) && !/^-\d+(\.\d+)?$/.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** One CSV line of cells, CRLF-terminated. */
export function csvLine(cells: readonly unknown[]): string {
  return cells.map(csvCell).join(',') + '\r\n';
}
