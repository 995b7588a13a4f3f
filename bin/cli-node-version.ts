// Owns the Node.js version check of the `sluice` binary: package.json's engines field as a number, and the one line a
// node too old for it gets. Loaded before anything else, so its syntax stays what any old node parses (no `??`, no `?.`).

/** package.json's engines.node (">=24"): Node 24 is the oldest this code runs on (its dependencies' undici, among others). */
export const MIN_NODE_MAJOR = 24;

/** The one line for a node older than MIN_NODE_MAJOR (`version`: process.version), or undefined when it is new enough. */
export function nodeTooOld(version: string, execPath: string): string | undefined {
  const m = /^v?(\d+)/.exec(version);
  const major = m ? Number(m[1]) : 0;
  if (major >= MIN_NODE_MAJOR) return undefined;
  return 'sluice: Node.js ' + MIN_NODE_MAJOR + ' or newer is needed (package.json engines), this is ' + version + ' (' + execPath + '); ' +
    'put a newer node first on PATH (README: Quick start)\n';
}
