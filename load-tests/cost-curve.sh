#!/usr/bin/env bash
# The cost curve by body size: first writes and replays of minimal-gateway (the library alone, so that the server's
# own tax does not blur it) as the request body grows, each size measured as load-tests/peers.sh measures, with the
# plain route beside it. The rows go to load-tests/target/peers/cost-curve.md.
#
#   load-tests/cost-curve.sh                    # about 15 minutes
#   SIZES="1000 100000" load-tests/cost-curve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=load-tests/target/peers
SIZES="${SIZES:-1000 10000 100000 1000000}"
rows="$out/cost-curve-rows.md"
mkdir -p "$out"
: > "$rows"
for size in $SIZES; do
  echo "Body of about $size bytes"
  # 1,000,000 bytes stays under the default max-request-bytes (1MB = 1,048,576).
  BODY_BYTES="$size" JVMS=minimal TARGETS="${TARGETS:-plain first-writes replays}" WARMUP="${WARMUP:-10}" \
    WARMUP_PASSES="${WARMUP_PASSES:-2}" DURATION="${DURATION:-8}" ROUNDS="${ROUNDS:-3}" load-tests/peers.sh > "$out/cost-curve-$size.log" 2>&1
  grep '^| minimal' "$out/peers.md" | sed "s/^| minimal /| $size /" | tee -a "$rows"
done
{ echo "| body bytes | target | req/s | vs plain route | p50 | p99 | non-2xx | CPU per request: gateway | Redis | whole machine |"
  echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  cat "$rows"; } > "$out/cost-curve.md"
echo; cat "$out/cost-curve.md"
