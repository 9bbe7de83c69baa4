#!/usr/bin/python3
"""A gRPC server-streaming service, the way Triton and TensorRT-LLM stream
tokens: /llm.Generate/Stream takes "TOKENS,TOKEN_MS,PREFILL_MS[,PROMPT]" as raw bytes
(no generated code: a generic handler with no serializers) and streams
TOKENS messages, one every TOKEN_MS, after PREFILL_MS. Cleartext HTTP/2.

  grpc-stream.py --port P [--ready-file F]
"""
import argparse
import time
from concurrent import futures

import grpc


def stream(request, context):
    tokens, token_ms, prefill_ms = (int(x) for x in request.decode().split(",")[:3])
    time.sleep(prefill_ms / 1000)
    for i in range(tokens):
        if i:
            time.sleep(token_ms / 1000)
        yield b"token %04d " % i + b"x" * 24


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--ready-file")
    a = ap.parse_args()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
        "llm.Generate", {"Stream": grpc.unary_stream_rpc_method_handler(stream)}),))
    server.add_insecure_port(f"127.0.0.1:{a.port}")
    server.start()
    if a.ready_file:
        open(a.ready_file, "w").close()
    server.wait_for_termination()


if __name__ == "__main__":
    main()
