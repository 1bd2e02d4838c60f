/**
 * Postgres wake-ups for waiting claims: the release and revoke statements `pg_notify` the table's "freed"
 * channel with the lease key as payload, in the same statement (so the message is sent when, and only
 * if, the transaction that ends the grant commits) when a waiter marked its interest on the row
 * (`freed-interest.ts`), and `watchFreed` LISTENs on it (`freed-listener.ts`).
 *
 * One channel per table, not per key: a process LISTENs once however many keys it waits for (the first
 * wait costs one round trip, the others none) and filters by payload. Every process listening on the
 * table hears every release; a message is a few dozen bytes. Keys are at most 1,024 UTF-8 bytes
 * (`MAX_NAME_BYTES`), far below NOTIFY's 8,000-byte payload limit, so the payload is the key itself.
 */
import { createHash } from 'node:crypto';
import type { TableName } from './identifier.js';

/** Postgres' longest identifier, in bytes: a longer channel name is refused by `pg_notify`. */
const MAX_IDENTIFIER_BYTES = 63;

/**
 * The table's channel: `<table as configured>:freed` (`leasefence_leases:freed`, `app.leases:freed`), or
 * `leasefence:freed:<hash of the name>` when that would exceed 63 bytes. Only identifier characters,
 * `.` and `:`, so it is safe inside quotes and string literals.
 */
export function freedChannelOf(table: TableName): string {
  const plain = `${table.name}:freed`;
  return plain.length <= MAX_IDENTIFIER_BYTES
    ? plain
    : `leasefence:freed:${createHash('sha256').update(table.name).digest('hex').slice(0, 40)}`;
}
