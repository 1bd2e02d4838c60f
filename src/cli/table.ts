/**
 * A plain text table: every cell escaped (`printable`: keys, holders and reasons are caller text), columns
 * padded to their widest escaped cell (by code points, which is what a terminal shows for the names
 * leasefence stores), two spaces between columns, no trailing spaces.
 */
import { printable } from '../printable.js';

const widthOf = (text: string): number => [...text].length;

/** Formats `rows` under `header` as aligned columns, one line each, with control characters escaped. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const printed = [header, ...rows].map((cells) => cells.map(printable));
  const widths = header.map((_, column) => Math.max(...printed.map((cells) => widthOf(cells[column] ?? ''))));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell + ' '.repeat((widths[column] ?? 0) - widthOf(cell))))
      .join('  ')
      .trimEnd();
  return printed.map(line).join('\n');
}
