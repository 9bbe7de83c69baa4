#!/usr/bin/env bash
# Records tests/golden/mock.data, the fixed capture behind the golden
# outputs (tests/integration/test_golden.sh). Run by hand, as root, only when
# the capture format changes on purpose; then regenerate the outputs with
# GOLDEN_UPDATE=1 and review the diff. The mock engine with every source:
# engine events, simulated GPU copies and kernels, stacks; 12 streaming
# requests over loopback from 3 clients.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=tests/golden/mock.data
rm -f "$out" /tmp/golden.ready
build/latsplit record -o "$out" -F 99 -- build/mock-engine --port 18999 --bind 127.0.0.1 \
  --max-batch 2 --host-us 300 --h2d-us 500 --d2h-us 200 --token-ms 2 --delay-ms 3 \
  --ready-file /tmp/golden.ready 2>/tmp/golden.rec &
rpid=$!
while [[ ! -e /tmp/golden.ready ]]; do sleep 0.05; done
build/loadgen --port 18999 -c 3 -n 12 --stream --max-tokens 8 --prompt-bytes 300 --id-prefix g- \
  2>/dev/null >/dev/null
sleep 0.5
kill -INT $rpid; wait $rpid
ls -l "$out"
