// Owns reading and writing CSV (RFC 4180): the suppression list's import and export, in the console and the CLI.

/** A CSV text that cannot be read: the 1-based line it was found on and what is wrong. */
export class CsvError extends Error {
  constructor(readonly line: number, message: string) {
    super(`line ${line}: ${message}`);
  }
}

/**
 * The records of a CSV text, each with the line it starts on (RFC 4180 §2: fields separated by commas, records by
 * CRLF — a bare LF is taken too, as spreadsheets on Unix write it; a field in double quotes may hold commas, line
 * breaks and `""` for one quote). A leading UTF-8 byte order mark (Excel writes one) is skipped; blank lines are
 * skipped. Stops with a CsvError at a quote inside an unquoted field, text after a closing quote, or an unclosed quote.
 */
export function parseCsv(text: string): { line: number; fields: string[] }[] {
  const out: { line: number; fields: string[] }[] = [];
  let i = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let line = 1;
  while (i < text.length) {
    const start = line;
    const fields: string[] = [];
    for (;;) {
      let field = '';
      if (text[i] === '"') {
        i++;
        for (;;) {
          if (i >= text.length) throw new CsvError(start, 'a quoted field is not closed');
          const c = text[i]!;
          if (c === '"') {
            if (text[i + 1] === '"') {
              field += '"';
              i += 2;
              continue;
            }
            i++;
            break;
          }
          if (c === '\n') line++;
          field += c;
          i++;
        }
        if (i < text.length && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') throw new CsvError(line, 'text after a closing quote');
      } else {
        while (i < text.length && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r') {
          if (text[i] === '"') throw new CsvError(line, 'a quote inside an unquoted field (quote the whole field and double the quote)');
          field += text[i];
          i++;
        }
      }
      fields.push(field);
      if (text[i] === ',') {
        i++;
        continue;
      }
      break;
    }
    if (text[i] === '\r') i++;
    if (text[i] === '\n') i++;
    line++;
    if (!(fields.length === 1 && fields[0] === '')) out.push({ line: start, fields });
  }
  return out;
}

/** One field as RFC 4180 writes it: quoted when it holds a comma, a quote or a line break. */
function field(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

/** A CSV text: the header row, then one record per row, each ended by CRLF (RFC 4180 §2). */
export function formatCsv(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [header, ...rows].map((r) => r.map(field).join(',') + '\r\n').join('');
}
