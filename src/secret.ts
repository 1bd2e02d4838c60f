const pool = new Uint8Array(16 * 256);
let poolOffset = pool.length;
const HEX_BYTES: readonly string[] = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/** A fresh lease secret: 128 random bits as 32 lowercase hex digits, from the platform's CSPRNG. */
export function newSecret(): string {
  // NOTE: one CSPRNG call per 256 secrets (as node's randomUUID does): the call, not the bytes, costs ~3 µs.
  if (poolOffset === pool.length) {
    globalThis.crypto.getRandomValues(pool);
    poolOffset = 0;
  }
  let hex = '';
  for (let index = poolOffset; index < poolOffset + 16; index += 1) hex += HEX_BYTES[pool[index] ?? 0];
  poolOffset += 16;
  return hex;
}

