// Node http2 client of tools/servers/node-h2.js that logs its own marks in
// loadgen's format: one connection, C concurrent streams, N requests each;
// total_ns from the request to the stream's end, ttft_ns to its first data,
// and the (only) JS thread's waits since the request: for a CPU
// (schedstat), with the machine's stolen time, and behind its own event
// loop's other work (first_busy_ns, end_busy_ns, part of the waits).
//   node h2_client.js PORT|URL OUT.jsonl C N [ID_PREFIX]
'use strict';
const http2 = require('http2');
const fs = require('fs');

const [port, out, c, n, prefix = 'h2-'] = process.argv.slice(2);
// this thread's time waiting for a CPU, plus the machine's stolen time
// (/proc/stat's steal, 10 ms ticks: time the hypervisor ran others; no
// schedstat shows it, and a mark taken after it is late by it)
const steal = () => BigInt(fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/)[8]) * 10000000n;
const runDelay = () => BigInt(fs.readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[1]) + steal();
// the event loop's time running callbacks (JIT, GC, the other streams'
// events): a stream's 'data' or 'end' waits behind them when its bytes
// arrive, on a CPU, so in no schedstat (a first mark came 5.7 ms after
// latsplit's with 4.6 ms of CPU waits, on a loaded host)
const { performance } = require('perf_hooks');
const busy = () => BigInt(Math.round(performance.eventLoopUtilization().active * 1e6));
const lines = [];
// H2_WINDOW=B: the client's SETTINGS_INITIAL_WINDOW_SIZE; H2_PAUSE_MS=M:
// every other request stops reading for M ms after its first data (the
// server's window then runs out: flow control holds its stream), and logs
// paused_ns, from its pause to its resume, by this client's own clock
const opts = process.env.H2_WINDOW ? {settings: {initialWindowSize: Number(process.env.H2_WINDOW)}} : {};
const pauseMs = Number(process.env.H2_PAUSE_MS || 0);
// PORT, or a URL: https://127.0.0.1:PORT for HTTP/2 over TLS (ALPN h2; the
// test's own certificate is not checked)
const session = /^https?:/.test(port) ? http2.connect(port, {rejectUnauthorized: false, ...opts})
                                       : http2.connect(`http://127.0.0.1:${port}`, opts);

function one(id, log = true, pause = false) {
  return new Promise((resolve) => {
    let paused = null;
    let d0 = runDelay(), b0 = busy();
    let t0 = process.hrtime.bigint();
    let first = null, firstWait = null, firstBusy = null;
    const req = session.request({':method': 'POST', ':path': '/v1/completions',
                                 'content-type': 'application/json', 'x-request-id': id});
    // the stream exists (its HEADERS handed to the session's writer): before
    // that, the request waited in this client's own event loop
    req.on('ready', () => { d0 = runDelay(); b0 = busy(); t0 = process.hrtime.bigint(); });
    // Node writes the HEADERS when its loop turns (a native immediate):
    // until this client's own immediate runs, the bytes may not have left,
    // so that time is the client's (start_wait_ns: a range, as CPU waits)
    let startLag = 0n;
    setImmediate(() => { startLag = process.hrtime.bigint() - t0; });
    req.on('data', () => {
      if (first === null) {
        first = process.hrtime.bigint();
        firstBusy = busy() - b0;
        firstWait = runDelay() - d0 + firstBusy;
        if (pause) {
          req.pause();
          setTimeout(() => { paused = process.hrtime.bigint() - first; req.resume(); }, pauseMs);
        }
      }
    });
    req.on('end', () => {
      const t1 = process.hrtime.bigint(), endBusy = busy() - b0;
      if (log) lines.push(JSON.stringify({x_request_id: id, total_ns: Number(t1 - t0), ttft_ns: Number(first - t0),
                                 start_wait_ns: Number(startLag), first_wait_ns: Number(firstWait),
                                 end_wait_ns: Number(runDelay() - d0 + endBusy),
                                 first_busy_ns: Number(firstBusy), end_busy_ns: Number(endBusy),
                                 ...(paused !== null ? {paused_ns: Number(paused)} : {})}));
      resolve();
    });
    req.on('error', (e) => { lines.push(JSON.stringify({x_request_id: id, error: String(e)})); resolve(); });
    req.end('{"prompt": "hello", "max_tokens": 8, "stream": true}');
  });
}

async function worker(k) {
  // unlogged first requests: the JIT compiles this client's own paths
  // (its first marks came 3 ms late), on the same connection
  for (let i = 0; i < 3; i++) await one(`warm-${k}-${i}`, false);
  for (let i = 0; i < Number(n); i++) {
    await one(`${prefix}${k}-${i}`, true, pauseMs > 0 && i % 2 === 1);
    await new Promise((r) => setTimeout(r, 10));
  }
}

session.on('connect', async () => {
  await Promise.all([...Array(Number(c)).keys()].map(worker));
  fs.writeFileSync(out, lines.join('\n') + '\n');
  session.close();
});
