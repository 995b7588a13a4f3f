// Owns the other process of the lock tests (a backup, the sqlite3 shell, another Sluice): run with a data_dir, it
// takes the database's write lock with BEGIN IMMEDIATE, prints "locked", and holds it until its stdin ends.
import { openDatabase } from '../../storage/sqlite/database.js';

const db = openDatabase(process.argv[2]!);
db.exec('BEGIN IMMEDIATE');
process.stdout.write('locked\n');
process.stdin.resume();
process.stdin.on('end', () => {
  db.exec('ROLLBACK');
  db.close();
  process.stdout.write('released\n');
});
