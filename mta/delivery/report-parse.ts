// Owns reading a report that came back to Sluice: an RFC 3464 DSN, an RFC 5965 (ARF) feedback report, a non-standard
// bounce, or none of these.
import { splitMessage } from '../../filters/message-headers.js';
import { mimeLeaves, type MimeLeaf } from '../../filters/mime-parts.js';
import { looksLikeBounce, readTextBounce, type TextBounce } from './bounce-patterns.js';

/** One per-recipient block of a DSN's message/delivery-status part (RFC 3464 §2.3). */
export interface DsnRecipientFields {
  finalRecipient: string | null;
  originalRecipient: string | null;
  /** failed, delayed, delivered, relayed or expanded (lower case). */
  action: string;
  status: string | null;
  diagnostic: string | null;
  remoteMta: string | null;
}

export type Report =
  | { kind: 'dsn'; reportingMta: string | null; recipients: DsnRecipientFields[] }
  | { kind: 'arf'; feedbackType: string; originalRcptTo: string | null; userAgent: string | null }
  | ({ kind: 'text-bounce' } & TextBounce)
  | { kind: 'none' };

/** A report read from a message's first bytes, with the text of its parts (where a return path token may be found). */
export interface ReadReport {
  report: Report;
  /** The message's bytes as read, and its decoded text parts: an original's Return-Path may be in either. */
  texts: string[];
}

/**
 * RFC 3464 §2.1 / RFC 5965 §3.1 fields: groups of `Name: value` lines (continuations unfolded), groups apart at empty
 * lines; names lower-cased. The per-message group comes first, then one per recipient (DSN).
 */
export function fieldGroups(text: string): Map<string, string>[] {
  const groups: Map<string, string>[] = [];
  let current = new Map<string, string>();
  let last: string | undefined;
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') {
      if (current.size > 0) groups.push(current);
      current = new Map();
      last = undefined;
    } else if (/^[ \t]/.test(line) && last !== undefined) {
      current.set(last, `${current.get(last)} ${line.trim()}`);
    } else {
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      last = line.slice(0, colon).trim().toLowerCase();
      // A repeated field keeps its first value (RFC 3464 allows each once per group).
      if (!current.has(last)) current.set(last, line.slice(colon + 1).trim());
    }
  }
  if (current.size > 0) groups.push(current);
  return groups;
}

/** The address of an `rfc822; local@domain` (address-type; address) field, or the value itself. */
function typedValue(v: string | undefined): string | null {
  if (v === undefined) return null;
  const semi = v.indexOf(';');
  const out = (semi >= 0 ? v.slice(semi + 1) : v).trim().replace(/^<|>$/g, '');
  return out === '' ? null : out;
}

function statusOf(v: string | undefined): string | null {
  const m = /^([245]\.\d{1,3}\.\d{1,3})\b/.exec((v ?? '').trim());
  return m ? m[1]! : null;
}

function dsnOf(leaf: MimeLeaf): Report {
  const [perMessage, ...perRecipient] = fieldGroups(leaf.body.toString('utf8'));
  return {
    kind: 'dsn',
    reportingMta: typedValue(perMessage?.get('reporting-mta')),
    recipients: perRecipient
      .filter((g) => g.has('action'))
      .map((g) => ({
        finalRecipient: typedValue(g.get('final-recipient')),
        originalRecipient: typedValue(g.get('original-recipient')),
        action: (g.get('action') ?? '').toLowerCase().split(/\s/)[0] ?? '',
        status: statusOf(g.get('status')),
        diagnostic: typedValue(g.get('diagnostic-code')),
        remoteMta: typedValue(g.get('remote-mta')),
      })),
  };
}

function arfOf(leaf: MimeLeaf): Report {
  const fields = fieldGroups(leaf.body.toString('utf8'))[0] ?? new Map<string, string>();
  return {
    kind: 'arf',
    feedbackType: (fields.get('feedback-type') ?? '').toLowerCase(),
    originalRcptTo: typedValue(fields.get('original-rcpt-to')),
    userAgent: fields.get('user-agent') ?? null,
  };
}

/**
 * Reads `sample` (a message's first bytes: a report's machine-readable part comes before any copy of the original,
 * RFC 6522 §3). A multipart/report of report-type delivery-status is a DSN, of feedback-report an ARF report; a
 * message from a mail system that says so in words is a text bounce; anything else is none.
 */
export function readReport(sample: Buffer): ReadReport {
  const top = splitMessage(sample);
  const leaves = mimeLeaves(sample, { maxParts: 20, maxDepth: 4 }, top);
  const texts = [sample.toString('latin1'), ...leaves.filter((l) => l.contentType.startsWith('text/') || l.contentType.startsWith('message/')).map((l) => l.body.toString('utf8'))];
  const status = leaves.find((l) => l.contentType === 'message/delivery-status' || l.contentType === 'message/global-delivery-status');
  if (status) return { report: dsnOf(status), texts };
  const feedback = leaves.find((l) => l.contentType === 'message/feedback-report');
  if (feedback) return { report: arfOf(feedback), texts };
  if (looksLikeBounce(top.headers)) {
    // The words of the first text part (the explanation); a copy of the original after it is not read for them.
    const first = leaves.find((l) => l.contentType === 'text/plain') ?? leaves.find((l) => l.contentType.startsWith('text/'));
    const bounce = first ? readTextBounce(first.body.toString('utf8').slice(0, 16 * 1024)) : undefined;
    if (bounce) return { report: { kind: 'text-bounce', ...bounce }, texts };
  }
  return { report: { kind: 'none' }, texts };
}
