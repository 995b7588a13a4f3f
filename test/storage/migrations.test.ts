// Checks that released migrations never change: each one's SQL is pinned by its SHA-256, in its numbered place.
import crypto from 'node:crypto';
import t from 'tap';
import { MIGRATIONS } from '../../storage/sqlite/migrations.js';

// A database at user_version N has run exactly these texts; editing one would leave it out of step with new ones.
const RELEASED = [
  '5b961c2a56a4b006', // 1 accounts
  'b3262af9934d86d3', // 2 outbound engine
  '5880a419b304d323', // 3 SMTP log search indexes
  'df388a2f054df556', // 4 lockdown allow-list
  '42c64aefa1b0825d', // 5 inbound provisioning
  '058b03779474638f', // 6 quarantine
  'f80406b5a786d356', // 7 webhooks
  '3105338db15547bc', // 8 message verdicts
];

t.test('released migrations are unchanged and in order', async (t) => {
  t.ok(MIGRATIONS.length >= RELEASED.length, 'no released migration removed');
  RELEASED.forEach((hash, i) => {
    const sql = MIGRATIONS[i] ?? '';
    t.equal(crypto.createHash('sha256').update(sql).digest('hex').slice(0, 16), hash, `migration ${i + 1}`);
  });
});
