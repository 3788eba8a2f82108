// Baseline "ceiling": bare node:http answering every request with the same fixed bytes (the
// response svc gives for the scenario's route, captured by the harness). No routing, no session,
// no store: what any Node server pays at least to answer this request with this body.
//
//   node bench/servers/bare-http.js --port <p> --body-file <file> [--status 200]
//                                   [--content-type 'application/json; charset=utf-8']
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { parseArgs, exitOnSignals } from '../lib/args.js';

const args = parseArgs(process.argv.slice(2), {
  port: 'number',
  'body-file': 'string',
  status: 'number',
  'content-type': 'string',
});
if (!args['body-file']) throw new Error('--body-file is required');
const body = readFileSync(args['body-file']);
const status = args.status ?? 200;
const headers = {
  'content-type': args['content-type'] ?? 'application/json; charset=utf-8',
  'content-length': body.length,
};

const server = http.createServer((req, res) => {
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
