/**
 * The chaos worker process: `fork`ed by the harness (run with `node --import tsx`), it connects to the
 * store as a user would, runs the workload until told to stop, and logs every operation to its own JSONL
 * file. IPC carries the deterministic-pause protocol and takeover requests (see messages.ts).
 */
import { appendFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createBackend } from './backends.js';
import { diedInWritePath, HistoryWriter } from './history.js';
import type { HarnessMessage, WorkerMessage, WorkerSetup } from './messages.js';
import { Recorder } from './recorder.js';
import { Workload, type WorkloadHooks } from './workload.js';

const send = (message: WorkerMessage): void => {
  process.send?.(message);
};

async function main(): Promise<void> {
  const setup = JSON.parse(process.env['CHAOS_WORKER'] ?? '') as WorkerSetup;
  const writer = new HistoryWriter(setup.historyPath);
  const recorder = new Recorder(setup.workload.proc, writer);
  const backend = await createBackend(setup.store, setup.url, setup.client, setup.variant, setup.workload.proc);
  let armed = false;
  let go: (() => void) | null = null;
  const hooks: WorkloadHooks = {
    beforeWrite: async (key, token) => {
      if (!armed) return false;
      armed = false;
      send({ type: 'before-write', key, token: token.toString() });
      await new Promise<void>((resolve) => {
        go = resolve;
      });
      return true;
    },
    afterHeldWrite: (key, token, accepted) => send({ type: 'held-write', key, token: token.toString(), accepted }),
  };
  const workload = new Workload(setup.workload, backend, recorder, hooks);
  process.on('message', (message: HarnessMessage) => {
    if (message.type === 'arm') armed = true;
    else if (message.type === 'disarm') armed = false;
    else if (message.type === 'go') go?.();
    else if (message.type === 'die-in-write')
      backend.dieInNextWrite?.((entry) => appendFileSync(diedInWritePath(dirname(setup.historyPath)), `${entry}\n`));
    else if (message.type === 'takeover') {
      void workload
        .takeover(message.key, message.deadlineMs)
        .then((token) => send({ type: 'took-over', id: message.id, token: token?.toString() ?? null }));
    } else if (message.type === 'stop') workload.stop();
  });
  // NOTE: if the harness dies, do not linger: the IPC channel closing is our signal.
  process.on('disconnect', () => workload.stop());
  send({ type: 'ready' });
  await workload.run();
  await Promise.race([backend.close(), new Promise((resolve) => setTimeout(resolve, 2000))]);
  writer.close();
  send({ type: 'stopped' });
  process.exit(0);
}

main().catch((error: unknown) => {
  console.error(`chaos worker failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  process.exit(1);
});
