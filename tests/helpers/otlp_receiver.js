// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// An OTLP/HTTP trace receiver for the tests, decoding with the OpenTelemetry
// project's own code: @opentelemetry/otlp-transformer's generated protobuf
// root (protobufjs, from the same opentelemetry-proto files). Every span
// received is written as one JSON line: ids in hex, times and integer
// attributes as decimal strings (exact: ns do not fit a double).
// Usage: node otlp_receiver.js ROOT_JS PORT OUT.jsonl READY_FILE [FAIL_FIRST]
//   FAIL_FIRST: answer the first N POSTs 503 (the exporter must retry).
'use strict';
const http = require('http');
const fs = require('fs');

const [rootJs, port, outPath, readyPath, failFirst] = process.argv.slice(2);
const root = require(rootJs);
const v1 = root.opentelemetry.proto.collector.trace.v1;
const out = fs.createWriteStream(outPath, { flags: 'a' });
let posts = 0;
let toFail = Number(failFirst || 0);

const hex = (b) => (b && b.length ? Buffer.from(b).toString('hex') : '');
const str = (x) => (x === undefined || x === null ? null : x.toString());

// the oneof's own discriminator (protobufjs's virtual `value` field)
function value(v) {
  const k = v.value;
  if (k === 'intValue') return str(v.intValue);
  return k ? v[k] : null;
}

function attrs(list) {
  const o = {};
  for (const kv of list || []) o[kv.key] = value(kv.value || {});
  return o;
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    posts++;
    if (req.method !== 'POST' || req.url !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    if (req.headers['content-type'] !== 'application/x-protobuf') {
      res.writeHead(415).end();
      return;
    }
    if (toFail > 0) {
      toFail--;
      res.writeHead(503).end();
      return;
    }
    let msg;
    try {
      msg = v1.ExportTraceServiceRequest.decode(Buffer.concat(chunks));
    } catch (e) {
      res.writeHead(400).end(String(e));
      return;
    }
    for (const rs of msg.resourceSpans || []) {
      const resource = attrs(rs.resource && rs.resource.attributes);
      for (const ss of rs.scopeSpans || []) {
        for (const s of ss.spans || []) {
          out.write(JSON.stringify({
            post: posts, resource, scope: ss.scope && ss.scope.name,
            trace_id: hex(s.traceId), span_id: hex(s.spanId), parent_span_id: hex(s.parentSpanId),
            name: s.name, kind: s.kind, flags: s.flags,
            start: str(s.startTimeUnixNano), end: str(s.endTimeUnixNano),
            status: s.status ? s.status.code : 0, attributes: attrs(s.attributes),
          }) + '\n');
        }
      }
    }
    const body = v1.ExportTraceServiceResponse.encode({}).finish();
    res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end(Buffer.from(body));
  });
});
server.listen(Number(port), '127.0.0.1', () => fs.writeFileSync(readyPath, 'ready\n'));
process.on('SIGTERM', () => out.end(() => process.exit(0)));
