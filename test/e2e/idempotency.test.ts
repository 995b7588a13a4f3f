// Runs the Idempotency-Key end-to-end tests (idempotency.cases.ts) on SQLite, in a process of their own.
import { cases } from './idempotency.cases.js';

cases.run('sqlite');
