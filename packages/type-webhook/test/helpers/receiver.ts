import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** One request a receiver got. */
export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

/** What the receiver does with a request (after its body is read); default 200 "ok". */
export type Behaviour = (req: Received, res: ServerResponse, raw: IncomingMessage) => void;

/** A real HTTP server on 127.0.0.1 that records what webhooks send it. */
export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Changes what it answers from now on. */
  behave(behaviour: Behaviour): void;
  /** Resolves once `count` requests (passing `which`) arrived; rejects after `timeoutMs`. */
  waitFor(count: number, which?: (r: Received) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

export const ok: Behaviour = (_req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain' });
  res.end('ok');
};

/** Starts a receiver on 127.0.0.1, port 0. */
export async function startReceiver(behaviour: Behaviour = ok): Promise<Receiver> {
  const received: Received[] = [];
  let current = behaviour;
  const waiters = new Set<() => void>();
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      received.push(entry);
      for (const wake of waiters) wake();
      current(entry, res, req);
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    behave(next) {
      current = next;
    },
    waitFor(count, which = () => true, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const matching = received.filter(which);
          if (matching.length >= count) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve(matching);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`the receiver got ${received.filter(which).length} of ${count} requests in ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
