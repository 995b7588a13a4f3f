// bench:filter's time-ordered split (issue 34): arrival from the newest Received field (Date only without one), the
// first sets only, each group cut on its own, training oldest first.
import t from 'tap';
import { arrivalTime, timeSplit, type CorpusGroup } from '../../bench/corpus.js';

const msg = (received: string | undefined, date: string) =>
  Buffer.from(`${received === undefined ? '' : `Received: from a.example by mx.example; ${received}\r\n`}Date: ${date}\r\nSubject: x\r\n\r\nbody\r\n`);

t.test('arrival is the newest Received stamp; Date only when no Received parses; NaN when neither does', async (t) => {
  t.equal(arrivalTime(msg('Thu, 22 Aug 2002 12:00:00 +0000', 'Mon, 18 Jul 0102 00:00:00 +0000')), Date.UTC(2002, 7, 22, 12), 'a forged Date does not count');
  t.equal(arrivalTime(msg(undefined, 'Fri, 23 Aug 2002 08:00:00 +0000')), Date.UTC(2002, 7, 23, 8));
  t.ok(Number.isNaN(arrivalTime(msg(undefined, 'not a date'))));
});

t.test('first sets only, each group split at 60 % of its own arrival order, training oldest first', async (t) => {
  const day = (d: number) => `${String(d).padStart(2, '0')} Sep 2002 12:00:00 +0000`;
  const make = (group: CorpusGroup, set: string, days: number[]) => days.map((d) => ({ id: `${set}/${d}`, group, set, raw: msg(day(d), day(d)) }));
  const messages = [
    ...make('spam', 'spam-1', [5, 1, 4, 2, 3]),
    ...make('easy-ham', 'easy-ham-1', [10, 6, 9, 7, 8]),
    ...make('hard-ham', 'hard-ham-1', [11, 15, 12, 14, 13]),
    ...make('spam', 'spam-2', [1, 2, 3]),
    { id: 'easy-ham-1/undated', group: 'easy-ham' as const, set: 'easy-ham-1', raw: msg(undefined, 'never') },
  ];
  const s = timeSplit(messages);
  t.same(s.train.spam.map((m) => m.id), ['spam-1/1', 'spam-1/2', 'spam-1/3'], 'no second-set message, oldest first');
  t.same(s.train.ham.map((m) => m.id), ['easy-ham-1/6', 'easy-ham-1/7', 'easy-ham-1/8', 'hard-ham-1/11', 'hard-ham-1/12', 'hard-ham-1/13']);
  t.same(s.test.map((m) => m.id).sort(), ['easy-ham-1/10', 'easy-ham-1/9', 'hard-ham-1/14', 'hard-ham-1/15', 'spam-1/4', 'spam-1/5']);
  t.equal(s.undated, 1);
  t.equal(s.cut.spam, Date.UTC(2002, 8, 4, 12));
  t.equal(s.cut['hard-ham'], Date.UTC(2002, 8, 14, 12));
});
