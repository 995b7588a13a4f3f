// Checks the CSV reader and writer (RFC 4180) the suppression import and export use: quoting, line breaks inside
// fields, CRLF and LF, a byte order mark, blank lines, the line numbers of errors, and that what is written reads back.
import t from 'tap';
import { CsvError, formatCsv, parseCsv } from '../../control-api/csv.js';

t.test('reads RFC 4180 records', async (t) => {
  t.same(parseCsv('a,b\r\n1,2\r\n'), [{ line: 1, fields: ['a', 'b'] }, { line: 2, fields: ['1', '2'] }]);
  t.same(parseCsv('\ufeffa,b\n\n1,"x, ""y""\nz"\n3,\n'), [
    { line: 1, fields: ['a', 'b'] },
    { line: 3, fields: ['1', 'x, "y"\nz'] },
    { line: 5, fields: ['3', ''] },
  ], 'BOM skipped, blank line skipped, a quoted field over two lines, an empty last field');
  t.same(parseCsv('only'), [{ line: 1, fields: ['only'] }], 'no final line break');
  t.same(parseCsv(''), []);
});

t.test('names the line of what it cannot read', async (t) => {
  const fails = (text: string, line: number, message: RegExp) => {
    try {
      parseCsv(text);
      t.fail(`read ${JSON.stringify(text)}`);
    } catch (err) {
      t.ok(err instanceof CsvError);
      t.equal((err as CsvError).line, line);
      t.match((err as Error).message, message);
    }
  };
  fails('a\n"open\nstill', 2, /not closed/);
  fails('a\nb"c\n', 2, /a quote inside an unquoted field/);
  fails('a\n"b"c\n', 2, /text after a closing quote/);
});

t.test('writes what it reads back', async (t) => {
  const rows = [['x@example.com', 'a, b', 'say "hi"\r\nthen go', '']];
  const text = formatCsv(['r', 'n1', 'n2', 'n3'], rows);
  t.equal(text, 'r,n1,n2,n3\r\nx@example.com,"a, b","say ""hi""\r\nthen go",\r\n');
  t.same(parseCsv(text).map((r) => r.fields), [['r', 'n1', 'n2', 'n3'], ...rows]);
});
