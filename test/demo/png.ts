/**
 * Just enough PNG decoding to look at a screenshot: 8-bit RGB or RGBA, not interlaced (what Chromium
 * writes). The IDAT chunks are inflated with node:zlib and each scanline's filter undone.
 */
import { inflateSync } from 'node:zlib';

/** A decoded image: `rgba` holds 4 bytes per pixel, row after row. */
export interface Pixels {
  readonly width: number;
  readonly height: number;
  readonly rgba: Uint8Array;
}

const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Undoes the Paeth predictor of one byte. */
function paeth(left: number, up: number, upLeft: number): number {
  const estimate = left + up - upLeft;
  const [toLeft, toUp, toUpLeft] = [Math.abs(estimate - left), Math.abs(estimate - up), Math.abs(estimate - upLeft)];
  if (toLeft <= toUp && toLeft <= toUpLeft) return left;
  return toUp <= toUpLeft ? up : upLeft;
}

/** Decodes an 8-bit RGB or RGBA PNG; throws on anything else. */
export function decodePng(png: Uint8Array): Pixels {
  const file = Buffer.from(png);
  if (!file.subarray(0, 8).equals(SIGNATURE)) throw new Error('not a PNG');
  let [width, height, channels] = [0, 0, 0];
  const idat: Buffer[] = [];
  for (let offset = 8; offset < file.length; ) {
    const length = file.readUInt32BE(offset);
    const type = file.toString('latin1', offset + 4, offset + 8);
    const data = file.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      [width, height] = [data.readUInt32BE(0), data.readUInt32BE(4)];
      const [bitDepth, colourType, interlace] = [data[8], data[9], data[12]];
      if (bitDepth !== 8 || (colourType !== 2 && colourType !== 6) || interlace !== 0) {
        throw new Error(`unsupported PNG: bit depth ${bitDepth}, colour type ${colourType}, interlace ${interlace}`);
      }
      channels = colourType === 6 ? 4 : 3;
    }
    if (type === 'IDAT') idat.push(data);
    if (type === 'IEND') break;
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const rows = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let i = 0; i < stride; i++) {
      const left = i >= channels ? rows[y * stride + i - channels]! : 0;
      const up = y > 0 ? rows[(y - 1) * stride + i]! : 0;
      const upLeft = y > 0 && i >= channels ? rows[(y - 1) * stride + i - channels]! : 0;
      const predictor = [0, left, up, (left + up) >> 1, paeth(left, up, upLeft)][filter];
      if (predictor === undefined) throw new Error(`bad PNG filter ${filter} on row ${y}`);
      rows[y * stride + i] = (line[i]! + predictor) & 0xff;
    }
  }
  const rgba = new Uint8Array(width * height * 4);
  for (let p = 0; p < width * height; p++) {
    rgba.set(rows.subarray(p * channels, p * channels + 3), p * 4);
    rgba[p * 4 + 3] = channels === 4 ? rows[p * channels + 3]! : 255;
  }
  return { width, height, rgba };
}

/** The pixel at (x, y) as [r, g, b, a]. */
export function pixelAt(image: Pixels, x: number, y: number): [number, number, number, number] {
  const i = (y * image.width + x) * 4;
  return [image.rgba[i]!, image.rgba[i + 1]!, image.rgba[i + 2]!, image.rgba[i + 3]!];
}

/** How many pixels inside the box (clipped to the image) satisfy `test`. */
export function countPixels(
  image: Pixels,
  test: (rgba: [number, number, number, number]) => boolean,
  box = { x: 0, y: 0, width: image.width, height: image.height },
): number {
  let count = 0;
  const [x0, y0] = [Math.max(0, Math.floor(box.x)), Math.max(0, Math.floor(box.y))];
  const [x1, y1] = [Math.min(image.width, Math.ceil(box.x + box.width)), Math.min(image.height, Math.ceil(box.y + box.height))];
  for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) if (test(pixelAt(image, x, y))) count++;
  return count;
}
