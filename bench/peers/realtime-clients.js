// The client side of bench/peers.js --scenario realtime, one process pinned to the load core:
// svc subscribers (raw `ws` sockets speaking Engine.IO v4 / Socket.IO v5, as bench/live/clients.js,
// each with its user's session cookie and one live query `svc:subscribe` on /posts), PocketBase
// subscribers (one SSE connection each to /api/realtime, subscribed to `posts/*` with its user's
// token), and the paced writer (HTTP POSTs). Commands arrive over IPC; each answers with a message
// of the same `cmd`. Times are process.hrtime in this one process (writer and receivers alike).
import http from 'node:http';
import { rawSocketIo } from '../lib/rawSocketIo.js';
import { answerCommands } from '../lib/helpers.js';

const nowUs = () => Number(process.hrtime.bigint() / 1000n);
const sockets = [];
const streams = [];

/** The round being measured: its tag (in every title), send times, receipts. */
let round = { tag: '', sent: new Map(), latencies: [], delivered: 0, wrongOwner: 0, stale: 0 };

/** One event received by the subscriber of `owner`: an object with its title and author. */
function received(owner, object) {
  const title = object?.title;
  if (typeof title !== 'string') return;
  if (object.author !== owner) round.wrongOwner++;
  const dash = title.indexOf('-');
  if (title.slice(0, dash) !== round.tag) {
    round.stale++;
    return;
  }
  const sent = round.sent.get(title);
  if (sent === undefined) return;
  round.delivered++;
  round.latencies.push(nowUs() - sent);
}

function connectSvc(port, cookie, owner, index) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`svc socket ${index}: no subscribe answer in 30 s`)), 30_000);
    const ws = rawSocketIo(port, {
      headers: { cookie },
      on: {
        connected: () => ws.send(`42${index}${JSON.stringify(['svc:subscribe', { id: 's', path: '/posts', query: {} }])}`),
        ack(answer) {
          clearTimeout(timer);
          if (answer.ok) resolve(ws);
          else reject(new Error(`svc subscribe: ${JSON.stringify(answer)}`));
        },
        event(event, data) {
          if (event === 'svc:live' && data.object) received(owner, data.object);
        },
        refused: (text) => reject(new Error(`svc socket refused: ${text}`)),
      },
    });
    ws.on('error', reject);
  });
}

/** One SSE connection to PocketBase, subscribed to posts/* as the user of `token`. */
function connectPocketBase(port, token, owner, index) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`PocketBase stream ${index}: not subscribed in 30 s`)), 30_000);
    const req = http.get({ host: '127.0.0.1', port, path: '/api/realtime', agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`PocketBase /api/realtime: ${res.statusCode}`));
      res.setEncoding('utf8');
      let buf = '';
      res.on('data', (chunk) => {
        buf += chunk;
        let end;
        while ((end = buf.indexOf('\n\n')) !== -1) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          let event = '';
          let data = '';
          for (const line of block.split('\n')) {
            if (line.startsWith('event:')) event = line.slice(6);
            else if (line.startsWith('data:')) data += line.slice(5);
          }
          if (event === 'PB_CONNECT') {
            subscribe(port, token, JSON.parse(data).clientId).then(() => {
              clearTimeout(timer);
              resolve(req);
            }, reject);
          } else if (event.startsWith('posts')) {
            received(owner, JSON.parse(data).record);
          }
        }
      });
    });
    req.on('error', reject);
  });
}

const writeAgent = new http.Agent({ keepAlive: true, maxSockets: 50 });

function post(port, path, headers, body) {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path, agent: writeAgent, headers: { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode));
    });
    req.on('error', () => resolve(0));
    req.end(body);
  });
}

function subscribe(port, token, clientId) {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ clientId, subscriptions: ['posts/*'] });
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/api/realtime', agent: writeAgent, headers: { authorization: token, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => (res.statusCode === 204 ? resolve() : reject(new Error(`PocketBase subscribe: ${res.statusCode} ${text}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const percentile = (xs, p) => {
  if (!xs.length) return null;
  const s = Float64Array.from(xs).sort(); // Infinity sorts last
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * `rate` writes a second for `seconds` s to `path` (each by the next owner of `owners`), at most
 * `maxInFlight` unanswered (a server that cannot keep up gets fewer writes: the rate achieved is
 * reported); then waits until every accepted write was delivered, or `drainMs`.
 */
async function paced({ tag, port, path, headers, owners, rate, seconds, maxInFlight, drainMs, expectDelivery }) {
  round = { tag, sent: new Map(), latencies: [], delivered: 0, wrongOwner: 0, stale: 0 };
  let sent = 0;
  let ok = 0;
  let failed = 0;
  let inFlight = 0;
  const total = Math.round(rate * seconds);
  const started = performance.now();
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate));
    while (sent < due && inFlight < maxInFlight) {
      const title = `${tag}-${sent}`;
      const body = JSON.stringify({ title, author: owners[sent % owners.length] });
      round.sent.set(title, nowUs());
      sent++;
      inFlight++;
      post(port, path, headers, body).then((status) => {
        inFlight--;
        if (status >= 200 && status < 300) ok++;
        else failed++;
      });
    }
    if (performance.now() - started > seconds * 1000 * 3) break; // far behind: stop sending
    await sleep(2);
  }
  const sendSeconds = (performance.now() - started) / 1000;
  while (inFlight > 0) await sleep(2);
  const drainStart = performance.now();
  if (expectDelivery) while (round.delivered < ok && performance.now() - drainStart < drainMs) await sleep(5);
  else await sleep(300);
  return {
    sent,
    ok,
    failed,
    sendSeconds,
    writesPerSecond: ok / sendSeconds,
    drainSeconds: (performance.now() - drainStart) / 1000,
    delivered: round.delivered,
    wrongOwner: round.wrongOwner,
    stale: round.stale,
    // Over every accepted write: one not delivered within the drain counts as infinitely late.
    latencyUs: (() => {
      const all = [...round.latencies, ...Array.from({ length: Math.max(0, ok - round.delivered) }, () => Infinity)];
      return { p50: percentile(all, 50), p99: percentile(all, 99), max: percentile(all, 100) };
    })(),
  };
}

answerCommands(async (msg) => {
  let result;
  if (msg.cmd === 'svc') {
    for (let start = 0; start < msg.users.length; start += 100) {
      const batch = [];
      for (let i = start; i < Math.min(msg.users.length, start + 100); i++) batch.push(connectSvc(msg.port, msg.users[i].cookie, msg.users[i].id, i));
      sockets.push(...(await Promise.all(batch)));
    }
    result = sockets.length;
  } else if (msg.cmd === 'pocketbase') {
    for (let start = 0; start < msg.users.length; start += 100) {
      const batch = [];
      for (let i = start; i < Math.min(msg.users.length, start + 100); i++) batch.push(connectPocketBase(msg.port, msg.users[i].token, msg.users[i].id, i));
      streams.push(...(await Promise.all(batch)));
    }
    result = streams.length;
  } else if (msg.cmd === 'pocketbase-again') {
    // PocketBase was restarted (to drop a backlog it could not deliver): the same users again.
    for (const s of streams.splice(0)) s.destroy();
    for (let start = 0; start < msg.users.length; start += 100) {
      const batch = [];
      for (let i = start; i < Math.min(msg.users.length, start + 100); i++) batch.push(connectPocketBase(msg.port, msg.users[i].token, msg.users[i].id, i));
      streams.push(...(await Promise.all(batch)));
    }
    result = streams.length;
  } else if (msg.cmd === 'paced') {
    result = await paced(msg);
  } else if (msg.cmd === 'probe') {
    // One write by `owner`: did its subscriber (and only it) get it?
    round = { tag: msg.tag, sent: new Map(), latencies: [], delivered: 0, wrongOwner: 0, stale: 0 };
    const title = `${msg.tag}-0`;
    round.sent.set(title, nowUs());
    const status = await post(msg.port, msg.path, msg.headers, JSON.stringify({ title, author: msg.owner }));
    const end = Date.now() + 5000;
    while (round.delivered === 0 && Date.now() < end) await sleep(5);
    await sleep(300);
    result = { status, delivered: round.delivered, wrongOwner: round.wrongOwner };
  }
  return result;
}, {
  close() {
    for (const s of sockets) s.terminate();
    for (const s of streams) s.destroy();
    writeAgent.destroy();
  },
});
