/**
 * A plain text table: columns padded to their widest cell (by code points, which is what a terminal
 * shows for the names leasefence stores), two spaces between columns, no trailing spaces.
 */

const widthOf = (text: string): number => [...text].length;

/** Formats `rows` under `header` as aligned columns, one line each. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((title, column) => Math.max(widthOf(title), ...rows.map((row) => widthOf(row[column] ?? ''))));
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, column) => (column === cells.length - 1 ? cell : cell + ' '.repeat((widths[column] ?? 0) - widthOf(cell))))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}
