// bench:filter's running of the judged stream (issue 34): learning as it goes through the MX's own autolearn step,
// in arrival order, and the inner validation's folds by sender site.
import t from 'tap';
import { runFold, senderFolds, senderSite, trained, type Learned } from '../../bench/filter-run.js';
import type { CorpusGroup, CorpusMessage } from '../../bench/corpus.js';
import { GTUBE } from '../../filters/spam-rules.js';

function message(id: string, group: CorpusGroup, from: string, day: number, body: string, time = '12:00:00'): CorpusMessage {
  const stamp = `${String(day).padStart(2, '0')} Sep 2002 ${time} +0000`;
  const raw = Buffer.from(
    `Received: from a.example by mx.example; ${stamp}\r\nFrom: Someone <${from}>\r\nTo: user@corp.example\r\nSubject: note ${id}\r\n` +
      `Date: ${stamp}\r\nMessage-ID: <${id}@${from.split('@')[1]}>\r\n\r\n${body}\r\n`,
  );
  return { id, group, raw, mailFrom: from, set: `${group}-1` };
}

t.test('learning as it goes: only the pipeline\'s certain verdicts teach, in arrival order', async (t) => {
  const stream = [
    message('s3', 'spam', 'x@spam.example', 3, `win now ${GTUBE}`),
    message('h1', 'easy-ham', 'a@list.example', 1, 'the meeting moved to thursday'),
    message('s2', 'spam', 'y@spam.example', 2, `cheap offer ${GTUBE}`),
    message('s4', 'spam', 'z@spam.example', 4, 'a spam no rule is sure of'),
  ];
  const learned: Learned = { spam: 0, ham: 0, overBound: 0 };
  const [learning, still] = await trained([], [], async (bayes) => [await runFold(stream, bayes, { learn: learned }), await runFold(stream, bayes)]);
  // GTUBE's score is past filters.bayes.autolearn_spam_score: certain without the classifier. The label of s4
  // (spam) teaches nothing: nothing certain said so, and the ham is not certain either (no safelist, no DMARC).
  t.same(learned, { spam: 2, ham: 0, overBound: 0 });
  t.same(learning.map((o) => o.id), ['h1', 's2', 's3', 's4'], 'judged in arrival order');
  t.same(still.map((o) => o.id), ['s3', 'h1', 's2', 's4'], 'frozen: as given');
  t.same(learning.map((o) => o.spam), [false, true, true, false]);
});

t.test('learning as it goes honours filters.bayes.autolearn_per_hour (200) by the messages\' own clock hours', async (t) => {
  const clock = (i: number) => `12:${String(Math.floor(i / 60)).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}`;
  const stream = Array.from({ length: 201 }, (_, i) => message(`g${i}`, 'spam', `x${i}@spam.example`, 9, `offer ${i} ${GTUBE}`, clock(i)));
  stream.push(message('next-hour', 'spam', 'y@spam.example', 9, `offer again ${GTUBE}`, '13:00:05'));
  const learned: Learned = { spam: 0, ham: 0, overBound: 0 };
  await trained([], [], (bayes) => runFold(stream, bayes, { learn: learned }));
  t.same(learned, { spam: 201, ham: 0, overBound: 1 }, '200 in the first hour, the 201st over the bound, the next hour learns again');
});

t.test('sender folds: no sender site of a class in two folds, classes dealt evenly', async (t) => {
  t.equal(senderSite(message('a', 'spam', 'x@mail.news.example.co.uk', 1, '').raw), 'example.co.uk');
  t.equal(senderSite(Buffer.from('Subject: none\r\n\r\nbody\r\n')), '');
  const messages = [
    ...[1, 2, 3, 4].map((d) => message(`n${d}`, 'hard-ham', `news@letters${d % 2}.example`, d, 'issue')),
    ...[1, 2, 3].map((d) => message(`s${d}`, 'spam', `s@bulk${d}.example`, d, 'offer')),
  ];
  const folds = senderFolds(messages, 2);
  const where = (id: string) => folds.findIndex((f) => f.some((m) => m.id === id));
  t.equal(where('n1'), where('n3'), 'letters1.example in one fold');
  t.equal(where('n2'), where('n4'), 'letters0.example in one fold');
  t.not(where('n1'), where('n2'), 'the two sites dealt to both folds');
  t.same(folds.map((f) => f.filter((m) => m.group === 'spam').length).sort(), [1, 2]);
  t.equal(folds.flat().length, messages.length);
});
