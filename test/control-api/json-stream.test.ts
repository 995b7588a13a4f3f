// Checks the incremental JSON parser against JSON.parse (same values, same refusals, whatever the chunking), and
// what it adds: large named strings diverted to scratch (text as UTF-8, base64 decoded), the byte limit, the bound.
import { Readable } from 'node:stream';
import t from 'tap';
import { Base64Sink } from '../../control-api/base64-sink.js';
import { JsonTooLarge, parseJsonStream } from '../../control-api/json-body.js';
import { MalformedJson, type JsonPath } from '../../control-api/json-stream.js';
import { createBufferBudget } from '../../mta/buffer-budget.js';
import { isBase64 } from '../../mta/outbound/send-request.js';
import { createScratchArea } from '../../storage/scratch.js';
import { BufferBoundReached } from '../../storage/message-source.js';
import { tempDir } from '../helpers/stack.js';

/** `text` as UTF-8 bytes cut every `size` bytes (splitting multi-byte characters and escapes). */
function chunked(text: string, size: number): AsyncIterable<Buffer> {
  const bytes = Buffer.from(text, 'utf8');
  return Readable.from(Array.from({ length: Math.ceil(bytes.length / size) }, (_, i) => bytes.subarray(i * size, (i + 1) * size)));
}
const collect = async (r: Readable) => Buffer.concat(await r.toArray());

const VALID = [
  '{"a":1,"b":[true,false,null],"c":{"d":"e"}}',
  ' [ 1 , -2.5e3 , 0 , 1E+2, -0.0 ] ',
  '"just a string"',
  '"esc \\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\ud83d\\ude00 end"',
  '{"ünï":"çødé 张三 😀","dup":1,"dup":2}',
  '{"__proto__":{"x":1},"constructor":"c"}',
  '[[[[[]]]],{},{"a":[{}]}]',
  '12',
  'null',
];
const INVALID = ['{', '{"a":}', '{"a":1,}', '[1,]', '[01]', '{"a" 1}', "{'a':1}", '"tab\there"', '"\\x"', '"\\u12"', 'tru', '1 2', '{"a":1}}', '[', '-', '1.', '.5', '{"a":1 "b":2}'];

t.test('same values as JSON.parse, whatever the chunk size', async (t) => {
  for (const text of VALID) {
    for (const size of [1, 2, 3, 7, 1024]) {
      const { value, diverted } = await parseJsonStream(chunked(text, size), { limit: 1 << 20 });
      t.same(value, JSON.parse(text), `${text} in ${size}-byte chunks`);
      t.same(diverted, []);
    }
  }
  const proto = (await parseJsonStream(chunked(VALID[5]!, 3), { limit: 1000 })).value as Record<string, unknown>;
  t.ok(Object.hasOwn(proto, '__proto__'), '__proto__ stays an own property, as with JSON.parse');
  t.equal(Object.getPrototypeOf(proto), Object.prototype);
});

t.test('refuses what JSON.parse refuses', async (t) => {
  for (const text of INVALID) {
    t.throws(() => JSON.parse(text), `JSON.parse refuses ${text}`);
    await t.rejects(parseJsonStream(chunked(text, 2), { limit: 1000 }), MalformedJson, text);
  }
  const deep = '['.repeat(100) + ']'.repeat(100);
  await t.rejects(parseJsonStream(chunked(deep, 10), { limit: 1000 }), MalformedJson, 'nesting bounded');
  t.same((await parseJsonStream(chunked('  \n', 1), { limit: 10 })).value, undefined, 'blank body');
});

t.test('over the limit: refused as soon as the limit is passed', async (t) => {
  let read = 0;
  async function* endless(): AsyncGenerator<Buffer> {
    yield Buffer.from('["');
    for (;;) {
      read += 1000;
      yield Buffer.alloc(1000, 'a');
    }
  }
  await t.rejects(parseJsonStream(endless(), { limit: 10_000 }), JsonTooLarge);
  t.ok(read <= 11_000, 'stopped reading at the limit');
});

t.test('named large strings go to scratch: text as UTF-8, base64 decoded; short ones stay in the value', async (t) => {
  const scratch = createScratchArea({ dir: tempDir(t), memoryBytes: 4096 });
  const text = 'ça {{mc-unsubscribe-url}} 😀 \\ " '.repeat(5000);
  const attachment = Buffer.from(Array.from({ length: 200_000 }, (_, i) => i % 256));
  const b64 = attachment.toString('base64').replace(/(.{76})/g, '$1\r\n');
  const body = JSON.stringify({
    content: [{ type: 'text/plain', value: text }, { type: 'text/html', value: '<p>short</p>' }],
    attachments: [{ filename: 'a.bin', content: b64 }, { filename: 'b.bin', content: 'aGk=' }],
    other: text,
  });
  const divert = (p: JsonPath) =>
    p.length === 3 && p[0] === 'content' && p[2] === 'value' ? ('text' as const) : p.length === 3 && p[0] === 'attachments' && p[2] === 'content' ? ('base64' as const) : undefined;
  const budget = createBufferBudget(1 << 20);
  const { value, diverted, heldBytes } = await parseJsonStream(chunked(body, 777), { limit: 1 << 24, divert, threshold: 1000, scratch, budget, watch: 'mc-unsubscribe-url' });
  // Scratch files are open handles: closed here, as the request's release does (Node 26 fails a handle left to GC).
  t.teardown(() => Promise.all(diverted.map((d) => d.scratch.discard())));
  const v = value as { content: { value: string }[]; attachments: { content: string }[]; other: string };
  t.equal(v.content[0]!.value, '', 'diverted: empty in the value');
  t.equal(v.content[1]!.value, '<p>short</p>');
  t.equal(v.attachments[0]!.content, '');
  t.equal(v.attachments[1]!.content, 'aGk=', 'short base64 stays as it is');
  t.equal(v.other, text, 'not named: kept');
  t.same(diverted.map((d) => [d.path, d.kind, d.invalid, d.watched]), [
    [['content', 0, 'value'], 'text', false, true],
    [['attachments', 0, 'content'], 'base64', false, false],
  ]);
  t.equal((await collect(diverted[0]!.scratch.open())).toString('utf8'), text, 'text byte for byte (escapes and surrogate pairs decoded)');
  t.ok((await collect(diverted[1]!.scratch.open())).equals(attachment), 'attachment decoded');
  t.equal(budget.used(), heldBytes, 'what is kept is held from the budget');
  t.ok(heldBytes < text.length + 20_000, 'the diverted strings are not held');
});

t.test('a diverted base64 string that is not base64 is reported, not kept', async (t) => {
  const scratch = createScratchArea({ dir: tempDir(t), memoryBytes: 4096 });
  for (const bad of ['QUJD'.repeat(1000) + '*', 'QUJD'.repeat(1000) + 'QQ', 'QQ=='.repeat(1000)]) {
    const { diverted } = await parseJsonStream(chunked(JSON.stringify({ a: bad }), 100), { limit: 1 << 20, divert: () => 'base64', threshold: 100, scratch });
    t.equal(diverted[0]!.invalid, true, bad.slice(-6));
    await Promise.all(diverted.map((d) => d.scratch.discard()));
  }
});

t.test('base64 decoded piece by piece judges a value as isBase64 does the whole, wherever the pieces split', async (t) => {
  const scratch = createScratchArea({ dir: tempDir(t), memoryBytes: 1 << 20 });
  const values = ['QUJD', 'QUI=', 'QQ==', 'QQ=\r\n=', 'QU JD\nRA==', 'QQ=a', 'Q===', 'QQ', '====', '=', 'QUJD*', 'Q-==', 'QUJDRA=='];
  for (const value of values) {
    for (let cut = 0; cut <= value.length; cut++) {
      for (let cut2 = cut; cut2 <= value.length; cut2++) {
        const w = scratch.writer();
        const sink = new Base64Sink(w);
        for (const piece of [value.slice(0, cut), value.slice(cut, cut2), value.slice(cut2)]) sink.write(piece);
        sink.end();
        await new Promise((r) => w.once('finish', r));
        const got = w.scratch();
        if (sink.invalid !== !isBase64(value)) t.fail(`${JSON.stringify(value)} cut at ${cut}, ${cut2}: invalid=${sink.invalid}`);
        else if (!sink.invalid && !(await collect(got.open())).equals(Buffer.from(value, 'base64'))) t.fail(`${JSON.stringify(value)} decoded wrong`);
        await got.discard();
      }
    }
    t.pass(`${JSON.stringify(value)}: ${isBase64(value) ? 'valid' : 'invalid'} at every split`);
  }
});

t.test('a duplicate key keeps the last value: a string diverted under the one it replaced is dropped', async (t) => {
  const scratch = createScratchArea({ dir: tempDir(t), memoryBytes: 1 << 20 });
  const big = 'QUJD'.repeat(1000);
  const body = `{"attachments":[{"content":"${big}","content":"aGk="}],"content":[{"value":"${'x'.repeat(5000)}"}],"content":[]}`;
  const divert = (p: JsonPath) => (p[0] === 'attachments' ? ('base64' as const) : ('text' as const));
  const { value, diverted } = await parseJsonStream(chunked(body, 333), { limit: 1 << 20, divert, threshold: 100, scratch });
  t.same(value, JSON.parse(body), 'the value JSON.parse gives');
  t.same(diverted, [], 'nothing diverted remains: each was replaced');
});

t.test('past the bound: BufferBoundReached, and what was taken is given back', async (t) => {
  const budget = createBufferBudget(1 << 20);
  const big = JSON.stringify({ a: 'x'.repeat(2 << 20) });
  await t.rejects(parseJsonStream(chunked(big, 65_536), { limit: 1 << 24, budget }), BufferBoundReached);
  t.equal(budget.used(), 0);
});
