/**
 * Terminal injection through the CLI: keys, holders, run ids, attributes, checkpoints, revoke reasons, `by`
 * and gate resources are caller text. Against the test run's real redis-server, every command that prints
 * them must write no escape (ESC, CSI), carriage return, line separator or bidi override, and no newline
 * of the caller's (no forged line); `--json` stays exact JSON that parses back to the stored text.
 * The CLI runs in-process (`runCli` with its own streams: a terminal stdin for the confirmations).
 */
import { PassThrough } from 'node:stream';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisStore, createRedisTokenGate } from '../../src/adapters/redis/index.js';
import { runCli, type CliIo } from '../../src/cli/main.js';
import { createLeases } from '../../src/leases.js';
import { freshPrefix, sharedRedisUrl } from '../adapters/redis-harness.js';
import { UNSAFE_ON_A_TERMINAL as UNSAFE } from './cli-harness.js';

const KEY = 'job\u001b[31m\n:1';
const HOLDER = 'evil\u001b[2J\nFORGED';
const RUN = 'r\u202e1\r';
const REASON = 'x\n\u001b[2J';
const BY = 'ops\u001b]0;pwned\u0007\u009b2J';
const RESOURCE = 'rep\u001b[2J\nFORGED\u2028ort';
const LIVE = 'live\u2066\u001b[5m\n:2';

interface Printed {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

describe('the CLI prints caller text escaped', () => {
  let client: Redis;
  let url: string;
  const prefix = freshPrefix('cli-injection');
  beforeAll(async () => {
    url = await sharedRedisUrl();
    client = new Redis(url);
    const store = createRedisStore({ client, prefix });
    const leases = createLeases(store, { holder: HOLDER, ttlMs: 60_000 });
    const lease = await leases.claimOrThrow(KEY, { runId: RUN, attributes: { 'region\u001b[2J': 'eu\n\u202eFORGED' } });
    await leases.gateWriteOrThrow(createRedisTokenGate({ client, prefix }), RESOURCE, lease, () => undefined);
    await leases.checkpointOrThrow(lease, { note: 'half\u001b[2J\nFORGED\u009b31m\u2028' });
    const revoked = await createLeases(store, { holder: 'ops' }).inspect(KEY);
    expect(revoked.grant?.holder).toBe(HOLDER);
    await leases.claimOrThrow(LIVE, { runId: RUN });
  });
  afterAll(async () => void client.disconnect());

  /** Runs the CLI in-process on this test's store; `tty`: stdin is a terminal that answers `answer`. */
  async function cli(args: readonly string[], { tty = false, answer = '' } = {}): Promise<Printed> {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const chunks = { stdout: '', stderr: '' };
    stdout.on('data', (chunk: Buffer) => {
      chunks.stdout += chunk.toString();
    });
    stderr.on('data', (chunk: Buffer) => {
      chunks.stderr += chunk.toString();
    });
    const stdin = Object.assign(new PassThrough(), { isTTY: tty });
    stdin.end(answer);
    const io: CliIo = { stdout, stderr, stdin, env: {} };
    const code = await runCli([...args, '--store', url, '--prefix', prefix], io);
    return { code, ...chunks };
  }

  /** Nothing unsafe, no line of the caller's, and each line one the CLI meant (`lines` of them). */
  function expectSafe(printed: string, lines: number): void {
    expect(printed).not.toMatch(UNSAFE);
    expect(printed).not.toMatch(/^FORGED/m);
    expect(printed.replace(/\n$/, '').split('\n')).toHaveLength(lines);
  }

  it('list: every cell escaped, the columns aligned on the printed text', async () => {
    const run = await cli(['list']);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expectSafe(run.stdout, 3);
    const [header = '', first = '', second = ''] = run.stdout.split('\n');
    expect(first.startsWith('job\\u001b[31m\\n:1  ')).toBe(true);
    expect(first).toContain('held 0 s by evil\\u001b[2J\\nFORGED, run r\\u202e1\\r');
    expect(second.startsWith('live\\u2066\\u001b[5m\\n:2  ')).toBe(true);
    // Aligned: STATE, TOKEN and HOLDER start at the header's offsets on both lines, two spaces after the cell before.
    const starts = ['STATE', 'TOKEN', 'HOLDER'].map((column) => header.indexOf(column));
    for (const line of [first, second])
      expect(starts.map((at) => line.slice(at - 2, at + 1))).toEqual(starts.map(() => expect.stringMatching(/^ {2}\S$/)));
  });

  it('inspect: the fields, attributes and checkpoint escaped; --json is exact JSON of the stored text', async () => {
    const run = await cli(['inspect', KEY]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).not.toMatch(UNSAFE);
    expect(run.stdout).not.toMatch(/^FORGED/m);
    expect(run.stdout).toContain('job\\u001b[31m\\n:1');
    expect(run.stdout).toContain('\\u001b[2J\\nFORGED\\u009b31m\\u2028');
    const json = await cli(['inspect', KEY, '--json']);
    expect(json.stdout).not.toMatch(UNSAFE);
    const parsed = JSON.parse(json.stdout) as {
      key: string;
      grant: { holder: string; runId: string; attributes: object };
      checkpoint: { value: unknown };
    };
    expect(parsed).toMatchObject({
      key: KEY,
      grant: { holder: HOLDER, runId: RUN, attributes: { 'region\u001b[2J': 'eu\n\u202eFORGED' } },
    });
    expect(parsed.checkpoint.value).toEqual({ note: 'half\u001b[2J\nFORGED\u009b31m\u2028' });
    const missing = await cli(['inspect', 'no\u001b[2J\nFORGED']);
    expect(missing.code).toBe(3);
    expectSafe(missing.stdout, 1);
  });

  it('gate inspect and reset: the resource and the key escaped, also in the confirmation', async () => {
    const inspect = await cli(['gate', 'inspect', RESOURCE]);
    expect(inspect).toMatchObject({ code: 0, stderr: '' });
    expectSafe(inspect.stdout, 1);
    expect(inspect.stdout).toMatch(/^gate rep\\u001b\[2J\\nFORGED\\u2028ort: holds token \d+ of lease job\\u001b\[31m\\n:1\n$/);
    const json = await cli(['gate', 'inspect', RESOURCE, '--json']);
    expect(json.stdout).not.toMatch(UNSAFE);
    expect(JSON.parse(json.stdout)).toMatchObject({ resource: RESOURCE, found: { key: KEY } });
    const declined = await cli(['gate', 'reset', RESOURCE], { tty: true, answer: 'n\n' });
    expect(declined.code).toBe(6);
    expectSafe(declined.stderr, 1);
    expect(declined.stderr).toContain('Forget the highest token of rep\\u001b[2J\\nFORGED\\u2028ort (token ');
    expect(declined.stderr).toContain(' of lease job\\u001b[31m\\n:1)?');
  });

  it('revoke: the confirmation, the refusal and the outcome escaped; --json exact', async () => {
    const declined = await cli(['revoke', LIVE, '--reason', REASON, '--by', BY], { tty: true, answer: 'no\n' });
    expect(declined.code).toBe(6);
    expectSafe(declined.stderr, 1);
    expect(declined.stderr).toContain('Revoke live\\u2066\\u001b[5m\\n:2 (token ');
    expect(declined.stderr).toContain('held by evil\\u001b[2J\\nFORGED, run r\\u202e1\\r)?');
    const revoked = await cli(['revoke', LIVE, '--reason', REASON, '--by', BY, '--yes']);
    expect(revoked).toMatchObject({ code: 0, stderr: '' });
    expectSafe(revoked.stdout, 1);
    expect(revoked.stdout).toMatch(
      /^revoked live\\u2066\\u001b\[5m\\n:2: token \d+ \(evil\\u001b\[2J\\nFORGED, run r\\u202e1\\r\) is fenced/,
    );
    const refused = await cli(['revoke', LIVE, '--reason', REASON, '--yes']);
    expect(refused.code).toBe(4);
    expectSafe(refused.stderr, 1);
    const list = await cli(['list']);
    expectSafe(list.stdout, 3);
    expect(list.stdout).toContain(`by ops\\u001b]0;pwned\\u0007\\u009b2J: x\\n\\u001b[2J (token `);
    const inspect = await cli(['inspect', LIVE]);
    expect(inspect.stdout).not.toMatch(UNSAFE);
    expect(inspect.stdout).not.toMatch(/^FORGED/m);
    const json = await cli(['revoke', KEY, '--reason', REASON, '--by', BY, '--json', '--yes']);
    expect(json.code).toBe(0);
    expect(json.stdout).not.toMatch(UNSAFE);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: true, key: KEY, revoked: { holder: HOLDER, runId: RUN, reason: REASON, by: BY } });
    const listed = await cli(['list', '--json']);
    expect(listed.stdout).not.toMatch(UNSAFE);
    expect((JSON.parse(listed.stdout) as Array<{ key: string }>).map(({ key }) => key).sort()).toEqual([KEY, LIVE].sort());
  });

  it('watch: the table and the --json frames escaped', async () => {
    const table = await cli(['watch', '--iterations', '1']);
    expect(table.code).toBe(0);
    expect(table.stdout).not.toMatch(UNSAFE);
    expect(table.stdout).not.toMatch(/^FORGED/m);
    expect(table.stdout.trimEnd().split('\n')).toHaveLength(5);
    const json = await cli(['watch', '--iterations', '1', '--json']);
    expect(json.stdout).not.toMatch(UNSAFE);
    expect(json.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(
      (JSON.parse(json.stdout) as { leases: Array<{ key: string; grant: { holder: string } | null }> }).leases.map(({ key }) => key).sort(),
    ).toEqual([KEY, LIVE].sort());
  });

  it('usage errors quote caller text escaped', async () => {
    for (const args of [
      ['frob\u202enicate\u009b2J'],
      ['list', '--state', 'held\u2028\u001b[2J'],
      ['list', '--bo\u202egus'],
      ['watch', '--interval', '1\u009b'],
    ]) {
      const run = await cli(args);
      expect(run.code).toBe(2);
      expect(run.stderr.split('\n')[0]).not.toMatch(UNSAFE);
      expect(run.stderr).not.toMatch(UNSAFE);
    }
  });
});
