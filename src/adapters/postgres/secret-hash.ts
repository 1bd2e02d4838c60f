/**
 * The lease table keeps a SHA-256 of each grant's secret, never the secret: whoever can read the table (a
 * replica, a backup, a log of statements) cannot act as a holder. The adapter hashes the presented secret
 * before sending it, so the secret itself never travels to the server either (no statement log, parameter
 * or server error can carry it); SQL compares hashes and tells the adapter only whether they matched.
 */
/** Lowercase hex SHA-256 of the secret's UTF-8 bytes: what `secret_hash` holds. */
export { hashSecret as secretHash } from '../../secret-hash.js';
