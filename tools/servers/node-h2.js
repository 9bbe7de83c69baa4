// An OpenAI-shaped streaming server on Node's http2 (cleartext, prior
// knowledge): each stream's response is text/event-stream, TOKENS events
// one every TOKEN_MS after PREFILL_MS, then "data: [DONE]".
//   node node-h2.js --port P [--ready-file F] [--tokens 8 --token-ms 10 --prefill-ms 20]
//                   [--token-bytes N: each event's text padded to N bytes]
'use strict';
const http2 = require('http2');
const fs = require('fs');

const arg = (name, def) => {
  const i = process.argv.indexOf('--' + name);
  return i > 0 ? process.argv[i + 1] : def;
};
const port = Number(arg('port'));
const tokens = Number(arg('tokens', 8)), tokenMs = Number(arg('token-ms', 10));
const prefillMs = Number(arg('prefill-ms', 20));
const pad = 'x'.repeat(Math.max(0, Number(arg('token-bytes', 0)) - 40));

const server = http2.createServer();
server.on('stream', (stream, headers) => {
  stream.on('data', () => {});
  stream.on('end', () => {
    stream.respond({':status': 200, 'content-type': 'text/event-stream',
                    'x-request-id': headers['x-request-id'] || ''});
    let i = 0;
    const tick = () => {
      if (stream.destroyed) return;
      if (i < tokens) {
        stream.write(`data: {"choices":[{"text":"token ${i}${pad}"}]}\n\n`);
        i++;
        setTimeout(tick, tokenMs);
      } else {
        stream.end('data: [DONE]\n\n');
      }
    };
    setTimeout(tick, prefillMs);
  });
});
server.listen(port, '127.0.0.1', () => {
  const ready = arg('ready-file');
  if (ready) fs.writeFileSync(ready, '');
});
