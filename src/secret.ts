const bytes = new Uint8Array(16 * 256);
let offset = bytes.length;
/** The two lowercase hex digits of each byte as char codes: byte `b` is `HEX_CODES[2b]`, `HEX_CODES[2b + 1]`. */
const HEX_CODES = Uint16Array.from({ length: 512 }, (_, index) => '0123456789abcdef'.charCodeAt(index % 2 === 0 ? index >> 5 : (index >> 1) & 15));

/** A fresh lease secret: 128 random bits as 32 lowercase hex digits, from the platform's CSPRNG. */
export function newSecret(): string {
  // NOTE: one CSPRNG call per 256 secrets (as node's randomUUID does): the call, not the bytes, costs ~3 µs.
  if (offset === bytes.length) {
    globalThis.crypto.getRandomValues(bytes);
    offset = 0;
  }
  const at = offset;
  offset += 16;
  // NOTE: one fromCharCode of 32 codes makes one flat string, ~4× faster than 16 concatenations (a rope that
  // each later comparison of the secret flattens first). Every index is in range: `at + 15 < bytes.length`
  // and `2 * byte + 1 < 512`.
  return String.fromCharCode(
    HEX_CODES[2 * bytes[at + 0]!]!, HEX_CODES[2 * bytes[at + 0]! + 1]!, HEX_CODES[2 * bytes[at + 1]!]!, HEX_CODES[2 * bytes[at + 1]! + 1]!, HEX_CODES[2 * bytes[at + 2]!]!, HEX_CODES[2 * bytes[at + 2]! + 1]!, HEX_CODES[2 * bytes[at + 3]!]!, HEX_CODES[2 * bytes[at + 3]! + 1]!,
    HEX_CODES[2 * bytes[at + 4]!]!, HEX_CODES[2 * bytes[at + 4]! + 1]!, HEX_CODES[2 * bytes[at + 5]!]!, HEX_CODES[2 * bytes[at + 5]! + 1]!, HEX_CODES[2 * bytes[at + 6]!]!, HEX_CODES[2 * bytes[at + 6]! + 1]!, HEX_CODES[2 * bytes[at + 7]!]!, HEX_CODES[2 * bytes[at + 7]! + 1]!,
    HEX_CODES[2 * bytes[at + 8]!]!, HEX_CODES[2 * bytes[at + 8]! + 1]!, HEX_CODES[2 * bytes[at + 9]!]!, HEX_CODES[2 * bytes[at + 9]! + 1]!, HEX_CODES[2 * bytes[at + 10]!]!, HEX_CODES[2 * bytes[at + 10]! + 1]!, HEX_CODES[2 * bytes[at + 11]!]!, HEX_CODES[2 * bytes[at + 11]! + 1]!,
    HEX_CODES[2 * bytes[at + 12]!]!, HEX_CODES[2 * bytes[at + 12]! + 1]!, HEX_CODES[2 * bytes[at + 13]!]!, HEX_CODES[2 * bytes[at + 13]! + 1]!, HEX_CODES[2 * bytes[at + 14]!]!, HEX_CODES[2 * bytes[at + 14]! + 1]!, HEX_CODES[2 * bytes[at + 15]!]!, HEX_CODES[2 * bytes[at + 15]! + 1]!,
  );
}
