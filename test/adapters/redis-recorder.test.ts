/**
 * The fenced write's recorder (`src/adapters/redis/recorder.ts`) without a server: a synchronous callback's
 * commands are sent in the same synchronous run as `fencedWrite` (no promise, no microtask in between);
 * an async callback's only once it has settled.
 */
import { describe, expect, it } from 'vitest';
import { createRedisStore, hashTagOf } from '../../src/adapters/redis/index.js';
import type { RedisConnection } from '../../src/adapters/redis/connection.js';
import type { Fence } from '../../src/fence/types.js';

const FENCE: Fence = { key: 'job', token: 1796093210433880n, secret: '0123456789abcdef0123456789abcdef', holder: 'worker', runId: null };
/** An applied fenced write's reply (WRITTEN): status and clock, replies, failed, error, applied. */
const WRITTEN_REPLY = ['+1796093210433880', ['OK'], 0, '', 1];

function connection(): { sent: string[][]; connection: RedisConnection } {
  const sent: string[][] = [];
  return {
    sent,
    connection: {
      send: async (args) => {
        sent.push([...args]);
        return WRITTEN_REPLY;
      },
    },
  };
}

describe('redis fenced write: when the recorded commands are sent', () => {
  it('a synchronous callback: in the same synchronous run as fencedWrite, before any microtask', async () => {
    const { sent, connection: client } = connection();
    const store = createRedisStore({ client });
    const written = store.fencedWrite(FENCE, (tx) => tx.call('SET', `${hashTagOf('job')}:out`, 'x'));
    expect(sent).toHaveLength(1);
    expect(sent[0]?.[0]).toBe('EVALSHA');
    await expect(written).resolves.toMatchObject({ ok: true, value: 'OK', token: FENCE.token });
  });

  it('an async callback: only after it settled, with everything it recorded', async () => {
    const { sent, connection: client } = connection();
    const store = createRedisStore({ client });
    let finish!: () => void;
    const gate = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const written = store.fencedWrite(FENCE, async (tx) => {
      await gate;
      void tx.call('SET', `${hashTagOf('job')}:out`, 'x');
      return 'done';
    });
    await Promise.resolve();
    expect(sent).toHaveLength(0);
    finish();
    await expect(written).resolves.toMatchObject({ ok: true, value: 'done' });
    expect(sent).toHaveLength(1);
    expect(sent[0]).toContain('SET');
  });
});
