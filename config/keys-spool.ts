// Owns the keys that bound what messages may take of the machine: disk room left for the spool, and message bytes
// held in memory at once.
import { key } from './key-def.js';
import { integer } from './values.js';

/**
 * `smtp.max_buffered_bytes`: message bytes the process may hold in memory at once, over SMTP and REST together.
 * Messages stream to disk, so what counts is what must stay in memory (header sections, content samples, REST
 * content that is rendered or tracked, small messages kept in memory); 128 MiB lets 50 large messages be received
 * at once with room to spare.
 */
export const MAX_BUFFERED_BYTES = key({
  doc: 'Message bytes the process may hold in memory at once, SMTP and REST together (header sections, samples, REST content being rendered, small messages); past it, DATA gets 452 4.3.1 and REST sends 503 with Retry-After until messages in progress finish. Large messages themselves stream to disk and do not count.',
  defaultText: '134217728',
  default: () => 134_217_728,
  parse: integer(1_048_576, 68_719_476_736, 'bytes'),
});

/** `queue.*` keys of the spool (the queue's other keys live beside them in config/keys.ts). */
export const SPOOL_QUEUE_KEYS = {
  minFreeBytes: key({
    doc: 'Free bytes the disk of data_dir must keep (Postfix queue_minfree): below it, MAIL FROM gets 452 4.3.1 and REST sends 503 with Retry-After, before anything is received; a message that fills the disk while it is written gets the same, nothing half-stored.',
    defaultText: '67108864',
    default: () => 67_108_864,
    parse: integer(0, Number.MAX_SAFE_INTEGER, 'bytes'),
  }),
};
