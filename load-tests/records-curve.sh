#!/usr/bin/env bash
# The cost curve as the store grows: first writes and replays of our server (the runnable gateway with
# config/application.yml, record counts on: every 60 s it reads every record) with 10^3 to 10^6 completed records
# in Redis, each size in a fresh Redis and a fresh JVM, measured as load-tests/peers.sh measures. The rows go to
# load-tests/target/peers/records-curve.md.
#
#   load-tests/records-curve.sh                    # about 12 minutes
#   COUNTS="1000 1000000" load-tests/records-curve.sh
set -euo pipefail
cd "$(dirname "$0")/.."
out=load-tests/target/peers
COUNTS="${COUNTS:-1000 10000 100000 1000000}"
rows="$out/records-curve-rows.md"
mkdir -p "$out"
: > "$rows"
for count in $COUNTS; do
  echo "$count records in the store"
  RECORDS="$count" JVMS="${JVMS:-server}" TARGETS="${TARGETS:-plain first-writes replays}" WARMUP="${WARMUP:-10}" \
    WARMUP_PASSES="${WARMUP_PASSES:-2}" DURATION="${DURATION:-10}" ROUNDS="${ROUNDS:-3}" load-tests/peers.sh \
    > "$out/records-curve-$count.log" 2>&1
  grep -E '^\| (server|minimal) ' "$out/peers.md" | sed "s/^| /| $count | /" | tee -a "$rows"
done
{ echo "| records | JVM | target | req/s | vs plain route | p50 | p99 | non-2xx | CPU per request: gateway | Redis | whole machine |"
  echo "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
  cat "$rows"; } > "$out/records-curve.md"
echo; cat "$out/records-curve.md"
