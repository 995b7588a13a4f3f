// Runs the outbound end-to-end tests (outbound.cases.ts) on PostgreSQL, in a process of their own.
import { cases } from './outbound.cases.js';

cases.run('postgres');
