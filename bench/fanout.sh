#!/usr/bin/env bash
# Copyright 2026 The Coxswain Authors.
# Licensed under the Apache License, Version 2.0 (see the header of any .go file).
#
# bench/fanout.sh: discovery fan-out. One discovery server and CLIENTS
# proxy clients (in a child process) over real mTLS with SVIDs from a real
# discovery CA; the server publishes changes of a shared-pool snapshot
# (ROUTES routes on GATEWAYS Gateways, one endpoint set per route) and
# TestFanout (internal/discovery/fanout_bench_test.go) reports, per kind of
# change, the time from Publish to each client's ack as the server records
# it (p50/p90/p99/max), the time until all have acked, and the server
# process's CPU time from Publish until all have acked.
#
#   - kinds of change: full (every route, Gateway and endpoint set changes;
#     each client gets the whole snapshot as a delta) and delta (one
#     endpoint of one endpoint set);
#   - client modes: real (discovery.Client: reassemble, validate, check the
#     version, apply to a stand-in data plane, ack) and raw (ack every
#     message as soon as gRPC has decoded it: what the server alone needs);
#   - PIN=1 (default) runs the server's process on CPU 0 (GOMAXPROCS 1) and
#     the clients' process on CPU 1, so the clients never take the
#     server's CPU;
#   - each mode's server CPU profile (the measured windows only) is
#     summarised at the end, and for real clients the clients' profile.
#
# Environment: CLIENTS (default 1000), ROUNDS changes of each kind (default
# 5), ROUTES (default 1000), GATEWAYS (default 10), MODES (default
# "real raw"), PIN (default 1), KEEP=1 keeps the work directory (the test
# binary and the profiles).
set -euo pipefail

CLIENTS=${CLIENTS:-1000}
ROUNDS=${ROUNDS:-5}
ROUTES=${ROUTES:-1000}
GATEWAYS=${GATEWAYS:-10}
MODES=${MODES:-real raw}
PIN=${PIN:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/coxswain-fanout.XXXXXX)
PIDS=()

# shellcheck source=lib.sh
source "$ROOT/bench/lib.sh"

echo "building the discovery test binary" >&2
(cd "$ROOT" && go test -c -o "$WORK/discovery.test" ./internal/discovery)

pin=false
pre=()
if [[ $PIN == 1 ]]; then
  command -v taskset >/dev/null || { echo "PIN=1 needs taskset (util-linux)" >&2; exit 1; }
  pin=true
  pre=(taskset -c 0)
fi

# top prints the flat top of the profiles given.
top() { go tool pprof -top -nodecount="$1" "$WORK/discovery.test" "${@:2}" 2>/dev/null | sed -n '/^Duration/p; /flat%/,$p'; }

for mode in $MODES; do
  echo
  echo "=== $mode clients"
  (cd "$ROOT/internal/discovery" && "${pre[@]}" "$WORK/discovery.test" -test.run '^TestFanout$' -test.v -test.timeout=0 \
    -fanout.clients="$CLIENTS" -fanout.rounds="$ROUNDS" -fanout.routes="$ROUTES" -fanout.gateways="$GATEWAYS" \
    -fanout.client="$mode" -fanout.pin="$pin" \
    -fanout.cpuprofile="$WORK/server-$mode" -fanout.clientprofile="$WORK/clients-$mode.pprof")
  for kind in full delta; do
    echo
    echo "--- server CPU profile, $kind changes, $mode clients (the measured windows only)"
    top 20 "$WORK/server-$mode-$kind"-*.pprof
  done
  if [[ $mode == real ]]; then
    echo
    echo "--- clients' process CPU profile, $mode clients (whole run), by cumulative time"
    go tool pprof -top -cum -nodecount=25 "$WORK/discovery.test" "$WORK/clients-$mode.pprof" 2>/dev/null | sed -n '/flat%/,$p'
  fi
done
