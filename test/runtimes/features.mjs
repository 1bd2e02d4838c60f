// What the runtime that runs this file offers of what leasefence uses or might, detected by use, not by
// version: prints one JSON object (see test/runtimes/runtimes.test.ts, which compares it with the README's
// Runtimes table).
// - tracingChannel: node:diagnostics_channel's TracingChannel with tracePromise and per-event hasSubscribers
//   (leasefence's events and leasefence/otel; the core imports it, so without it nothing loads).
// - abortSignalAny: AbortSignal.any (leasefence does not need it; detected because callers' code often does).
// - asyncLocalStorage: node:async_hooks' AsyncLocalStorage keeps its store across an await (the Postgres
//   adapter's fenced transactions use it).
// - nodeSqlite: node:sqlite's DatabaseSync opens a database and answers a query (the SQLite store's driver
//   without better-sqlite3).
// - tcp: node:net connects to a listening socket (every server store's client needs TCP).
import { AsyncLocalStorage } from 'node:async_hooks';
import diagnostics from 'node:diagnostics_channel';
import { createServer, connect } from 'node:net';

async function tracingChannel() {
  if (typeof diagnostics.tracingChannel !== 'function') return false;
  const traced = diagnostics.tracingChannel('leasefence-runtimes:probe');
  const seen = [];
  const subscribers = {
    start: () => seen.push('start'),
    end: () => seen.push('end'),
    asyncStart: () => seen.push('asyncStart'),
    asyncEnd: () => seen.push('asyncEnd'),
    error: () => seen.push('error'),
  };
  traced.subscribe(subscribers);
  const observed = traced.start.hasSubscribers && traced.asyncEnd.hasSubscribers;
  await traced.tracePromise(async () => 1, {});
  traced.unsubscribe(subscribers);
  return observed && seen.join(',') === 'start,end,asyncStart,asyncEnd';
}

async function asyncLocalStorage() {
  const storage = new AsyncLocalStorage();
  return storage.run('inside', async () => {
    await new Promise((resolve) => setTimeout(resolve, 1));
    return storage.getStore() === 'inside';
  });
}

async function nodeSqlite() {
  try {
    const { DatabaseSync } = await import('node:sqlite');
    const database = new DatabaseSync(':memory:');
    const row = database.prepare('SELECT 1 + 1 AS two').get();
    database.close();
    return row.two === 2;
  } catch {
    return false;
  }
}

async function tcp() {
  const server = createServer((socket) => socket.end('pong'));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const reply = await new Promise((resolve, reject) => {
      const socket = connect(server.address().port, '127.0.0.1');
      let data = '';
      socket.on('data', (chunk) => (data += chunk));
      socket.on('end', () => resolve(data));
      socket.on('error', reject);
    });
    return reply === 'pong';
  } finally {
    server.close();
  }
}

const features = {
  tracingChannel: await tracingChannel(),
  abortSignalAny: typeof AbortSignal.any === 'function' && AbortSignal.any([new AbortController().signal]).aborted === false,
  asyncLocalStorage: await asyncLocalStorage(),
  nodeSqlite: await nodeSqlite(),
  tcp: await tcp(),
};
console.log(JSON.stringify(features));
