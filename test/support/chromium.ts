/**
 * Headless Chromium for tests that need a real browser (the timeline picture): the Debian package
 * `chromium`, found on the machine or, as root, installed with apt like the test servers; anyone else gets
 * an error saying how. Each run gets a fresh profile in a temp dir, removed afterwards, and is killed
 * (with every process it started) when it overruns or when this process dies first.
 *
 * ```ts
 * const { stdout } = await runChromium(['--dump-dom', pathToFileURL(page).href]);
 * await runChromium([`--screenshot=${png}`, '--window-size=900,600', pathToFileURL(svg).href]);
 * ```
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findOrInstall, watchForOrphan } from './provision.js';
import { assertTierMayStart } from './tiers.js';

/** The variable naming a Chromium binary to use instead of the OS package's. */
export const CHROMIUM_VARIABLE = 'LEASEFENCE_CHROMIUM';

/**
 * Flags for every run: headless, no sandbox (CI runs as root), no GPU, and nothing that reaches the
 * network on its own (QUIC, first-run pages, background fetches, component updates, sync).
 */
export const CHROMIUM_FLAGS: readonly string[] = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--hide-scrollbars',
  // NOTE: one CSS px per screenshot pixel, whatever the machine's display says.
  '--force-device-scale-factor=1',
];

function installedChromium(): string | null {
  const given = process.env[CHROMIUM_VARIABLE];
  if (given !== undefined && given !== '') return existsSync(given) ? given : null;
  for (const candidate of ['/usr/bin/chromium', '/usr/bin/chromium-browser']) if (existsSync(candidate)) return candidate;
  const which = spawnSync('which', ['chromium'], { encoding: 'utf8' });
  const path = which.status === 0 ? which.stdout.trim() : '';
  return path === '' ? null : path;
}

/** The Chromium binary, installing the Debian package `chromium` as root when none is present. */
export function findChromium(): string {
  assertTierMayStart('browser');
  return findOrInstall(
    'chromium',
    installedChromium,
    'headless Chromium not found. Install it with `sudo apt-get update && sudo apt-get install -y chromium` (Debian/Ubuntu), ' +
      `or set ${CHROMIUM_VARIABLE} to a Chromium or Chrome binary.`,
  );
}

/** What a finished Chromium run printed. */
export interface ChromiumRun {
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs Chromium once with `CHROMIUM_FLAGS`, a fresh `--user-data-dir` and `args`, and resolves when it
 * exits 0 (rejects on another exit, or after `timeoutMs`, having killed its whole process group).
 */
export function runChromium(args: readonly string[], timeoutMs = 60_000): Promise<ChromiumRun> {
  const binary = findChromium();
  const profile = mkdtempSync(join(tmpdir(), 'leasefence-chromium-'));
  // NOTE: detached, so the browser and its helpers form one process group that a single kill reaches.
  const child = spawn(binary, [...CHROMIUM_FLAGS, `--user-data-dir=${profile}`, ...args], {
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const group = child.pid;
  if (group !== undefined) watchForOrphan('leasefence-chromium', profile, `kill -9 -${group}`);
  const killGroup = (): void => {
    try {
      if (group !== undefined) process.kill(-group, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  let [stdout, stderr] = ['', ''];
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise<ChromiumRun>((resolve, reject) => {
    const timer = setTimeout(() => {
      killGroup();
      reject(new Error(`chromium did not finish within ${timeoutMs} ms: ${args.join(' ')}\n${stderr.slice(-2000)}`));
    }, timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve({ stdout, stderr });
      else reject(new Error(`chromium exited with ${code ?? signal}: ${args.join(' ')}\n${stderr.slice(-2000)}`));
    });
  }).finally(() => {
    // NOTE: helpers (crashpad, zygote) may outlive the browser by a moment; they go with the group.
    killGroup();
    rmSync(profile, { recursive: true, force: true });
  });
}
