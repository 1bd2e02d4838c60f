/**
 * One candidate process of test/election/processes.test.ts (run with `node --import tsx`): campaigns for one
 * key on a real Redis or PostgreSQL store with a notification connection, and while it leads, appends its
 * term's token to a ledger through `fencedWrite` every few ms. Tells the parent over IPC when it is elected
 * (the term's token, its start and the previous term's end on the store's clock) and when a write is
 * refused. SIGTERM ends the campaign (the term is released: a graceful handover) and the process.
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { createPostgresStore } from '../../src/adapters/postgres/index.js';
import { createRedisStore } from '../../src/adapters/redis/index.js';
import { createElection } from '../../src/election.js';
import type { Lease } from '../../src/lease.js';
import { createLeases } from '../../src/leases.js';
import type { Leases } from '../../src/leases-types.js';
import { pgListenerFactory } from '../support/pg-listener.js';

/** What the parent passes (JSON in argv[2]). */
export interface CandidateSetup {
  readonly name: string;
  readonly store: 'redis' | 'postgres';
  readonly url: string;
  /** Redis key prefix, or Postgres lease table. */
  readonly namespace: string;
  /** Redis list, or Postgres table, of accepted writes. */
  readonly ledger: string;
  readonly key: string;
  readonly ttlMs: number;
  readonly writeEveryMs: number;
}

/** The messages a candidate sends its parent. */
export type CandidateMessage =
  | { readonly type: 'ready'; readonly name: string }
  | {
      readonly type: 'elected';
      readonly name: string;
      readonly token: string;
      readonly since: number | null;
      readonly previous: { readonly kind: string; readonly token: string; readonly at: number } | null;
    }
  | { readonly type: 'refused'; readonly name: string; readonly token: string; readonly reason: string }
  | { readonly type: 'demoted'; readonly name: string; readonly token: string; readonly reason: string };

const setup = JSON.parse(process.argv[2] ?? '{}') as CandidateSetup;
const send = (message: CandidateMessage): void => void process.send?.(message);
const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

const closers: Array<() => Promise<void>> = [];
/** The candidate's leases, and its fenced append of `token:name` to the ledger. */
let leases: Leases;
let append: (lease: Lease) => Promise<{ ok: true } | { ok: false; reason: string }>;
if (setup.store === 'redis') {
  const client = new Redis(setup.url, { maxRetriesPerRequest: null });
  const subscriber = client.duplicate();
  for (const connection of [client, subscriber]) connection.on('error', () => undefined);
  closers.push(async () => {
    client.disconnect();
    subscriber.disconnect();
  });
  const redis = createLeases(createRedisStore({ client, subscriber, prefix: setup.namespace }), { holder: setup.name, ttlMs: setup.ttlMs });
  leases = redis;
  append = async (lease) => {
    const outcome = await redis.fencedWrite(lease, (tx) => tx.call('RPUSH', setup.ledger, `${lease.token}:${setup.name}`));
    return outcome.ok ? { ok: true } : { ok: false, reason: outcome.reason };
  };
} else {
  const pool = new pg.Pool({ connectionString: setup.url, max: 3 });
  pool.on('error', () => undefined);
  const { listener, close: closeListeners } = pgListenerFactory(setup.url);
  closers.push(async () => {
    await closeListeners();
    await pool.end();
  });
  const postgres = createLeases(createPostgresStore({ client: pool, table: setup.namespace, listener }), {
    holder: setup.name,
    ttlMs: setup.ttlMs,
  });
  leases = postgres;
  append = async (lease) => {
    const outcome = await postgres.fencedWrite(lease, (tx) =>
      tx.query(`INSERT INTO ${setup.ledger} (token, holder) VALUES ($1, $2)`, [lease.token.toString(), setup.name]),
    );
    return outcome.ok ? { ok: true } : { ok: false, reason: outcome.reason };
  };
}

const election = createElection(leases, setup.key, { ttlMs: setup.ttlMs });
const shutdown = new AbortController();
process.once('SIGTERM', () => shutdown.abort('SIGTERM'));
send({ type: 'ready', name: setup.name });
await election.campaign({
  signal: shutdown.signal,
  onElected: async (term, signal) => {
    const { previous } = term.lease;
    send({
      type: 'elected',
      name: setup.name,
      token: term.token.toString(),
      since: term.since,
      previous: previous === null ? null : { kind: previous.kind, token: previous.token.toString(), at: previous.at },
    });
    // NOTE: the write goes out after each pause even if the term ended meanwhile (a process frozen with
    // SIGSTOP wakes with its timers due in any order): the fence, not the signal, must refuse it.
    for (;;) {
      await pause(setup.writeEveryMs);
      let written: { ok: true } | { ok: false; reason: string };
      try {
        written = await append(term.lease);
      } catch {
        written = { ok: false, reason: 'store-error' };
      }
      if (!written.ok) send({ type: 'refused', name: setup.name, token: term.token.toString(), reason: written.reason });
      if (!written.ok || signal.aborted) return;
    }
  },
  onDemoted: (demotion) => send({ type: 'demoted', name: setup.name, token: demotion.term.token.toString(), reason: demotion.reason }),
});
for (const close of closers) await close();
process.exit(0);
