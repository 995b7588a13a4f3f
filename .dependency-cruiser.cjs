// Owns the import rules CI enforces: no cycles, and the floors of ARCHITECTURE.md (nothing imports upward).
/* Floors, lowest first: config → storage → filters → mta rooms → control-api → bin. Inside mta/ the rooms have
   floors of their own: smtp, delivery, webhooks (protocol and I/O edges) → queue (durable state) → inbound,
   outbound (the recipes) → jobs (periodic work). */
const upward = (name, from, to, comment) => ({ name, severity: 'error', comment, from: { path: from }, to: { path: to } });

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Files must not import each other in a loop (ARCHITECTURE: no import cycles).',
      from: {},
      to: { circular: true },
    },
    upward('config-imports-nothing-of-ours', '^config/', '^(storage|filters|mta|control-api|bin)/', 'config/ imports nothing of ours.'),
    upward('storage-only-config', '^storage/', '^(filters|mta|control-api|bin)/', 'storage/ may import config/ only.'),
    upward('filters-below-mta', '^filters/', '^(mta|control-api|bin)/', 'filters/ take repositories as parameters; they never reach up.'),
    upward('mta-below-control-api', '^mta/', '^(control-api|bin)/', 'mta/ must not import the control plane or the composition root.'),
    upward('control-api-below-bin', '^control-api/', '^bin/', 'Only bin/ wires everything.'),
    upward('mta-edges-stay-low', '^mta/(smtp|delivery|webhooks)/', '^mta/(queue|inbound|outbound|jobs)/', 'SMTP, delivery and webhooks are the floor under the queue and the recipes.'),
    upward('queue-below-recipes', '^mta/queue/', '^mta/(inbound|outbound|jobs)/', 'The queue knows nothing of the recipes that feed it.'),
    upward('inbound-not-outbound', '^mta/inbound/', '^mta/(outbound|jobs)/', 'The inbound and outbound rooms do not import each other.'),
    upward('outbound-not-inbound', '^mta/outbound/', '^mta/(inbound|jobs)/', 'The inbound and outbound rooms do not import each other.'),
    upward('sources-never-import-tests', '^(config|storage|filters|mta|control-api|bin|bench)/', '^test/', 'Production code never imports test helpers.'),
    {
      name: 'sqlite-only-in-storage-sqlite',
      severity: 'error',
      comment: 'Only the SQLite implementation (storage/sqlite/) imports better-sqlite3 (ARCHITECTURE: storage seam).',
      from: { path: '^(config|storage|filters|mta|control-api|bin|bench|test)/', pathNot: '^storage/sqlite/' },
      to: { path: 'node_modules/better-sqlite3/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'pg-only-in-storage-postgres',
      severity: 'error',
      comment: 'Only the PostgreSQL implementation (storage/postgres/) imports pg (ARCHITECTURE: storage seam).',
      from: { path: '^(config|storage|filters|mta|control-api|bin|bench|test)/', pathNot: '^storage/postgres/' },
      to: { path: 'node_modules/pg/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'backends-only-through-open',
      severity: 'error',
      comment:
        'Nothing above storage/ reaches a backend: the rest of Sluice sees the ports (storage/ports/) and opens its one ' +
        'Store through storage/open.ts. Benchmarks and tests may look underneath (they measure and arrange SQLite).',
      from: { path: '^(config|filters|mta|control-api|bin)/' },
      to: { path: '^storage/(sqlite|postgres)/' },
    },
    {
      name: 'ports-know-no-backend',
      severity: 'error',
      comment: 'The ports are interfaces and plain records: no backend, no driver, not the opener.',
      from: { path: '^storage/ports/' },
      to: { path: '^storage/(sqlite/|postgres/|open\\.ts)|node_modules/(better-sqlite3|pg)/' },
    },
    {
      name: 'backends-below-open',
      severity: 'error',
      comment: 'A backend implements the ports; only storage/open.ts chooses one.',
      from: { path: '^storage/(sqlite|postgres)/' },
      to: { path: '^storage/open\\.ts' },
    },
    {
      name: 'storage-seam-through-open',
      severity: 'error',
      comment: 'storage/open.ts is for bin/ (the composition root and the CLI) only: every other part receives ports.',
      from: { path: '^(filters|mta|control-api)/' },
      to: { path: '^storage/open\\.ts' },
    },
    {
      name: 'koa-only-in-control-api',
      severity: 'error',
      comment: 'Nothing outside control-api/ imports Koa (ARCHITECTURE).',
      from: { path: '^(config|storage|filters|mta|bin)/' },
      to: { path: 'node_modules/(koa|@koa/router)/' },
    },
    {
      name: 'no-sockets-in-filters',
      severity: 'error',
      comment: 'No file in filters/ opens a socket (ARCHITECTURE): network clients live in mta/.',
      from: { path: '^filters/' },
      to: { path: '^(tls|http|https|dgram|dns)$|node_modules/(nodemailer|smtp-server)/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'no-barrels',
      severity: 'error',
      comment: 'No barrel index.ts files (ARCHITECTURE).',
      from: {},
      to: { path: '(^|/)index\\.ts$', pathNot: 'node_modules' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(dist|node_modules|\\.tap)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'], extensions: ['.ts', '.js', '.d.ts'] },
    moduleSystems: ['es6', 'cjs'],
  },
};
