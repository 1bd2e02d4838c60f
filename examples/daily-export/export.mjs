// What the main program and the workers agree on: the export's lease key, its tables, its size.

/** The lease that guards the day's export: one holder at a time writes its batches. */
export const EXPORT_KEY = 'export:daily';
/** The example's own lease table (created by `store.migrate()`), so it can start from nothing each run. */
export const LEASE_TABLE = 'daily_export_leases';
/** Where the batches land; no unique key on `batch`, so a batch written twice would show as two rows. */
export const ROWS_TABLE = 'daily_export_rows';
/** Batches in the day's export. */
export const BATCHES = 6;
/** A short lease, so the takeover after a crash takes seconds (a real export would use 30 s or more). */
export const TTL_MS = 3_000;
