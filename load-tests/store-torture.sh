#!/usr/bin/env bash
# The store torture (gateway/server/src/test/.../faults/torture/StoreTortureIntegrationTest) for a long run: the wire
# torture's randomized exchanges, wire faults and concurrent duplicates, with the gateway reaching its Redis (AOF,
# appendfsync always) through a fault proxy while a store nemesis delays replies beyond store-timeout (300 ms), stalls,
# resets, closes and half-opens the connections and restarts Redis (keeping or forgetting its records); then the
# invariants over the Redis records and the upstream log. TOPOLOGY=sentinel|cluster runs it on a Sentinel-managed
# master and replica, or a three-master Cluster with a replica each, whose masters the nemesis fails over instead
# (manual failovers and SIGKILLs). The CI test command runs each topology once (1,000 exchanges standalone, 400 on
# Sentinel and on Cluster); this runs one for EXCHANGES (100,000 by default).
#
#   load-tests/store-torture.sh                                 # 100,000 exchanges, a fresh seed, every store fault
#   SEED=21 EXCHANGES=1000 load-tests/store-torture.sh          # replay a seed printed by a failed run
#   STORE_FAULTS=delay,halfopen load-tests/store-torture.sh     # only these store faults (docs/load-tests.md, Store torture)
#   TOPOLOGY=cluster EXCHANGES=5000 load-tests/store-torture.sh # failovers of a Cluster's masters
#
# Settings (environment): EXCHANGES (100000), SEED (fresh), THREADS client threads (12), FAULTS wire faults (all),
# TOPOLOGY standalone|sentinel|cluster (standalone), STORE_FAULTS (all that apply: standalone
# delay,stall,reset,close,halfopen,restart,restart-forgetting; sentinel and cluster failover,kill-master), RESTART
# gateway restart mid-run true|false (false), MVN_FLAGS extra Maven flags (e.g. -o). The report is printed and written to
# gateway/server/target/torture/store-torture-[<topology>-]<seed>.txt, one line per key in the -keys.tsv beside it.
set -euo pipefail
cd "$(dirname "$0")/.."

EXCHANGES="${EXCHANGES:-100000}"
THREADS="${THREADS:-12}"
RESTART="${RESTART:-false}"
TOPOLOGY="${TOPOLOGY:-standalone}"
args=(-Dtorture.exchanges="$EXCHANGES" -Dtorture.threads="$THREADS" -Dtorture.restart="$RESTART"
  -Dtorture.store-topology="$TOPOLOGY"
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
