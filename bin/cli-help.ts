// Owns the CLI's help: the text of `sluice help` (the README embeds it) and each command's own `--help`.
import { VERSION } from './version.js';

export const HELP = `sluice ${VERSION} — self-hosted mail service (inbound filtering MTA, outbound delivery, MailChannels-compatible API)

Usage: sluice <command> [options]

Commands:
  serve [--only ROLES]                    start every listener (HTTP API, MX, submission) and the worker;
                                          --only api,mx,submission,worker runs just those roles (several
                                          processes may share one data_dir, e.g. an api and a worker);
                                          server.processes children (default 1; e.g. one per core) share the ports
  reload                                  make every running sluice serve of this data_dir re-read its
                                          configuration (SIGHUP); live keys apply at once, sessions stay open
  config check                            validate the configuration and reach its store (0 = valid)
  config print [--json]                   print the effective configuration, secrets redacted
  config reference                        print the table of every configuration key
  accounts create [--handle H] [--company NAME] [--json]
                                          create a parent account and its first API key (scope api)
  accounts list [--json]                  list parent accounts
  accounts scan-policy --account H [--policy enforce|monitor|off|default] [--json]
                                          show or set the account's outbound scanning policy (default:
                                          its parent's, else filters.outbound_policy)
  accounts set-pool --account H --pool NAME|none [--json]
                                          send the account's mail from a pool of outbound.pools (none:
                                          its parent's, else the default address)
  keys create --account H --scope api|inbound [--json]
                                          create an API key (shown once)
  keys list --account H [--json]          list an account's live API keys (redacted)
  keys revoke --account H --id N          revoke an API key
  smtp-passwords create --account H [--json]
                                          create an SMTP submission password (shown once)
  smtp-passwords list --account H [--json]
  smtp-passwords delete --account H --id N
  lockdown allow --account H --domain D  authorize a From domain for an account without a DNS record
  lockdown deny --account H --domain D   remove that authorization
  lockdown list --account H [--json]     domains the operator authorized for an account
  suppressions import FILE --account H [--json]
                                          add a CSV file's entries to the account's suppression list (header
                                          row; columns recipient, suppression_types, source, notes, sender,
                                          created_at); all or none, already listed ones skipped, at most
                                          accounts.max_suppressions
  suppressions export --account H [--out FILE]
                                          the account's suppression list as CSV (to stdout, or FILE)
  inbound-domains provision --account H --domain D [--subscription S] [--json]
                                          provision an inbound domain for an account, also when it is a
                                          parent or a subdomain of another account's (the API refuses those)
  inbound-domains digest --account H --domain D [--interval hourly|daily|weekly|off] [--admins yes|no] [--json]
                                          show or set a domain's quarantine digests: how often each recipient
                                          gets one, and whether its admins get the whole domain's
  inbound-recipients list --account H [--domain D] [--json] [--limit N]
                                          recipients created with PUT /inbound/v1/users, by address: admin or
                                          user, filtered or not (unfiltered: the domain's policy skips their mail)
  inbound-recipients remove --account H --email E
                                          remove a recipient with its own list entries and admin role
  queue list [--json] [--limit N]         list undelivered deliveries (queued, sending, held) with sizes,
                                          ages and a summary line, like postqueue -p
  queue show ID [--json]                  one delivery with its message and every attempt
  queue retry ID | --all                  make a queued delivery (or every one) due now; a running
                                          server attempts it within a second
  queue delete ID                         drop a queued or held delivery (it will not be sent)
  quarantine list [--account H] [--domain D] [--json] [--limit N]
                                          list quarantined inbound messages, newest first
  quarantine release ID                   relay a quarantined message to its recipients (once)
  quarantine delete ID [--as-spam]        delete a quarantined message (it will not be relayed);
                                          --as-spam: the classifier learns it as spam (release: as ham)
  log [--inbound] [--account H] [--domain D] [--sender S] [--rcpt R] [--subject TEXT] [--client IP]
      [--message-id ID] [--verdict V] [--start T] [--end T] [--json] [--limit N]
                                          search the SMTP log of --account H and its sub-accounts, or with
                                          --inbound the inbound log (every account, or one): each inbound
                                          message x recipient relayed, flagged, quarantined, refused or deferred
                                          (V), with its reason (T: YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ; default the
                                          last 3 days)
  filter train --spam PATH --ham PATH [--account H] [--json]
                                          teach the inbound classifier (PATH: an mbox file, an .eml file
                                          or a directory of them, e.g. a maildir; repeatable); without
                                          --account the global model, else that account's own
  filter stats [--account H] [--json]     messages and tokens the model learned; whether it scores mail
                                          (not when learned with another tokeniser: train it again)
  filter reset [--account H]              forget everything that model learned
  arc record [--json]                     the DNS TXT record to publish for the ARC sealing key
                                          (inbound.arc.*; the key is generated into the store if needed)
  console token [--label TEXT] [--json]   create an operator token for the web console (/console; shown once)
  console tokens [--json]                 list live operator tokens
  console revoke ID                       revoke an operator token and end its console sessions
  console totp enroll|disable operator|--account H [--json]
                                          the second factor of console sign-in (TOTP, RFC 6238): enroll
                                          prints an otpauth:// URI and its secret once; sign-in with an
                                          operator token (operator) or the account's keys then also needs
                                          the authenticator's current code; disable removes it
  audit [--account H] [--start T] [--end T] [--json] [--limit N]
                                          changes made through the API, the console and the CLI, newest
                                          first: when, via, who, account, action, target, address, status
                                          (--account: its sub-accounts too; T as for log)
  senders list [--account H] [--all] [--json] [--limit N]
                                          blocked sender identities (--all: lifted blocks too)
  senders unblock --account H --sender SENDER_ID
                                          lift a block (account|x-authuser|user), whatever the API's
                                          delisting limit (abuse.delist_per_day)
  monitors list --account H [--json]      the account's alert monitors
  monitors create --account H --condition C --interval HOURS (--webhook URL | --email ADDRESS) [--json]
                                          watch C (sender_id_sending_spam, sender_id_sending_virus,
                                          sender_id_blocked, sender_id_sending_to_invalid_recipients,
                                          sender_id_rejected_by_destination,
                                          sender_id_receiving_complaints); at most one alert per
                                          sender identity per 1-24 h; a signed POST or an email
  monitors delete --account H --id N      delete a monitor (its alerts stay counted)
  monitors alerts --account H [--id N] [--json] [--limit N]
                                          alerts fired, newest first, with their delivery state
  signing-key rotate [--json]             new current Ed25519 key for webhook signatures (old keys stay published)
  tracking-domains list [--account H] [--json]
                                          custom tracking domains (all accounts, or one)
  tracking-domains verify --account H --hostname NAME [--json]
                                          check the DNS records of a custom tracking domain (TXT
                                          _sluice-verify.NAME, and NAME pointing at http.public_url's host);
                                          exit 1 when not verified; changes nothing
  metrics engagement|performance|recipient-behaviour|volume --account H [--start T] [--end T]
          [--interval hour|day|week|month] [--campaign C] [--json]
                                          figures as a table, one row per bucket and a total (T: YYYY-MM-DD
                                          or YYYY-MM-DDTHH:MM:SSZ; default one calendar month to now)
  metrics senders campaigns|sub-accounts --account H [--start T] [--end T] [--limit N] [--json]
                                          senders ranked by processed + dropped
  backup PATH                             write a complete backup of data_dir to the new directory PATH
                                          (database, TLS and ACME state; mode 0700/0600; the server may run)
  restore PATH                            verify the backup PATH, then restore it into an empty data_dir
                                          (refused while a sluice serve runs on data_dir)
  store copy --to postgres://USER@HOST:PORT/DB
                                          copy the stopped SQLite data_dir (every table and body) into an
                                          empty PostgreSQL database, verify it, print what it copied
  help                                    this text
  version                                 print the version

Global options:
  --config PATH    TOML configuration file (default: ./sluice.toml when present)
  --data-dir DIR   data_dir for this command, over the file's and SLUICE_DATA_DIR's
  -h, --help       this text; after a command (sluice queue retry --help), that command's own
  -V, --version    print the version

Each command takes the options shown with it, and the global ones; any other is refused. Only serve, restore and
accounts create make a new data_dir: the other commands refuse one that holds no Sluice data (exit 2).

Every configuration key can also be set by an environment variable SLUICE_<KEY> (dots become underscores,
e.g. SLUICE_HTTP_LISTEN=127.0.0.1:0); see 'sluice config reference'.
`;

/** More than the one line of HELP, for the commands whose behaviour needs saying. */
const DETAILS: Record<string, string> = {
  reload:
    'Sends SIGHUP to each sluice serve registered in data_dir/run/ (systemctl reload does the same through the\n' +
    'unit\'s ExecReload). The server reads its configuration file again and applies what can change live: log.level,\n' +
    'smtp.tls.cert/key and http.tls.cert/key (and re-reads the certificate files), http.tls.hsts_max_age,\n' +
    'outbound.transport_map, the smarthost keys, outbound.mx_port, outbound.lockdown and the message, header, MIME\n' +
    'and connection limits. It logs one line with what changed, what it applied and what needs a restart. A file\n' +
    'that does not load is refused whole.',
  'queue list':
    'Columns: ID (the delivery id the other queue commands take), STATE (queued, sending or held), SIZE (of the\n' +
    'message: 812, 1.2K, 3.4M), AGE (since it was accepted), TRIES (attempts so far), NEXT (when it is tried next),\n' +
    'SENDER -> RECIPIENT. Under each: its queue id (the id of "250 ... queued as" and of the log lines) and the last\n' +
    'reply. The last line sums up every waiting delivery, whatever --limit (default 100) shows.\n' +
    '--json prints one JSON array instead.',
  'queue show':
    'Prints the envelope, the message (queue id, Message-ID, subject, size, arrival, expiry), the last reply and one\n' +
    'line per attempt: time, outcome, code, relay host, SMTP command and reply. --json prints the rows as JSON.',
  'queue retry':
    'Sets the next attempt to now. A running server notices the change within a second (it watches the database\n' +
    'for commits of other processes) and attempts the deliveries at once; nothing waits for the retry timer.',
  backup:
    'PATH becomes a directory (0700, every file in it 0600): sluice.db (SQLite\'s online backup: one consistent\n' +
    'snapshot while the server writes), every other file of data_dir (tls/, acme/, initial-api-key) and\n' +
    'manifest.json with the size, SHA-256 and original mode of each. PATH must not exist; an interrupted backup\n' +
    'leaves no PATH. Copy it off the machine as it is (tar, rsync, borg). With storage.backend = postgres it refuses\n' +
    'and prints the pg_dump command that backs the database up (PATH becomes pg_dump\'s directory format) and the\n' +
    'pg_restore command that restores it into a new, empty database (exit 1).',
  'store copy':
    'Moves a single-machine install to PostgreSQL: stop every sluice serve on data_dir (refused otherwise, exit 1),\n' +
    'create an empty database (createdb; the copy makes the schema, and refuses a database that holds data), run\n' +
    'this, then start the nodes with storage.backend = postgres. One transaction: every table of the data_dir\n' +
    '(booleans, JSON, integers and blobs converted to PostgreSQL\'s types) and every body (spooled files streamed\n' +
    'into chunk rows); identity sequences are moved past the copied ids; before it commits, it reads everything back\n' +
    'and compares each table\'s row count and digest and each body\'s SHA-256. A failure commits nothing (exit 1).\n' +
    'Prints one line per table (rows, bytes), what is not copied and why (SQLite\'s own caches and search index,\n' +
    'the stopped processes\' job leads), then "verified". The password may come from PGPASSWORD. A bad URL: exit 2.',
  restore:
    'Checks first, writes after: the manifest, every file\'s size and SHA-256, and SQLite\'s integrity_check of\n' +
    'the database; any failure restores nothing (exit 1). data_dir must be new or empty and no sluice serve may run\n' +
    'on it. Every file is written 0600 (directories 0700). Then start sluice serve. With storage.backend = postgres\n' +
    'it refuses (exit 1): restore the database with pg_restore (sluice backup prints the command).',
  log:
    'One line per row, newest first (--limit, default 100). Inbound: time, verdict, reason, <sender> -> <recipient>,\n' +
    '[client], queue id ("-" when refused at RCPT, before any message existed), subject, the reply the client got,\n' +
    'then what became of it: the downstream\'s latest reply, or the quarantine entry. Outbound: time, delivered or\n' +
    'not, reply code, <sender> -> <recipient>, Message-ID, subject, the latest reply. --json prints the rows.',
  'queue delete':
    'Marks the delivery dropped; it is never sent. A delivery being sent right now cannot be deleted.',
  'filter train':
    'Reads each PATH: a directory whole (every file below it, hidden ones skipped), a file starting with "From " as\n' +
    'an mbox, any other file as one message (.eml, a maildir entry). A message is learned once; learned again as the\n' +
    'other class, it moves. A running server judges its next message with the new counts (every process reads the\n' +
    'same database). Until the models hold filters.bayes.min_learned spam and as many ham (200), the classifier\n' +
    'abstains: train it on a few hundred of your own junk and a few hundred of your own wanted mail.',
};

/** The HELP entries under "Commands:", each its usage and its description (continuation lines joined). */
export function entries(): { usage: string; text: string }[] {
  const lines = HELP.slice(HELP.indexOf('Commands:\n') + 'Commands:\n'.length, HELP.indexOf('\n\nGlobal options:')).split('\n');
  const out: { usage: string; text: string }[] = [];
  for (const line of lines) {
    const m = /^ {2}(\S.*?)(?:\s{2,}(.*))?$/.exec(line);
    if (m) out.push({ usage: (m[1] as string).trim(), text: m[2] ?? '' });
    else if (out.length > 0) out[out.length - 1]!.text += (out[out.length - 1]!.text ? ' ' : '') + line.trim();
  }
  return out;
}

/**
 * The help of one command (`queue retry`) or of a command group (`queue`): usage, description and details; undefined
 * when no command matches (the caller prints HELP).
 */
export function commandHelp(words: string[]): string | undefined {
  if (words.length === 0) return undefined;
  const prefix = words.join(' ');
  const found = entries().filter((e) => e.usage === prefix || e.usage.startsWith(prefix + ' '));
  if (found.length === 0) return words.length > 1 ? commandHelp(words.slice(0, 1)) : undefined;
  const parts = found.map((e) => {
    // The command words, before its arguments (`queue retry`, `backup`).
    const words = e.usage.split(' ');
    const name = words.slice(0, Math.max(1, words.findIndex((w) => !/^[a-z-]+$/.test(w)))).slice(0, 2).join(' ');
    const details = found.length === 1 && DETAILS[name] ? `\n${DETAILS[name]}\n` : '';
    return `Usage: sluice ${e.usage}\n  ${e.text}\n${details}`;
  });
  return parts.join('\n') + '\nGlobal options: --config PATH, --data-dir DIR, -h/--help, -V/--version. All commands: sluice help\n';
}
