// Runs the large-message end-to-end tests (large-message.cases.ts) on PostgreSQL, in a process of their own.
import { cases } from './large-message.cases.js';

cases.run('postgres');
