import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFaultProxy, type FaultProxy } from './fault-proxy.js';

/** An echo server that also remembers what it received. */
let server: Server;
let received = '';
let proxy: FaultProxy;

beforeAll(async () => {
  server = createServer((socket) =>
    socket.on('data', (chunk) => {
      received += chunk.toString();
      socket.write(chunk);
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  proxy = await startFaultProxy(typeof address === 'object' && address !== null ? address.port : 0);
});
afterAll(async () => {
  await proxy.close();
  await new Promise((resolve) => server.close(resolve));
});

const open = (): Promise<Socket> =>
  new Promise((resolve) => {
    const socket = connect(proxy.port, '127.0.0.1', () => resolve(socket));
    socket.on('error', () => undefined);
  });

/** Sends `text` and resolves with the echo and how long it took, or with the socket's fate. */
function roundTrip(socket: Socket, text: string, timeoutMs = 2000): Promise<{ reply: string | null; ms: number; closed: boolean }> {
  const start = performance.now();
  return new Promise((resolve) => {
    const done = (reply: string | null, closed: boolean) => resolve({ reply, ms: performance.now() - start, closed });
    socket.once('data', (chunk) => done(chunk.toString(), false));
    socket.once('close', () => done(null, true));
    setTimeout(() => done(null, false), timeoutMs);
    socket.write(text);
  });
}

describe('loopback fault proxy', () => {
  it('passes bytes both ways unchanged when no fault is set', async () => {
    const socket = await open();
    expect((await roundTrip(socket, 'ping')).reply).toBe('ping');
    socket.destroy();
  });

  it('adds latency in each direction', async () => {
    const socket = await open();
    proxy.latency(100);
    const { reply, ms } = await roundTrip(socket, 'slow');
    proxy.latency(0);
    expect(reply).toBe('slow');
    expect(ms).toBeGreaterThanOrEqual(190);
    socket.destroy();
  });

  it('holds bytes during a partition and delivers them, in order, on heal', async () => {
    const socket = await open();
    proxy.partition();
    const pending = roundTrip(socket, 'held', 3000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(received.endsWith('held')).toBe(false);
    proxy.heal();
    const { reply, ms } = await pending;
    expect(reply).toBe('held');
    expect(ms).toBeGreaterThanOrEqual(290);
    socket.destroy();
  });

  it('a lost reply then reset: the server got the request, the client gets no reply and a reset', async () => {
    const socket = await open();
    const lost = proxy.loseRepliesThenReset(200);
    const { reply, closed } = await roundTrip(socket, 'applied-but-lost');
    await lost;
    expect(received.endsWith('applied-but-lost')).toBe(true);
    expect(reply).toBeNull();
    expect(closed).toBe(true);
  });
});
