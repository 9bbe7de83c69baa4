// A buffering HTTP gateway, as API gateways that do not stream behave: each
// request is forwarded to the upstream (keep-alive, X-Forwarded-For added)
// and the whole response is read before any of it goes back to the client
// (one write, Content-Length). A streamed completion reaches the client all
// at once: its time to first token is the upstream's whole response. Test
// tooling: Debian's nodejs, no packages.
//
//   node buffer-proxy.js --port 8080 --upstream 127.0.0.1:8000 [--ready-file F]
'use strict';
const http = require('http');
const fs = require('fs');

const args = {port: 8080, host: '127.0.0.1', upstream: '127.0.0.1:8000', readyFile: null};
for (let i = 2; i < process.argv.length; i += 2) {
  const k = process.argv[i], v = process.argv[i + 1];
  if (k === '--port') args.port = Number(v);
  else if (k === '--host') args.host = v;
  else if (k === '--upstream') args.upstream = v;
  else if (k === '--ready-file') args.readyFile = v;
  else { console.error(`buffer-proxy: unknown option ${k}`); process.exit(2); }
}
const [upHost, upPort] = args.upstream.split(':');
const agent = new http.Agent({keepAlive: true, maxSockets: 16});

const server = http.createServer((req, res) => {
  const headers = Object.assign({}, req.headers);
  const peer = req.socket.remoteAddress.replace(/^::ffff:/, '');
  headers['x-forwarded-for'] = headers['x-forwarded-for'] ? `${headers['x-forwarded-for']}, ${peer}` : peer;
  const up = http.request({host: upHost, port: Number(upPort), method: req.method, path: req.url,
                           headers, agent}, (ur) => {
    const body = [];
    ur.on('data', (c) => body.push(c));
    ur.on('end', () => {
      const all = Buffer.concat(body), h = Object.assign({}, ur.headers);
      delete h['transfer-encoding'];
      delete h['connection'];
      h['content-length'] = all.length;
      res.writeHead(ur.statusCode, h);
      res.end(all);
    });
  });
  up.on('error', (e) => { res.writeHead(502); res.end(String(e)); });
  req.pipe(up);
});
server.keepAliveTimeout = 30000;
server.listen(args.port, args.host, () => {
  if (args.readyFile) fs.writeFileSync(args.readyFile, 'ready\n');
});
