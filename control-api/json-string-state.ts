// Owns the state of one JSON string while the incremental parser (json-stream.ts) reads it, and the names of where
// a value sits and how a diverted string is kept.
import type { ScratchWriter } from '../storage/scratch.js';
import type { Base64Sink } from './base64-sink.js';

/** Where a value sits in the document: keys and array indexes from the root. */
export type JsonPath = readonly (string | number)[];

/** How a diverted string is stored: its text as UTF-8, or the bytes its base64 stands for. */
export type DivertKind = 'text' | 'base64';

/** A string being read: its pieces in memory, or its sink once diverted. */
export class StringState {
  pieces: string[] = [];
  length = 0;
  /** A high surrogate from a `\u` escape waiting for its low half (never split across pieces). */
  pendingHigh = '';
  escape: 'none' | 'backslash' | 'unicode' = 'none';
  hex = '';
  writer: ScratchWriter | undefined;
  /** Text for the writer not yet written: batched, since a string arrives in runs between escapes. */
  out = '';
  /** A drain of the writer is already awaited. */
  draining = false;
  base64: Base64Sink | undefined;
  watchTail = '';
  watched = false;
  constructor(
    readonly path: JsonPath,
    readonly divert: DivertKind | undefined,
    /** An object's key, not a value. */
    readonly isKey = false,
  ) {}
}
