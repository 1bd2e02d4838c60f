/**
 * What the throwaway servers of the test suite share: a free loopback port, and installing a missing
 * server from the OS packages (as root) or saying how.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
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

/** The first of `candidates` that exists, else `name` found on PATH, else `null`. */
export function installedBinary(name: string, candidates: readonly string[] = []): string | null {
  for (const candidate of candidates) if (existsSync(candidate)) return candidate;
  const which = spawnSync('which', [name], { encoding: 'utf8' });
  const path = which.status === 0 ? which.stdout.trim() : '';
  return path === '' ? null : path;
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

/**
 * A detached shell that runs `stopServer` (a shell command) and removes `dir` once this process is gone,
 * however it ended (an `exit` hook does not run on SIGKILL or an unhandled SIGTERM). It exits on its own
 * once the server's own `stop()` has removed the dir.
 */
export function watchForOrphan(name: string, dir: string, stopServer: string): void {
  const script = `while kill -0 "$1" 2>/dev/null && [ -d "$2" ]; do sleep 1; done
if [ -d "$2" ]; then ${stopServer} >/dev/null 2>&1; rm -rf "$2"; fi`;
  spawn('sh', ['-c', script, name, String(process.pid), dir], { detached: true, stdio: 'ignore' }).unref();
}
