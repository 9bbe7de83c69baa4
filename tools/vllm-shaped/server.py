"""A vLLM-shaped test engine: the API server process (FastAPI on uvicorn,
asyncio, one event loop under the GIL) and, started by it, an engine-core
process (core.py) reached over ZMQ, as vLLM V1 splits AsyncLLM and
EngineCore. POST /v1/completions (OpenAI-style JSON; "stream": true gives
SSE) is parsed and "tokenized" here (real CPU work under the GIL), handed to
the core, and its tokens are streamed back as they come.

Ground truth (--truth FILE, JSON lines, CLOCK_MONOTONIC ns): per request
from this process {"side":"api", x_request_id, http_read (uvicorn's
data_received of the request's last bytes), api_entry (handler entry),
sent_to_core}, and from the core {core_recv, scheduled, first_token,
finished}. Test tooling only: Debian's python3-fastapi, -uvicorn, -zmq,
-numpy, -uvloop, -httptools. Like vLLM's API server it runs uvicorn on
uvloop with httptools by default (every streamed response then ends in one
writev); --loop asyncio --http h11 is the pure-Python variant.

  /usr/bin/python3 tools/vllm-shaped/server.py --port 8000 [--truth T.jsonl]
      [--max-running 4] [--step-us 3000] [--tokenize-us-per-byte 0.5]
      [--ready-file F] [--no-engine-events] [--loop uvloop|asyncio] [--http httptools|h11]
      [--uds PATH] [--otlp-traces-endpoint URL [--otlp-delay-ms 1000]]

--otlp-traces-endpoint: as vLLM with OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=
http/protobuf: no latsplit engine events; each request, once finished,
becomes one `llm_request` span (kind SERVER) with vLLM V1's attributes:
start at arrival (time.time(), the wall clock), gen_ai.request.id
("cmpl-<X-Request-Id>-0"), gen_ai.latency.time_in_queue (the core's
scheduled - queued), .time_to_first_token (this process's receipt of the
first token - arrival), .e2e, .time_in_model_prefill (core first token -
scheduled), .time_in_model_decode, .time_in_model_inference (seconds, as
doubles), gen_ai.usage.prompt_tokens / completion_tokens; trace context from
the request's traceparent. Spans go out in batches every --otlp-delay-ms (an
SDK batch processor's schedule), encoded with classes protoc generates from
the repository's official .proto files (python3-protobuf); --otlp-json sends
OTLP's JSON encoding instead.
"""
import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time

import uvicorn
import zmq
import zmq.asyncio
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, default=8000)
ap.add_argument("--host", default="127.0.0.1")
ap.add_argument("--truth")
ap.add_argument("--ready-file")
ap.add_argument("--max-running", type=int, default=4)
ap.add_argument("--step-us", type=int, default=3000)
ap.add_argument("--prefill-us-per-token", type=float, default=20.0)
ap.add_argument("--tokenize-us-per-byte", type=float, default=0.5)
ap.add_argument("--no-engine-events", action="store_true")
# vLLM runs uvicorn on uvloop with httptools; asyncio + h11 is the variant
ap.add_argument("--loop", default="uvloop", choices=["uvloop", "asyncio"])
ap.add_argument("--http", default="httptools", choices=["httptools", "h11"])
ap.add_argument("--uds", help="serve on this unix socket instead of TCP (uvicorn --uds)")
ap.add_argument("--ssl-certfile", help="serve HTTPS with this certificate (uvicorn --ssl-certfile)")
ap.add_argument("--ssl-keyfile", help="... and this key")
ap.add_argument("--otlp-traces-endpoint", help="send llm_request spans here (OTLP/HTTP protobuf)")
ap.add_argument("--otlp-delay-ms", type=int, default=1000, help="batch schedule of the span export")
ap.add_argument("--otlp-json", action="store_true",
                help="send OTLP/HTTP JSON (ids in hex, enums as integers), not protobuf")
ap.add_argument("--span-random-id", action="store_true",
                help="gen_ai.request.id cmpl-<random>, as vLLM without --enable-request-id-headers")
args = ap.parse_args()


class SpanExport:
    """vLLM's llm_request spans, batched and POSTed as OTLP/HTTP protobuf."""

    def __init__(self, url, delay_ms):
        import queue
        import threading
        import urllib.request
        gen = tempfile.mkdtemp(prefix="vllm-shaped-pb-")
        proto = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "proto")
        names = ["opentelemetry/proto/" + p for p in ("common/v1/common.proto",
                 "resource/v1/resource.proto", "trace/v1/trace.proto",
                 "collector/trace/v1/trace_service.proto")]
        subprocess.run(["protoc", "--python_out=" + gen, "-I" + proto] + names, check=True)
        sys.path.insert(0, gen)
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
        from opentelemetry.proto.trace.v1 import trace_pb2
        self.svc, self.tr, self.url, self.delay = trace_service_pb2, trace_pb2, url, delay_ms / 1000
        self.req = urllib.request
        self.q = queue.Queue()
        self.sent = self.failed = 0
        threading.Thread(target=self.loop, daemon=True).start()

    def add(self, **kw):
        self.q.put(kw)

    def loop(self):
        while True:
            time.sleep(self.delay)
            batch = []
            while not self.q.empty():
                batch.append(self.q.get())
            if batch:
                self.post(batch)

    def post(self, batch):
        body = self.svc.ExportTraceServiceRequest()
        rs = body.resource_spans.add()
        kv = rs.resource.attributes.add()
        kv.key, kv.value.string_value = "service.name", "vllm"
        ss = rs.scope_spans.add()
        ss.scope.name = "vllm.llm_engine"
        for b in batch:
            sp = ss.spans.add()
            sp.name, sp.kind = "llm_request", self.tr.Span.SPAN_KIND_SERVER
            sp.trace_id, sp.span_id = b["trace_id"], os.urandom(8)
            if b.get("parent"):
                sp.parent_span_id = b["parent"]
            sp.start_time_unix_nano, sp.end_time_unix_nano = b["start"], b["end"]
            for k, v in b["attrs"].items():
                a = sp.attributes.add()
                a.key = k
                if isinstance(v, str):
                    a.value.string_value = v
                elif isinstance(v, float):
                    a.value.double_value = v
                else:
                    a.value.int_value = v
        data, ctype = body.SerializeToString(), "application/x-protobuf"
        if args.otlp_json:  # OTLP's JSON: proto3's mapping, but ids in hex, enums as integers
            import base64
            from google.protobuf import json_format
            d = json_format.MessageToDict(body, use_integers_for_enums=True)
            for rs_ in d.get("resourceSpans", []):
                for ss_ in rs_.get("scopeSpans", []):
                    for sp_ in ss_.get("spans", []):
                        for k in ("traceId", "spanId", "parentSpanId"):
                            if k in sp_:
                                sp_[k] = base64.b64decode(sp_[k]).hex()
            data, ctype = json.dumps(d).encode(), "application/json"
        r = self.req.Request(self.url, data=data, method="POST", headers={"Content-Type": ctype})
        try:
            self.req.urlopen(r, timeout=5).read()
            self.sent += len(batch)
        except Exception as e:  # the SDK logs and drops; so do we, counted
            self.failed += len(batch)
            print(f"vllm-shaped: span export failed: {e}", file=sys.stderr)


spans = SpanExport(args.otlp_traces_endpoint, args.otlp_delay_ms) if args.otlp_traces_endpoint else None

# When the request's bytes were handed to the protocol: uvicorn's
# data_received, stamped per connection (the truth's http_read).
READ_AT = {}


def _stamp(cls):
    orig = cls.data_received

    def data_received(self, data):
        peer = self.transport.get_extra_info("peername")
        READ_AT[peer[:2] if peer else None] = time.monotonic_ns()
        return orig(self, data)

    cls.data_received = data_received


for modname in ("h11_impl", "httptools_impl"):
    try:
        mod = __import__("uvicorn.protocols.http." + modname, fromlist=["x"])
        _stamp(getattr(mod, "H11Protocol" if modname == "h11_impl" else "HttpToolsProtocol"))
    except Exception:
        pass

sockdir = tempfile.mkdtemp(prefix="vllm-shaped-")
IN_ADDR, OUT_ADDR = f"ipc://{sockdir}/in", f"ipc://{sockdir}/out"
truth = open(args.truth, "a", buffering=1) if args.truth else None
zctx = zmq.asyncio.Context()
to_core = zctx.socket(zmq.PUSH)
from_core = zctx.socket(zmq.PULL)
from_core.bind(OUT_ADDR)
streams = {}  # x_request_id -> asyncio.Queue of (index, last)
core = None
app = FastAPI()


async def pump():
    while True:
        msg = await from_core.recv_json()
        q = streams.get(msg["xrid"])
        if q:
            q.put_nowait(msg)


@app.on_event("startup")
async def startup():
    global core
    cmd = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "core.py"),
           "--in-addr", IN_ADDR, "--out-addr", OUT_ADDR, "--max-running", str(args.max_running),
           "--step-us", str(args.step_us), "--prefill-us-per-token", str(args.prefill_us_per_token)]
    if args.truth:
        cmd += ["--truth", args.truth]
    if args.no_engine_events or spans:
        cmd.append("--no-engine-events")
    core = subprocess.Popen(cmd)
    to_core.connect(IN_ADDR)
    asyncio.get_running_loop().create_task(pump())
    if args.ready_file:
        open(args.ready_file, "w").close()


@app.on_event("shutdown")
async def shutdown():
    try:
        await to_core.send_json({"op": "stop"})
    except Exception:
        pass
    if core:
        try:
            core.wait(timeout=2)
        except subprocess.TimeoutExpired:
            core.kill()


def tokenize(prompt):
    # real CPU work under the GIL, as a tokenizer's
    n = int(len(prompt) * args.tokenize_us_per_byte * 4)
    h = 0
    for i in range(n):
        h = (h * 31 + i) & 0xFFFFFFFF
    return max(1, len(prompt) // 4)


_seq = 0


@app.post("/v1/completions")
async def completions(request: Request):
    global _seq
    entry = time.monotonic_ns()
    arrival = time.time()  # vLLM: the request's arrival_time, on the wall clock
    client = request.client
    http_read = READ_AT.get((client.host, client.port) if client else None, 0)
    body = await request.json()
    xrid = request.headers.get("x-request-id")
    if not xrid:
        _seq += 1
        xrid = f"vs-{os.getpid()}-{_seq}"
    prompt = str(body.get("prompt", ""))
    max_tokens = max(1, int(body.get("max_tokens", 16)))
    prompt_tokens = tokenize(prompt)
    q = asyncio.Queue()
    streams[xrid] = q
    sent = time.monotonic_ns()
    await to_core.send_json({"xrid": xrid, "prompt_tokens": prompt_tokens,
                             "max_tokens": max_tokens})
    if truth:
        truth.write(json.dumps({"side": "api", "x_request_id": xrid, "http_read": http_read,
                                "api_entry": entry, "sent_to_core": sent}) + "\n")

    marks = {}

    async def tokens():
        try:
            while True:
                msg = await q.get()
                if msg["i"] == 1:
                    marks["first_wall"] = time.time()
                    marks.update({k: msg[k] for k in ("queued", "scheduled", "first") if k in msg})
                if msg["last"]:
                    marks["last_token"] = msg.get("last_token", 0)
                    if spans:
                        llm_span(marks)
                yield msg
                if msg["last"]:
                    return
        finally:
            streams.pop(xrid, None)

    def llm_span(m):
        """vLLM V1's OutputProcessor.do_tracing, on this request's marks."""
        now = time.time()
        tp = request.headers.get("traceparent", "")
        parts = tp.split("-")
        trace_id, parent = os.urandom(16), None
        if len(parts) == 4 and len(parts[1]) == 32 and len(parts[2]) == 16:
            trace_id, parent = bytes.fromhex(parts[1]), bytes.fromhex(parts[2])
        s = 1e-9  # the core's marks are monotonic ns; vLLM's intervals are seconds
        rid = f"cmpl-{os.urandom(16).hex()}" if args.span_random_id else f"cmpl-{xrid}-0"
        attrs = {"gen_ai.response.model": "mock", "gen_ai.request.id": rid,
                 "gen_ai.request.max_tokens": max_tokens,
                 "gen_ai.latency.time_to_first_token": m["first_wall"] - arrival,
                 "gen_ai.latency.e2e": now - arrival,
                 "gen_ai.latency.time_in_queue": (m["scheduled"] - m["queued"]) * s,
                 "gen_ai.usage.prompt_tokens": prompt_tokens,
                 "gen_ai.usage.completion_tokens": max_tokens,
                 "gen_ai.latency.time_in_model_prefill": (m["first"] - m["scheduled"]) * s,
                 "gen_ai.latency.time_in_model_decode": (m["last_token"] - m["first"]) * s,
                 "gen_ai.latency.time_in_model_inference": (m["last_token"] - m["scheduled"]) * s}
        spans.add(trace_id=trace_id, parent=parent, start=int(arrival * 1e9), end=int(now * 1e9),
                  attrs=attrs)

    headers = {"X-Request-Id": xrid}
    if body.get("stream"):
        async def sse():
            async for m in tokens():
                yield "data: " + json.dumps({"id": xrid, "object": "text_completion",
                                             "choices": [{"index": 0, "text": f" tok{m['i']}"}]}) + "\n\n"
            yield "data: [DONE]\n\n"
        return StreamingResponse(sse(), media_type="text/event-stream", headers=headers)
    text = "".join([f" tok{m['i']}" async for m in tokens()])
    return JSONResponse({"id": xrid, "object": "text_completion",
                         "choices": [{"index": 0, "text": text}]}, headers=headers)


if __name__ == "__main__":
    where = {"uds": args.uds} if args.uds else {"host": args.host, "port": args.port}
    if args.ssl_certfile:
        where.update(ssl_certfile=args.ssl_certfile, ssl_keyfile=args.ssl_keyfile)
    uvicorn.run(app, **where, loop=args.loop, http=args.http, log_level="warning", access_log=False)
