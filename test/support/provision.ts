/**
 * What the throwaway servers of the test suite share: a free loopback port, and installing a missing
 * server from the OS packages (as root) or saying how.
 */
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:net';

/** Whether this process runs as root (then it may install packages and must run postgres as its own user). */
export const isRoot: boolean = typeof process.getuid === 'function' && process.getuid() === 0;

/** A loopback port that was free a moment ago (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      probe.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Returns what `find` finds; when it finds nothing, installs the Debian package `pkg` as root and looks
 * again, or (not root) throws `howToInstall`.
 */
export function findOrInstall<T>(pkg: string, find: () => T | null, howToInstall: string): T {
  const found = find();
  if (found !== null) return found;
  if (!isRoot) throw new Error(howToInstall);
  execFileSync('apt-get', ['update'], { stdio: 'inherit' });
  execFileSync('apt-get', ['install', '-y', pkg], { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  const installed = find();
  if (installed === null) throw new Error(`apt-get install ${pkg} finished but the server binary is still missing`);
  return installed;
}
