// Owns every SMTP reply Sluice writes: the one reply record and the catalogue of replies (codes RFC 5321 §4.2,
// enhanced statuses RFC 3463). smtp-server gets them through the one conversion in mta/smtp/smtp-server-reply.ts.

/**
 * One SMTP reply, written on the wire as `<code> <status> <message>`: listeners refuse a stage with it, the inbound
 * pipeline and the submission recipe return it as their reply to DATA. 2xx accepts, 4xx/5xx refuses.
 */
export interface SmtpReply {
  readonly code: number;
  /** RFC 3463 enhanced status code (RFC 2034: every reply carries one). */
  readonly status: string;
  /** Human text. */
  readonly message: string;
}

const reply = (code: number, status: string, message: string): SmtpReply => Object.freeze({ code, status, message });

/** The catalogue: every reply Sluice writes, defined once (a function where the text names something). */
export const REPLY = Object.freeze({
  // --- Session: connect, command lines, connection end (RFC 5321 §3.8: a 421 closes the channel) ---

  /** Connection caps (mta/smtp/connection-caps.ts): sessions in all; 4.7.0 as Postfix uses for connection limits. */
  tooManyConnections: (hostname: string) => reply(421, '4.7.0', `${hostname} Error: too many connections, try again later`),
  /** Connection caps: sessions from one client address. */
  tooManyConnectionsFrom: (hostname: string, ip: string) => reply(421, '4.7.0', `${hostname} Error: too many connections from ${ip}`),
  /** smtp-server's `maxClients` check (the greeting override in mta/smtp/smtp-server-seam.ts), with a status added. */
  tooManyClients: (name: string) => reply(421, '4.7.0', `${name} Too many connected clients, try again in a moment`),
  /** A TLS ClientHello on a plaintext port: an implicit-TLS client on the STARTTLS port. */
  tlsOnPlaintextPort: (name: string) => reply(421, '4.7.0', `${name} TLS handshake on a plaintext SMTP port (use STARTTLS), closing connection`),
  /** An HTTP request line (Postfix smtpd_forbidden_commands). */
  httpRequest: (name: string) => reply(421, '4.7.0', `${name} HTTP requests not allowed, closing connection`),
  /**
   * The listener is closing (SIGTERM, `sluice serve` stopping): sent to a session between transactions at once, and
   * to one mid-transaction as soon as its reply leaves it idle, instead of holding the stop for the whole grace.
   * RFC 5321 §3.8 (a server that must shut down answers 421 and closes); RFC 3463 4.3.2 system not accepting
   * network messages. The client tries again later, as it would after smtp-server's own "421 Server shutting down".
   */
  shuttingDown: (name: string) => reply(421, '4.3.2', `${name} Service shutting down, closing connection`),
  /** Ten unrecognized or undecodable command lines: the client does not talk SMTP. */
  tooManyUnrecognized: reply(421, '4.7.0', 'Error: too many unrecognized commands'),
  /**
   * More than `smtp.junk_command_limit` NOOP, RSET, VRFY or HELP since the last message (Postfix
   * smtpd_junk_command_limit): a client keeping a session open without sending mail.
   */
  tooManyJunkCommands: reply(421, '4.7.0', 'Error: too many NOOP, RSET, VRFY or HELP commands, closing connection'),
  /** A command after `smtp.session_deadline_minutes` (Stalwart's session max-duration); 4.4.2 as Postfix's timeouts. */
  sessionDeadline: reply(421, '4.4.2', 'Error: session time limit exceeded, closing connection'),
  /** RFC 6531 §3.3: invalid UTF-8 or a NUL in a command line (Postfix: "500 5.5.2 Error: bad UTF-8 syntax"). */
  badUtf8: reply(500, '5.5.2', 'bad UTF-8 syntax'),
  /** Below the minimum DATA rate (Postfix smtpd_min_data_rate); RFC 3463 4.4.2 bad connection. Closes the session. */
  dataTooSlow: reply(421, '4.4.2', 'Data transfer too slow, closing connection'),
  /** Unknown means temporary (ARCHITECTURE invariant 3): any failure we did not decide on. */
  tempfail: reply(451, '4.3.0', 'Temporary local problem, try again later'),
  /**
   * RFC 3463 4.3.1 "mail system full" (Postfix's text for queue_minfree): the spool's disk is below
   * `queue.min_free_bytes` (at MAIL FROM) or filled up while the message was written (after DATA); nothing kept.
   */
  insufficientStorage: reply(452, '4.3.1', 'Insufficient system storage, try again later'),
  /**
   * RFC 3463 4.3.1: the message bytes this process may hold in memory (`smtp.max_buffered_bytes`) are taken by
   * messages in progress; the client retries later, nothing is kept.
   */
  tooManyMessagesInProgress: reply(452, '4.3.1', 'Too many messages in progress, try again later'),

  // --- AUTH and MAIL (submission: RFC 4954 §6, RFC 3207 §4; RFC 6531 §3.5) ---

  /** RFC 3207 §4: AUTH or MAIL on a plaintext submission session that may not AUTH there. */
  mustStartTls: reply(530, '5.7.0', 'Must issue a STARTTLS command first'),
  /** RFC 4954 §6: MAIL (or DATA) before AUTH on submission; also smtp-server's own `authRequiredMessage`. */
  authRequired: reply(530, '5.7.0', 'Authentication required'),
  /**
   * Too many failed AUTH attempts from the client's address (an IPv6 /64), or for this user name from it
   * (mta/smtp/auth-throttle.ts); smtp-server closes after a 421.
   */
  tooManyAuthFailures: reply(421, '4.7.0', 'Too many failed authentication attempts, try again later'),
  /**
   * RFC 4616 §2 (PLAIN) and the LOGIN draft: the identities and the password are UTF-8; credentials that decode to
   * anything else are refused, never compared with replacement characters. 5.5.2 syntax error, as Postfix for bad UTF-8.
   */
  authNotUtf8: reply(501, '5.5.2', 'Authentication credentials are not valid UTF-8'),
  /** RFC 4954 §6: bad credentials, or a suspended sub-account. */
  authInvalid: reply(535, '5.7.8', 'Authentication credentials invalid'),
  /**
   * RFC 4954 §6: AUTH could not be checked now (the store is out of reach: a database restart or failover). Never 535,
   * which tells the client its credentials are wrong; the client retries.
   */
  authTempfail: reply(454, '4.7.0', 'Temporary authentication failure'),
  /** RFC 6531 §3.5: a non-ASCII address in a transaction that did not declare SMTPUTF8. */
  needsSmtpUtf8: reply(553, '5.6.7', 'Must declare SMTPUTF8 to send unicode address'),
  /** Domain Lockdown of the envelope sender could not be looked up (DNS failure): temporary. */
  senderDomainUnverifiable: (domain: string) =>
    reply(451, '4.4.3', `Cannot verify that ${domain} may be used by this account now, try again later`),
  /** Domain Lockdown refuses the envelope sender's domain for this account. */
  senderDomainNotAuthorized: (domain: string) => reply(550, '5.7.1', `Sender domain ${domain} is not authorized for this account`),

  // --- RCPT ---

  /** RFC 5321 §4.5.3.1.10: past the recipient cap; the client sends the rest in another transaction. */
  tooManyRecipients: reply(452, '4.5.3', 'Too many recipients'),
  /** RFC 5321 §3.6.2 / RFC 3463 5.7.1: a recipient the MX does not serve (never a relay). */
  relayDenied: (rcpt: string) => reply(550, '5.7.1', `<${rcpt}>: Relay access denied`),
  /**
   * A return path (outbound.return_path_domain) whose token does not verify or names a delivery no longer stored:
   * RFC 3463 5.1.1 bad destination mailbox. A forged or replayed bounce is refused here and changes nothing.
   */
  unknownReturnPath: reply(550, '5.1.1', 'Unknown or expired return path'),
  /**
   * RFC 5321 §4.5.3.1.10: a return path or feedback address and another recipient in one transaction. 452 makes the
   * client send the rest in another transaction, where each kind gets its own handling.
   */
  feedbackApart: reply(452, '4.5.3', 'Reports to the return path take a transaction of their own; send the other recipients separately'),
  /** RFC 3463 5.1.3: a submission recipient that is not a usable address. */
  badDestination: (rcpt: string) => reply(553, '5.1.3', `<${rcpt}>: Bad destination mailbox address syntax`),
  /** The recipient's lists blocklist the client or sender (at RCPT, or at DATA when every recipient does). */
  senderBlocklisted: reply(550, '5.7.1', 'Message refused: the sender is blocklisted by the recipient'),
  /**
   * The client's DNS blocklist weight reached `filters.dnsbl.threshold` (Postfix postscreen answers 550 5.7.1; the
   * issue and most MX operators use 554 5.7.1, "service unavailable" for this client). Names the lists, never more.
   */
  dnsblListed: (ip: string, zones: readonly string[]) => reply(554, '5.7.1', `Service unavailable; client [${ip}] blocked using ${zones.join(', ')}`),
  /**
   * Greylisting (inbound.greylist): a first attempt of an unknown (client network, sender, recipient) triplet.
   * RFC 6647 §2.1: a 4xx that a real MTA retries; 4.7.1 as Postfix postgrey and rspamd answer.
   */
  greylisted: (retryAfterS: number) => reply(450, '4.7.1', `Greylisted: this is a first attempt, please try again in ${retryAfterS} seconds`),

  // --- DATA ---

  /** RFC 1870 §6.4 / RFC 3463 §3.4: over the size limit. */
  messageTooBig: (maxBytes: number) => reply(552, '5.3.4', `Message size exceeds fixed maximum message size ${maxBytes}`),
  /** A header section over `smtp.max_header_bytes` (Postfix header_size_limit). */
  headerTooBig: (maxHeaderBytes: number) => reply(552, '5.3.4', `Message header section exceeds fixed maximum size ${maxHeaderBytes}`),
  /** MIME nested deeper than `smtp.max_mime_depth` (Postfix mime_nesting_limit); RFC 3463 5.6.0 media error. */
  mimeTooDeep: (maxMimeDepth: number) => reply(554, '5.6.0', `Message MIME structure nested deeper than ${maxMimeDepth} levels`),
  /** RFC 5321 §2.3.8: CR and LF only together; Postfix's smtpd_forbid_bare_newline also answers 550. */
  bareCrLf: reply(550, '5.6.0', 'Message refused: bare CR or LF in message data (RFC 5321 section 2.3.8)'),
  /** RFC 5321 §6.3: too many Received fields, a mail loop; 5.4.6 routing loop detected. */
  tooManyHops: (hops: number) => reply(554, '5.4.6', `Too many hops (${hops} Received header fields): mail forwarding loop`),
  /** The MX has nothing to hand the message to: temporary, the sender keeps it (never a silent 250). */
  inboundUnavailable: reply(451, '4.3.2', 'Inbound delivery is not available yet, try again later'),
  /** The submission listener has no recipe wired: temporary, nothing accepted. */
  submissionUnavailable: reply(451, '4.3.2', 'Submission is not available, try again later'),
  /** Durably committed (ARCHITECTURE invariant 1): the id is the queue id (MX) or request id (submission). */
  queued: (id: string) => reply(250, '2.0.0', `Ok: queued as ${id}`),
  /** A report to the return path or the feedback address, applied durably (mta/queue/feedback.ts). */
  reportTaken: reply(250, '2.0.0', 'Ok: report received'),
  /** The inbound pipeline: a recipient domain's abuse policy blocks the message as spam. */
  spam: reply(550, '5.7.1', 'Message refused as spam'),
  /** The inbound pipeline: no recipient domain is served any more (deleted between RCPT and DATA). */
  noRecipientServed: reply(550, '5.7.1', 'Relay access denied'),
  /** `filters.rspamd.failure = tempfail` and rspamd did not answer. */
  scannerDown: reply(451, '4.7.1', 'Spam scanner unavailable, try again later'),
  /** The inbound virus scan (clamd) found malware and the domain's policy refuses it (no bounce: no backscatter). */
  virus: (signature: string) => reply(554, '5.7.1', `Message refused: virus found (${signature})`),
  /** The inbound virus scanner did not answer and `filters.rspamd.failure = tempfail` applies to it as well. */
  virusScannerDown: reply(451, '4.7.1', 'Virus scanner unavailable, try again later'),
  /** rspamd answered `soft reject` (e.g. its rate limits): the sender retries later, as rspamd's proxy answers. */
  softReject: reply(451, '4.7.1', 'Try again later'),
  /** Submission: the account was suspended or deleted since it authenticated. */
  accountSuspended: reply(550, '5.7.1', 'this account is suspended and cannot send'),
  /** Submission: the account's monthly send limit is used up. */
  sendLimitReached: reply(550, '5.7.1', 'monthly send limit reached for this account'),
  /** Submission: RFC 5322 §3.6 requires a From field with an address. */
  noFromAddress: reply(550, '5.6.0', 'message has no From address (RFC 5322 section 3.6)'),
  /**
   * Submission: RFC 3463 X.1.7 bad sender's mailbox address syntax — an originator field (From, Sender, Resent-From,
   * Resent-Sender; RFC 5322 §3.6.2, §3.6.6) that is not RFC 5322 address syntax, e.g. `a@b.test@alpha.test`.
   */
  originatorSyntax: (field: string) => reply(550, '5.1.7', `${field} field is not RFC 5322 address syntax`),
  /**
   * Submission: Domain Lockdown of an originator field's domain could not be looked up (DNS failure): temporary,
   * RFC 3463 X.4.3 directory server failure.
   */
  originatorUnverifiable: (field: string, domain: string) =>
    reply(451, '4.4.3', `cannot verify that ${field} domain ${domain} may be used by this account now, try again later`),
  /** Submission: Domain Lockdown refuses an originator field's domain (From, Sender, Resent-*) for this account. */
  originatorNotAuthorized: (field: string, domain: string) => reply(550, '5.7.1', `${field} domain ${domain} is not authorized for this account`),
  /**
   * Submission: abuse control refused the message — CONFIRMED spam or virus, or a blocked sender identity — with
   * the refusal's own text (mta/outbound/screening.ts, the same as REST's 403); nothing queued.
   */
  outboundRefused: (reason: string) => reply(550, '5.7.1', reason),
  /** Submission: a content scanner (rspamd, clamd) is down and `filters.on_scanner_error = tempfail`; nothing queued. */
  contentScannerDown: reply(451, '4.7.1', 'Content scanner unavailable, try again later'),
  /** Submission: the queue commit failed, nothing was accepted (ARCHITECTURE invariant 1). */
  notQueued: reply(451, '4.3.0', 'could not queue the message; nothing was accepted, try again'),
});
