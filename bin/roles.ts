// Owns the roles a `sluice serve` process can run (--only), apart from the server so the CLI and a primary need not load it.

/** What a serving process can run: the REST API, the MX, SMTP submission, the delivery worker. */
export const ROLES = ['api', 'mx', 'submission', 'worker'] as const;
export type Role = (typeof ROLES)[number];

/** Parses `--only api,worker`: known roles, each once, at least one. Throws a message naming the bad one. */
export function parseRoles(text: string): Role[] {
  const out: Role[] = [];
  for (const part of text.split(',').map((s) => s.trim())) {
    if (!(ROLES as readonly string[]).includes(part)) throw new Error(`unknown role "${part}" (roles: ${ROLES.join(', ')})`);
    if (!out.includes(part as Role)) out.push(part as Role);
  }
  return out;
}
