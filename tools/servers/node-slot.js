// A single-slot completions server, as a llama.cpp engine with one slot
// behind a Node front end runs: requests are read and parsed as they come,
// wait in a FIFO, and get the one slot in turn; the slot "prefills"
// (--prefill-ms of CPU) and then computes each token (--token-ms of CPU)
// and writes it as an SSE event (headers go with the first token). Between
// tokens the event loop reads new requests, so they wait in the
// application's queue, not in the socket. Ground truth, JSON lines
// (CLOCK_MONOTONIC ns, process.hrtime): per request x_request_id, read (its
// body complete), slot (the slot taken), first (first token written), done.
// Test tooling: Debian's nodejs, no packages.
//
//   node node-slot.js --port 8000 [--host 127.0.0.1] [--prefill-ms 8]
//       [--token-ms 4] [--truth FILE] [--ready-file F]
'use strict';
const http = require('http');
const fs = require('fs');

const args = {port: 8000, host: '127.0.0.1', prefillMs: 8, tokenMs: 4, truth: null, readyFile: null};
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i], v = process.argv[i + 1];
  if (k === '--port') args.port = Number(v);
  else if (k === '--host') args.host = v;
  else if (k === '--prefill-ms') args.prefillMs = Number(v);
  else if (k === '--token-ms') args.tokenMs = Number(v);
  else if (k === '--truth') args.truth = v;
  else if (k === '--ready-file') args.readyFile = v;
  else { console.error(`node-slot: unknown option ${k}`); process.exit(2); }
}
const truth = args.truth ? fs.openSync(args.truth, 'a') : null;
const now = () => process.hrtime.bigint();
// CPU work, as a model's compute holds the slot's thread
const spin = (ms) => { const end = now() + BigInt(Math.round(ms * 1e6)); while (now() < end); };

const queue = [];
let busy = false;
let seq = 0;

function run() {
  if (busy || !queue.length) return;
  busy = true;
  const job = queue.shift();
  job.slot = now();
  spin(args.prefillMs);
  let i = 0;
  const step = () => {
    if (i > 0) spin(args.tokenMs);
    if (i === 0) job.res.writeHead(200, {'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache',
                                         'X-Request-Id': job.xrid});
    if (i === job.n) {
      job.res.end('data: [DONE]\n\n');
      job.done = now();
      if (truth)
        fs.writeSync(truth, JSON.stringify({x_request_id: job.xrid, read: String(job.read),
                                            slot: String(job.slot), first: String(job.first),
                                            done: String(job.done)}) + '\n');
      busy = false;
      setImmediate(run);
      return;
    }
    job.res.write('data: ' + JSON.stringify({id: job.xrid, object: 'text_completion',
                                            choices: [{index: 0, text: ` tok${i}`}]}) + '\n\n');
    if (i === 0) job.first = now();
    i++;
    setImmediate(step); // new requests are read in between
  };
  step();
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const read = now();
    let body = {};
    try { body = JSON.parse(Buffer.concat(chunks).toString() || '{}'); } catch (e) { body = {}; }
    const xrid = req.headers['x-request-id'] || `slot-${process.pid}-${++seq}`;
    if (req.method !== 'POST' || req.url !== '/v1/completions') {
      res.writeHead(404, {'Content-Type': 'text/plain'});
      res.end('not found\n');
      return;
    }
    queue.push({res, xrid, read, n: Math.max(1, Number(body.max_tokens) || 8)});
    run();
  });
});
server.keepAliveTimeout = 60000;
server.listen(args.port, args.host, () => {
  if (args.readyFile) fs.writeFileSync(args.readyFile, 'ready\n');
});
