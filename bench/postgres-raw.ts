/**
 * The raw PostgreSQL baselines every Postgres bench compares leasefence with: a lease table of name, holder,
 * token and expiry (a token, no secret, no history), claimed and released by one statement each, and a ledger
 * that fenced writes insert into.
 */

/** The raw lease table and the ledger. */
export const RAW_SCHEMA: readonly string[] = [
  `CREATE TABLE raw_leases (name text PRIMARY KEY, holder text, token bigint NOT NULL, expires_at timestamptz NOT NULL)`,
  `CREATE TABLE ledger (id bigserial PRIMARY KEY, key text NOT NULL, token bigint NOT NULL, entry text NOT NULL)`,
];

/**
 * The research notes' single-statement claim (testing.md §6). ATOMICITY: one statement; the row lock of
 * ON CONFLICT DO UPDATE serialises claims of one name, READ COMMITTED is enough.
 */
export const RAW_CLAIM = `INSERT INTO raw_leases AS l (name, holder, token, expires_at)
VALUES ($1, $2, 1, clock_timestamp() + make_interval(secs => $3::float8 / 1000))
ON CONFLICT (name) DO UPDATE SET holder = EXCLUDED.holder, token = l.token + 1, expires_at = EXCLUDED.expires_at
WHERE l.expires_at <= clock_timestamp() OR l.holder IS NULL
RETURNING token::text`;

/** ATOMICITY: one statement; matches only the grant it was given. */
export const RAW_RELEASE = `UPDATE raw_leases SET holder = NULL, expires_at = clock_timestamp() WHERE name = $1 AND holder = $2 AND token = $3`;

/**
 * The raw release that also wakes waiters as leasefence's release does (`pg_notify` of the key in the same
 * statement): the control for what a notification costs. NOTE: PostgreSQL serialises every transaction
 * that notified, from its pre-commit until its commit record is flushed (a lock on the database, async.c
 * PreCommit_Notify), so releases that notify cannot share a WAL flush with each other.
 */
export const RAW_RELEASE_NOTIFY = `${RAW_RELEASE} RETURNING pg_catalog.pg_notify('raw_leases:freed', name)`;

/** ATOMICITY: one statement; the CTE's FOR SHARE lock keeps a claim out until the INSERT commits. */
export const RAW_FENCED_INSERT = `WITH cur AS (
  SELECT token FROM raw_leases WHERE name = $1 AND holder = $2 AND token = $3 AND expires_at > clock_timestamp() FOR SHARE
)
INSERT INTO ledger (key, token, entry) SELECT $1, token, $4 FROM cur RETURNING id`;

/** ATOMICITY: inside the write's transaction: the FOR SHARE row lock keeps a claim out until COMMIT. */
export const RAW_FENCE_CHECK = `SELECT 1 FROM raw_leases WHERE name = $1 AND holder = $2 AND token = $3 AND expires_at > clock_timestamp() FOR SHARE`;

/** The write every fenced-write contender makes. */
export const LEDGER_INSERT = `INSERT INTO ledger (key, token, entry) VALUES ($1, $2, 'x')`;
