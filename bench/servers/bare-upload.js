// Baseline for bench/files.js: a bare node:http handler that writes each request's body to disk
// (a new file in a temporary folder, renamed over the one the previous upload to the same path
// left, as svc publishes a received file) and answers a short JSON. No routing, no store, no
// sniffing: what writing the same bytes to disk costs a Node server at least.
//
//   node bench/servers/bare-upload.js --port <p> --dir <folder>
import http from 'node:http';
import { createWriteStream, mkdirSync } from 'node:fs';
import { rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseArgs, exitOnSignals } from '../lib/args.js';

const args = parseArgs(process.argv.slice(2), { port: 'number', dir: 'string' });
if (!args.dir) throw new Error('--dir is required');
const tmp = join(args.dir, '.tmp');
mkdirSync(tmp, { recursive: true });
let n = 0;

const server = http.createServer(async (req, res) => {
  const part = join(tmp, `${process.pid}-${n++}.part`);
  try {
    await pipeline(req, createWriteStream(part, { flags: 'wx' }));
    await rename(part, join(args.dir, (req.url ?? '/').replace(/[^a-z0-9]/gi, '_')));
    const body = '{"ok":true}';
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': body.length });
    res.end(body);
  } catch {
    await unlink(part).catch(() => undefined);
    res.writeHead(400).end();
  }
});
server.listen(args.port ?? 0, '127.0.0.1', () => process.stdout.write(`listening on port ${server.address().port}\n`));
exitOnSignals(server);
