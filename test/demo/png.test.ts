/**
 * The screenshot decoder the browser test relies on: a PNG built here, one row per filter type (none, sub,
 * up, average, Paeth), RGB and RGBA, decodes to the pixels it was built from.
 */
import { deflateSync } from 'node:zlib';
import { fc, test } from '@fast-check/vitest';
import { expect } from 'vitest';
import { countPixels, decodePng } from './png.js';

function paeth(left: number, up: number, upLeft: number): number {
  const estimate = left + up - upLeft;
  const [a, b, c] = [Math.abs(estimate - left), Math.abs(estimate - up), Math.abs(estimate - upLeft)];
  return a <= b && a <= c ? left : b <= c ? up : upLeft;
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  // NOTE: the CRC is not checked by the decoder, so zeros do.
  return Buffer.concat([length, Buffer.from(type, 'latin1'), data, Buffer.alloc(4)]);
}

/** Encodes `pixels` (row after row, `channels` bytes each) with row y filtered by filter type y % 5. */
function encodePng(width: number, height: number, channels: 3 | 4, pixels: Uint8Array): Buffer {
  const stride = width * channels;
  const raw: number[] = [];
  for (let y = 0; y < height; y++) {
    const filter = y % 5;
    raw.push(filter);
    for (let i = 0; i < stride; i++) {
      const at = (dy: number, di: number): number => (y + dy >= 0 && i + di >= 0 ? pixels[(y + dy) * stride + i + di]! : 0);
      const [left, up, upLeft] = [at(0, -channels), at(-1, 0), at(-1, -channels)];
      const predictor = [0, left, up, (left + up) >> 1, paeth(left, up, upLeft)][filter]!;
      raw.push((pixels[y * stride + i]! - predictor) & 0xff);
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, channels === 4 ? 6 : 2, 0, 0, 0], 8);
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', header), chunk('IDAT', deflateSync(Buffer.from(raw))), chunk('IEND', Buffer.alloc(0))]);
}

test.prop(
  [
    fc.integer({ min: 1, max: 32 }),
    fc.integer({ min: 1, max: 24 }),
    fc.constantFrom(3 as const, 4 as const),
    fc.infiniteStream(fc.noBias(fc.integer({ min: 0, max: 255 }))),
  ],
  { numRuns: 50 },
)('decodes every filter type back to the pixels it was built from', (width, height, channels, bytes) => {
  const pixels = Uint8Array.from(bytes.take(width * height * channels));
  const image = decodePng(encodePng(width, height, channels, pixels));
  expect({ width: image.width, height: image.height }).toEqual({ width, height });
  for (let p = 0; p < width * height; p++) {
    const expected = [...pixels.subarray(p * channels, p * channels + 3), channels === 4 ? pixels[p * channels + 3]! : 255];
    expect([...image.rgba.subarray(p * 4, p * 4 + 4)]).toEqual(expected);
  }
  expect(countPixels(image, () => true)).toBe(width * height);
});
