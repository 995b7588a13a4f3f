// Runs the inbound end-to-end tests (inbound.cases.ts) on SQLite, in a process of their own.
import { cases } from './inbound.cases.js';

cases.run('sqlite');
