// Runs the submission end-to-end tests (submission.cases.ts) on PostgreSQL, in a process of their own.
import { cases } from './submission.cases.js';

cases.run('postgres');
