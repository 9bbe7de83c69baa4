// A Node `http` streaming completions server, as node-llama-cpp front ends
// and OpenAI-compatible Node servers write: POST /v1/completions answers with
// chunked text/event-stream, one res.write() per token (Node sends each as
// writev([size line, data, CRLF])), then "data: [DONE]". Non-streaming
// requests get one JSON body. Test tooling: Debian's nodejs, no packages.
//
//   node node-stream.js --port 8000 [--host 127.0.0.1] [--step-ms 3] [--ready-file F]
'use strict';
const http = require('http');
const fs = require('fs');

const args = {port: 8000, host: '127.0.0.1', stepMs: 3, readyFile: null};
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i], v = process.argv[i + 1];
  if (k === '--port') args.port = Number(v);
  else if (k === '--host') args.host = v;
  else if (k === '--step-ms') args.stepMs = Number(v);
  else if (k === '--ready-file') args.readyFile = v;
  else { console.error(`node-stream: unknown option ${k}`); process.exit(2); }
}

let seq = 0;
const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body = {};
    try { body = JSON.parse(Buffer.concat(chunks).toString() || '{}'); } catch (e) { body = {}; }
    const xrid = req.headers['x-request-id'] || `node-${process.pid}-${++seq}`;
    const n = Math.max(1, Number(body.max_tokens) || 16);
    if (req.method !== 'POST' || req.url !== '/v1/completions') {
      res.writeHead(404, {'Content-Type': 'text/plain', 'X-Request-Id': xrid});
      res.end('not found\n');
      return;
    }
    if (!body.stream) {
      setTimeout(() => {
        const text = Array.from({length: n}, (_, i) => ` tok${i}`).join('');
        res.writeHead(200, {'Content-Type': 'application/json', 'X-Request-Id': xrid});
        res.end(JSON.stringify({id: xrid, object: 'text_completion', choices: [{index: 0, text}]}));
      }, args.stepMs * n);
      return;
    }
    res.writeHead(200, {'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache',
                        'X-Request-Id': xrid});
    let i = 0;
    const next = () => {
      if (i === n) {
        res.write('data: [DONE]\n\n');
        res.end();
        return;
      }
      res.write('data: ' + JSON.stringify({id: xrid, object: 'text_completion',
                                          choices: [{index: 0, text: ` tok${i}`}]}) + '\n\n');
      i++;
      setTimeout(next, args.stepMs);
    };
    setTimeout(next, args.stepMs);
  });
});
server.keepAliveTimeout = 30000;
server.listen(args.port, args.host, () => {
  if (args.readyFile) fs.writeFileSync(args.readyFile, '');
});
process.on('SIGTERM', () => process.exit(0));
process.on('SIGINT', () => process.exit(0));
