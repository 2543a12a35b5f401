#!/usr/bin/env bash
# The store torture (gateway/server/src/test/.../faults/torture/StoreTortureIntegrationTest) for a long run: the wire
# torture's randomized exchanges, wire faults and concurrent duplicates, with the gateway reaching its Redis (AOF,
# appendfsync always) through a fault proxy while a store nemesis delays replies beyond store-timeout (300 ms), stalls,
# resets, closes and half-opens the connections and restarts Redis (keeping or forgetting its records); then the
# invariants over the Redis records and the upstream log. The CI test command runs it for 1,000 exchanges; this runs it
# for EXCHANGES (100,000 by default).
#
#   load-tests/store-torture.sh                                 # 100,000 exchanges, a fresh seed, every store fault
#   SEED=21 EXCHANGES=1000 load-tests/store-torture.sh          # replay a seed printed by a failed run
#   STORE_FAULTS=delay,halfopen load-tests/store-torture.sh     # only these store faults (docs/load-tests.md, Store torture)
#
# Settings (environment): EXCHANGES (100000), SEED (fresh), THREADS client threads (12), FAULTS wire faults (all),
# STORE_FAULTS (all: delay,stall,reset,close,halfopen,restart,restart-forgetting), RESTART gateway restart mid-run
# true|false (false), MVN_FLAGS extra Maven flags (e.g. -o). The report is printed and written to
# gateway/server/target/torture/store-torture-<seed>.txt, one line per key in store-torture-<seed>-keys.tsv.
set -euo pipefail
cd "$(dirname "$0")/.."

EXCHANGES="${EXCHANGES:-100000}"
THREADS="${THREADS:-12}"
RESTART="${RESTART:-false}"
args=(-Dtorture.exchanges="$EXCHANGES" -Dtorture.threads="$THREADS" -Dtorture.restart="$RESTART"
  -Dlogging.level.reactor.core.publisher.Operators=OFF)
[[ -n "${SEED:-}" ]] && args+=(-Dtorture.seed="$SEED")
[[ -n "${FAULTS:-}" ]] && args+=(-Dtorture.faults="$FAULTS")
[[ -n "${STORE_FAULTS:-}" ]] && args+=(-Dtorture.store-faults="$STORE_FAULTS")

started=$(date +%s)
status=0
# shellcheck disable=SC2086 # MVN_FLAGS is a list of flags
./mvnw -B -q ${MVN_FLAGS:-} -pl gateway/server -am test -Dtest=StoreTortureIntegrationTest -Dsurefire.failIfNoSpecifiedTests=false "${args[@]}" || status=$?
report=$(ls -t gateway/server/target/torture/store-torture-*.txt 2>/dev/null | head -1)
echo "== $(date -u +%Y-%m-%dT%H:%M:%SZ), $(nproc) cores, $(uname -sm), $(( $(date +%s) - started )) s wall clock"
[[ -n "$report" ]] && cat "$report"
exit "$status"
