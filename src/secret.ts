/** A fresh lease secret: 128 random bits as 32 lowercase hex digits, from the platform's CSPRNG. */
export function newSecret(): string {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  let hex = '';
  for (const byte of bytes) hex += byte.toString(16).padStart(2, '0');
  return hex;
}
