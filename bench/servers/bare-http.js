// Baseline "ceiling": bare node:http answering every request with the same fixed bytes (the
// response svc gives for the scenario's route, captured by the harness). No routing, no session,
// no store: what any Node server pays at least to answer this request with this body.
//
//   node bench/servers/bare-http.js --port <p> --body-file <file> [--status 200]
//                                   [--content-type 'application/json; charset=utf-8'] [--spend-us <n>]
//
// --spend-us: the server spins that many µs of its own per request before answering (a slower
// server with the same bytes: bench/rate-kernel.js).
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { parseArgs, exitOnSignals } from '../lib/args.js';

const args = parseArgs(process.argv.slice(2), {
  port: 'number',
  'body-file': 'string',
  status: 'number',
  'content-type': 'string',
  'spend-us': 'number',
});
if (!args['body-file']) throw new Error('--body-file is required');
const body = readFileSync(args['body-file']);
const status = args.status ?? 200;
const headers = {
  'content-type': args['content-type'] ?? 'application/json; charset=utf-8',
  'content-length': body.length,
};

// Spun as arithmetic, calibrated once: reading the clock in the loop would be system calls of its
// own on a machine whose clock source is not read in user space.
let sink = 0;
const spin = (n) => {
  let x = sink;
  for (let i = 0; i < n; i++) x = (x * 1103515245 + 12345) | 0;
  sink = x;
};
const spendUs = args['spend-us'] ?? 0;
let spinsPerUs = 0;
if (spendUs > 0) {
  spin(1e6);
  const started = process.hrtime.bigint();
  spin(2e7);
  spinsPerUs = 2e7 / (Number(process.hrtime.bigint() - started) / 1000);
}
const spins = Math.round(spendUs * spinsPerUs);
const spend = () => spin(spins);

const server = http.createServer((req, res) => {
  if (spins > 0) spend();
  if (req.headers['content-length'] || req.headers['transfer-encoding']) {
    // Read (and drop) the request body before answering, as any real handler would.
    req.on('data', () => {});
    req.on('end', () => {
      res.writeHead(status, headers);
      res.end(body);
    });
    return;
  }
  res.writeHead(status, headers);
  res.end(body);
});

server.listen(args.port ?? 0, '127.0.0.1', () => {
  process.stdout.write(`listening on port ${server.address().port}\n`);
});
exitOnSignals(server);
