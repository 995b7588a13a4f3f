// Owns the suppression list as CSV: the export's columns and the import that reads them back, shared by the console
// (control-api/console/views-suppressions.ts) and `sluice suppressions import|export` (bin/cli-suppressions.ts).
import type { NewSuppression, SuppressionSource, SuppressionStore } from '../storage/ports/suppressions.js';
import { normaliseRecipient } from '../storage/ports/suppressions.js';
import { CsvError, formatCsv, parseCsv } from './csv.js';
import { ApiError, badRequest, conflict } from './errors.js';
import { EMAIL_RE, listedEntry, SOURCES } from './routes/suppressions.js';

/** The export's columns, in order; the import takes any of them in any order (`recipient` is required). */
export const CSV_COLUMNS = ['recipient', 'suppression_types', 'source', 'notes', 'sender', 'created_at'] as const;
const TYPES = ['transactional', 'non-transactional'];
/** Problems an import names before it stops listing them (the rest are counted). */
const SHOWN_PROBLEMS = 20;
/** Entries read from the store per page while exporting or checking what is already listed. */
const PAGE = 1000;

/** One entry as GET /tx/v1/suppression-list answers it (what the CSV holds). */
export interface ListedEntry {
  recipient: string;
  created_at: string;
  notes?: string;
  sender?: string;
  source: string;
  suppression_types: string[];
}

/** The CSV of listed entries: a header row, then one row per entry; several types are joined by `;`. */
export function suppressionsCsv(entries: readonly ListedEntry[]): string {
  return formatCsv(CSV_COLUMNS, entries.map((e) => [e.recipient, e.suppression_types.join(';'), e.source, e.notes ?? '', e.sender ?? '', e.created_at]));
}

/**
 * Largest CSV an import reads for a list bound of `max` entries: a row is at most 255 + 1024 characters of recipient
 * and notes, 255 of sender and some 80 of the rest, in UTF-8 up to 4 bytes each for the notes.
 */
export const maxCsvBytes = (max: number) => 64 * 1024 + max * 6 * 1024;

/** The account's whole list as CSV, newest first, read from the store a page at a time (`sluice suppressions export`). */
export async function exportSuppressions(store: Pick<SuppressionStore, 'list'>, accountId: number): Promise<{ csv: string; count: number }> {
  const entries: ListedEntry[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const rows = await store.list(accountId, { limit: PAGE, offset });
    entries.push(...rows.map(listedEntry));
    if (rows.length < PAGE) break;
  }
  return { csv: suppressionsCsv(entries), count: entries.length };
}

/** Whom an entry suppresses, as the store tells entries apart: recipient (lower-cased) and source. */
const keyOf = (recipient: string, source: string) => `${normaliseRecipient(recipient)}\n${source}`;

/**
 * The entries of a CSV text for `accountId`: every row checked, every problem named by its line (400 when any). The
 * header row names the columns (CSV_COLUMNS; another is refused, not ignored). `suppression_types` takes
 * `transactional`, `non-transactional` or both (separated by `;`, `|` or spaces; empty: non-transactional, as the
 * API's default); `source` one of the API's sources (empty: api). More rows than `max` (accounts.max_suppressions)
 * can never fit: 422.
 */
export function readSuppressionsCsv(text: string, accountId: number, max: number): { entries: NewSuppression[]; datedNow: boolean } {
  let records;
  try {
    records = parseCsv(text);
  } catch (err) {
    if (err instanceof CsvError) throw badRequest(`csv: ${err.message}`);
    throw err;
  }
  const [head, ...rows] = records;
  if (!head) throw badRequest('csv: empty; the first row names the columns (recipient, suppression_types, source, notes, sender)');
  const columns = head.fields.map((f) => f.trim().toLowerCase());
  const unknown = columns.filter((c) => !(CSV_COLUMNS as readonly string[]).includes(c));
  if (unknown.length > 0) throw badRequest(`csv: unknown column ${unknown.map((c) => `"${c}"`).join(', ')} in the header row; columns are ${CSV_COLUMNS.join(', ')}`);
  const repeated = columns.find((c, i) => columns.indexOf(c) !== i);
  if (repeated) throw badRequest(`csv: column "${repeated}" appears twice in the header row`);
  if (!columns.includes('recipient')) throw badRequest('csv: the header row has no "recipient" column');
  if (rows.length > max) throw new ApiError(422, [`csv: ${rows.length} entries; an account holds at most ${max} (accounts.max_suppressions)`]);
  const problems: string[] = [];
  const entries: NewSuppression[] = [];
  for (const { line, fields } of rows) {
    const at = (name: string) => {
      const i = columns.indexOf(name);
      return i < 0 ? '' : (fields[i] ?? '').trim();
    };
    const bad = (what: string) => problems.push(`line ${line}: ${what}`);
    if (fields.length !== columns.length) bad(`${fields.length} fields; the header row names ${columns.length}`);
    const recipient = at('recipient');
    if (recipient.length < 3 || recipient.length > 255 || !EMAIL_RE.test(recipient)) bad('recipient: invalid email address');
    const typeText = at('suppression_types');
    const types = typeText === '' ? ['non-transactional'] : typeText.toLowerCase().split(/[;|\s]+/).filter((x) => x !== '');
    if (types.some((x) => !TYPES.includes(x))) bad('suppression_types: must be transactional, non-transactional or both (separated by ;)');
    const source = at('source') || 'api';
    if (!(SOURCES as readonly string[]).includes(source)) bad(`source: must be one of ${SOURCES.join(', ')}`);
    const notes = at('notes');
    if (notes.length > 1024) bad('notes: at most 1024 characters');
    const sender = at('sender');
    if (sender.length > 255) bad('sender: at most 255 characters');
    entries.push({
      accountId,
      recipient,
      source: source as SuppressionSource,
      transactional: types.includes('transactional'),
      nonTransactional: types.includes('non-transactional'),
      notes: notes === '' ? null : notes,
      sender: sender === '' ? null : sender,
    });
  }
  if (problems.length > SHOWN_PROBLEMS) problems.splice(SHOWN_PROBLEMS, Infinity, `and ${problems.length - SHOWN_PROBLEMS} more problems`);
  if (problems.length > 0) throw badRequest(...problems);
  return { entries, datedNow: columns.includes('created_at') };
}

/** What an import did: entries added, rows skipped (already listed with that source, or repeated in the file). */
export interface ImportOutcome {
  added: number;
  skipped: number;
  /** The file had a created_at column: its entries are dated at the import all the same (the list's order). */
  datedNow: boolean;
}

/**
 * Imports a CSV text into the account's list, all rows or none: a row whose recipient is already listed with the
 * same source (or repeated in the file) is skipped, so an export imported again adds nothing. The list may not grow
 * past `max` (accounts.max_suppressions): 422 and nothing stored, as POST /tx/v1/suppression-list.
 */
export async function importSuppressions(
  store: Pick<SuppressionStore, 'list' | 'insertMany'>,
  accountId: number,
  text: string,
  o: { max: number; now: number },
): Promise<ImportOutcome> {
  const { entries, datedNow } = readSuppressionsCsv(text, accountId, o.max);
  const seen = new Set<string>();
  for (let offset = 0; ; offset += PAGE) {
    const rows = await store.list(accountId, { limit: PAGE, offset });
    for (const r of rows) seen.add(keyOf(r.recipient, r.source));
    if (rows.length < PAGE) break;
  }
  const fresh = entries.filter((e) => {
    const k = keyOf(e.recipient, e.source);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  if (fresh.length > 0) {
    const res = await store.insertMany(fresh, o.now, o.max);
    if (!res.ok && 'full' in res) throw new ApiError(422, [`the account would hold more than ${o.max} suppression entries (accounts.max_suppressions); remove some first`]);
    // Listed meanwhile by a send's bounce or another request: nothing was stored; the same import then skips it.
    if (!res.ok) throw conflict(`${res.duplicate} was added to the list meanwhile; nothing was imported, try again`);
  }
  return { added: fresh.length, skipped: entries.length - fresh.length, datedNow };
}
