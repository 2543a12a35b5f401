#!/usr/bin/env python3
"""CPU breakdown of one peer-benchmark measurement, from its JFR recording (load-tests/peers.sh with PROFILE=1).

    load-tests/jfr-breakdown.py load-tests/target/peers/server-first-writes.jfr [CPU_US_PER_REQUEST]

Each execution sample goes to the first stage found walking its stack from the running frame outwards ("where the
CPU was spent"); a second column counts a stage wherever it appears on the stack ("what it caused"). With the
gateway's CPU time per request (peers.md, last column) the shares become microseconds per request.
"""
import json
import subprocess
import sys
from collections import Counter

STAGES = [
    ("canonical form + fingerprint", ("dev.retrysafe.gateway.idempotency.fingerprint.",)),
    ("key, scope, decision, record", ("dev.retrysafe.gateway.idempotency.key.", "dev.retrysafe.gateway.idempotency.scope.",
                                      "dev.retrysafe.gateway.idempotency.decision.",
                                      "dev.retrysafe.gateway.idempotency.record.")),
    ("store adapter (ours)", ("dev.retrysafe.gateway.idempotency.store.",)),
    ("filter, capture, report (ours)", ("dev.retrysafe.gateway.",)),
    ("Lettuce", ("io.lettuce.",)),
    ("Spring Data Redis", ("org.springframework.data.redis.",)),
    ("Spring Security", ("org.springframework.security.",)),
    ("tracing", ("brave.", "io.micrometer.tracing.")),
    ("metrics, observation", ("io.micrometer.",)),
    ("logging", ("ch.qos.logback.", "org.slf4j.", "org.apache.logging.")),
    ("Jackson", ("tools.jackson.", "com.fasterxml.jackson.")),
    ("Spring Cloud Gateway", ("org.springframework.cloud.gateway.",)),
    ("Spring WebFlux, HTTP", ("org.springframework.web.", "org.springframework.http.", "org.springframework.core.")),
    ("Reactor", ("reactor.core.", "reactor.util.")),
    ("reactor-netty", ("reactor.netty.",)),
    ("Netty", ("io.netty.",)),
]


def stage_of(type_name):
    for stage, prefixes in STAGES:
        if type_name.startswith(prefixes):
            return stage
    return None


def main():
    path = sys.argv[1]
    cpu_us = float(sys.argv[2]) if len(sys.argv) > 2 else None
    printed = subprocess.run(["jfr", "print", "--json", "--stack-depth", "256", "--events", "jdk.ExecutionSample",
                              path], check=True, capture_output=True, text=True).stdout
    events = json.loads(printed)["recording"]["events"]
    first = Counter()
    anywhere = Counter()
    for event in events:
        frames = event["values"]["stackTrace"]["frames"] if event["values"].get("stackTrace") else []
        seen = set()
        chosen = None
        for frame in frames:
            stage = stage_of(frame["method"]["type"]["name"].replace("/", "."))
            if stage is None:
                continue
            chosen = chosen or stage
            seen.add(stage)
        first[chosen or "JDK, other"] += 1
        for stage in seen:
            anywhere[stage] += 1
    total = sum(first.values()) or 1
    print(f"{path}: {total} samples" + (f", {cpu_us:.0f} us CPU per request" if cpu_us else ""))
    print(f"| stage | CPU here | {'us/request | ' if cpu_us else ''}on the stack |")
    print(f"|---|---:|{'---:|' if cpu_us else ''}---:|")
    for stage, count in first.most_common():
        share = count / total
        per_request = f" {share * cpu_us:.0f} |" if cpu_us else ""
        print(f"| {stage} | {100 * share:.1f}% |{per_request} {100 * anywhere[stage] / total:.1f}% |")


if __name__ == "__main__":
    main()
