// Filled in by the Postgres adapter work (issue 3).
export {};
