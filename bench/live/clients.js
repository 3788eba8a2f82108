// The subscribers of bench/live/run.js, in one process pinned to core 1: raw `ws` sockets speaking
// Engine.IO v4 / Socket.IO v5 themselves (open, connect, ping/pong, events, acks), so that the
// client side costs little and the same for both variants. Socket i subscribes to {owner: "u<i>"}.
import { rawSocketIo } from '../lib/rawSocketIo.js';
import { answerCommands } from '../lib/helpers.js';

const nowUs = () => Number(process.hrtime.bigint() / 1000n);
/** Receipt time of each message, by its object's title. */
const received = new Map();
const sockets = [];
/** Live-query events received since the last 'count'. */
let delivered = 0;

function connect(port, index) {
  return new Promise((resolve, reject) => {
    const ws = rawSocketIo(port, {
      on: {
        connected() {
          ws.send(`42${JSON.stringify(['bench:owner', `u${index}`])}`);
          // Subscribe with an ack (id = index): '42<id>[...]', answered '43<id>[answer]'.
          ws.send(`42${index}${JSON.stringify(['svc:subscribe', { id: 's', path: '/todos', query: { owner: `u${index}` } }])}`);
        },
        ack(answer) {
          if (answer.ok) resolve(ws);
          else reject(new Error(JSON.stringify(answer)));
        },
        event(event, data) {
          if (event === 'svc:live' && data.object) {
            delivered++;
            if (data.object.title[0] !== 'p') received.set(data.object.title, nowUs());
          }
        },
      },
    });
    ws.on('error', reject);
  });
}

answerCommands(async (msg) => {
  let result;
  if (msg.cmd === 'connect') {
    for (let start = 0; start < msg.n; start += 200) {
      const batch = [];
      for (let i = start; i < Math.min(msg.n, start + 200); i++) batch.push(connect(msg.port, i));
      sockets.push(...(await Promise.all(batch)));
    }
    result = sockets.length;
  } else if (msg.cmd === 'received') {
    // Waits (briefly) for a title to arrive; answers its receipt time.
    const end = Date.now() + 5000;
    while (!received.has(msg.title) && Date.now() < end) await new Promise((r) => setImmediate(r));
    result = received.get(msg.title) ?? null;
    received.delete(msg.title);
  } else if (msg.cmd === 'count') {
    result = delivered;
    delivered = 0;
  }
  return result;
}, {
  close() {
    for (const s of sockets) s.terminate();
  },
});
