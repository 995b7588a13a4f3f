// Owns what both sides of `sluice store copy` share: the target's table shapes, the normalised form of a value, and
// the digests (per table, per body) that the copy compares between the SQLite source and the PostgreSQL target.
import crypto from 'node:crypto';

/**
 * How a target column's values are normalised, from its PostgreSQL type: booleans as booleans (SQLite: 0/1),
 * integers as decimal strings (exact beyond 2^53), floats as numbers, JSON parsed (SQLite: text, PostgreSQL: jsonb),
 * bytes as Buffers (blob, bytea), text as strings.
 */
export type ColumnKind = 'boolean' | 'integer' | 'float' | 'json' | 'bytes' | 'text';

/** One column of a target table. */
export interface CopyColumn {
  name: string;
  kind: ColumnKind;
  /** The PostgreSQL type, as an insert casts its parameter (`bigint`, `jsonb`, …). */
  sqlType: string;
  /** A GENERATED … AS IDENTITY column: its sequence is moved past the copied values. */
  identity: boolean;
}

/** A target table: its columns in the target's order and its primary key (the order rows are read in). */
export interface CopyTable {
  name: string;
  columns: CopyColumn[];
  key: string[];
}

/** A normalised value (see ColumnKind). */
export type CopyValue = null | boolean | string | number | Buffer | { json: unknown };

/** The kind of a PostgreSQL data_type (information_schema.columns); undefined for a type the copy does not know. */
export function kindOf(dataType: string): ColumnKind | undefined {
  switch (dataType) {
    case 'boolean':
      return 'boolean';
    case 'smallint':
    case 'integer':
    case 'bigint':
      return 'integer';
    case 'double precision':
    case 'real':
      return 'float';
    case 'json':
    case 'jsonb':
      return 'json';
    case 'bytea':
      return 'bytes';
    case 'text':
    case 'character varying':
      return 'text';
    default:
      return undefined;
  }
}

/** JSON with object keys sorted: jsonb keeps its own key order, so both sides are compared in this one. */
function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o).sort().map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** The bytes a value stands for in the digest (and in the report's byte counts). */
function bytesOf(v: Exclude<CopyValue, null>): Buffer {
  if (Buffer.isBuffer(v)) return v;
  if (typeof v === 'object') return Buffer.from(canonicalJson(v.json));
  return Buffer.from(typeof v === 'number' ? String(v) : String(v));
}

const MOD = 1n << 256n;

/**
 * The digest of a table's rows, independent of their order: the sum modulo 2^256 of each row's SHA-256 (over its
 * values, each tagged and length-prefixed). Order-free because the two databases sort text differently (collations)
 * and reading both in one order would need a sort of every table; a sum, unlike XOR, does not cancel equal rows.
 */
export class TableDigest {
  rows = 0;
  /** Bytes of the values: text and JSON as UTF-8, bytes as they are, numbers and booleans as written in decimal. */
  bytes = 0;
  private sum = 0n;

  add(row: readonly CopyValue[]): void {
    const h = crypto.createHash('sha256');
    const len = Buffer.alloc(5);
    for (const v of row) {
      if (v === null) {
        h.update('\0');
        continue;
      }
      const b = bytesOf(v);
      len[0] = Buffer.isBuffer(v) ? 98 : typeof v === 'object' ? 106 : typeof v === 'boolean' ? 116 : typeof v === 'number' ? 102 : 115;
      len.writeUInt32BE(b.length, 1);
      h.update(len);
      h.update(b);
      this.bytes += b.length;
    }
    this.sum = (this.sum + BigInt(`0x${h.digest('hex')}`)) % MOD;
    this.rows++;
  }

  /** The digest as 64 hex digits. */
  hex(): string {
    return this.sum.toString(16).padStart(64, '0');
  }
}

/** What was copied of one table (or of the bodies) and whether the target read back the same. */
export interface CopiedTable {
  table: string;
  rows: number;
  bytes: number;
  digest: string;
}
