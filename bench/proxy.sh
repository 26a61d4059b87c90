#!/usr/bin/env bash
# Copyright 2026 The Coxswain Authors.
# Licensed under the Apache License, Version 2.0 (see the header of any .go file).
#
# bench/proxy.sh: CPU per request and latency of Coxswain's proxy against
# nginx and HAProxy, behind the same Go backend, with the same routes.
#
#   - each proxy runs one worker pinned to CPU 0 (taskset; GOMAXPROCS=1 for
#     Coxswain, worker_processes 1 / master_process off for nginx, nbthread 1
#     for HAProxy); wrk and the backend share CPU 1;
#   - two route sets: "1route" (one catch-all route) and "1000hosts" (1000
#     virtual hosts, each request with a random Host via bench/hosts.lua);
#   - rounds are interleaved (every proxy and scenario once per round) and
#     each figure is the median over the rounds;
#   - CPU per request is the proxy's utime+stime delta (/proc/PID/stat) over
#     the requests wrk completed; p50/p99 are wrk's latency percentiles.
#
# Environment: ROUNDS (default 5), DURATION seconds per run (default 8),
# CONNECTIONS (default 32), COXSWAIN_BIN (a prebuilt coxswain binary; else
# it is built from this checkout), KEEP=1 keeps the work directory.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-8}
CONNECTIONS=${CONNECTIONS:-32}
WARMUP=${WARMUP:-1}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/coxswain-bench.XXXXXX)
BACKEND_PORT=18080
declare -A PORT=([nginx-1route]=18101 [haproxy-1route]=18102 [coxswain-1route]=18103
                 [nginx-1000hosts]=18111 [haproxy-1000hosts]=18112 [coxswain-1000hosts]=18113)
PROXIES=(nginx haproxy coxswain)
SCENARIOS=(1route 1000hosts)
PIDS=()

# shellcheck source=lib.sh
source "$ROOT/bench/lib.sh"

need() {
  local missing=()
  for tool in nginx:nginx haproxy:haproxy wrk:wrk taskset:util-linux curl:curl; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool##*:}")
  done
  if ((${#missing[@]})); then apt_install "${missing[@]}"; fi
  if [[ $(nproc) -lt 2 ]]; then echo "need at least 2 CPUs (proxy on CPU 0, load on CPU 1)" >&2; exit 1; fi
}

build() {
  echo "building the backend and coxswain" >&2
  (cd "$ROOT" && go build -o "$WORK/backend" ./bench/backend)
  build_coxswain
}

hosts() { for i in $(seq 0 999); do echo "host-$i.bench.local"; done; }

write_configs() {
  local s
  for s in "${SCENARIOS[@]}"; do
    local np=${PORT[nginx-$s]} hp=${PORT[haproxy-$s]} cp=${PORT[coxswain-$s]}
    mkdir -p "$WORK/nginx-$s"
    {
      echo "worker_processes 1; master_process off; daemon off; pid $WORK/nginx-$s/nginx.pid;"
      echo "error_log $WORK/nginx-$s/error.log warn;"
      echo "events { worker_connections 4096; }"
      echo "http {"
      echo "  access_log off; server_names_hash_max_size 4096; server_names_hash_bucket_size 64;"
      for d in client_body proxy fastcgi uwsgi scgi; do echo "  ${d}_temp_path $WORK/nginx-$s/$d;"; done
      echo "  upstream backend { server 127.0.0.1:$BACKEND_PORT; keepalive 256; }"
      if [[ $s == 1route ]]; then
        echo "  server { listen 127.0.0.1:$np; location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
      else
        echo "  server { listen 127.0.0.1:$np default_server; return 404; }"
        for h in $(hosts); do
          echo "  server { listen 127.0.0.1:$np; server_name $h; location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
        done
      fi
      echo "}"
    } >"$WORK/nginx-$s/nginx.conf"

    hosts | awk '{print $1" be"}' >"$WORK/hosts.map"
    {
      echo "global"
      echo "  nbthread 1"
      echo "  maxconn 4096"
      echo "defaults"
      echo "  mode http"
      echo "  timeout connect 5s"
      echo "  timeout client 60s"
      echo "  timeout server 60s"
      echo "  http-reuse always"
      echo "frontend fe"
      echo "  bind 127.0.0.1:$hp"
      if [[ $s == 1route ]]; then
        echo "  default_backend be"
      else
        echo "  use_backend %[req.hdr(host),lower,map($WORK/hosts.map)]"
        echo "  http-request deny deny_status 404 unless { req.hdr(host),lower,map($WORK/hosts.map) -m found }"
      fi
      echo "backend be"
      echo "  server s1 127.0.0.1:$BACKEND_PORT"
    } >"$WORK/haproxy-$s.cfg"

    {
      echo "scope: {kind: SharedPool}"
      echo "endpointSets:"
      echo "- name: bench/backend:80"
      echo "  endpoints: [{address: 127.0.0.1, port: $BACKEND_PORT}]"
      echo "listeners:"
      echo "- name: bench/$cp"
      echo "  port: $cp"
      echo "  protocol: HTTP"
      echo "  virtualHosts:"
      if [[ $s == 1route ]]; then
        echo "  - hostname: \"*\""
        echo "    routes: [{id: bench:0, accessLogOff: true, backends: [{endpointSet: bench/backend:80, weight: 1}]}]"
      else
        for h in $(hosts | sort); do
          echo "  - hostname: $h"
          echo "    routes: [{id: bench/$h:0, accessLogOff: true, backends: [{endpointSet: bench/backend:80, weight: 1}]}]"
        done
      fi
    } >"$WORK/coxswain-$s.yaml"
  done
}

start() { # name, command...
  local name=$1; shift
  "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  eval "PID_${name//-/_}=$!"
}

start_all() {
  GOMAXPROCS=1 start backend taskset -c 1 "$WORK/backend" -addr 127.0.0.1:$BACKEND_PORT
  wait_port $BACKEND_PORT
  local s
  for s in "${SCENARIOS[@]}"; do
    start "nginx-$s" taskset -c 0 nginx -p "$WORK/nginx-$s" -c "$WORK/nginx-$s/nginx.conf"
    start "haproxy-$s" taskset -c 0 haproxy -db -f "$WORK/haproxy-$s.cfg"
    local hp=$((18200 + ${PORT[coxswain-$s]} % 100)) mp=$((18300 + ${PORT[coxswain-$s]} % 100))
    GOMAXPROCS=1 start "coxswain-$s" taskset -c 0 "$WORK/coxswain" serve proxy --shared \
      --snapshot-file "$WORK/coxswain-$s.yaml" --access-log=false --bind-host 127.0.0.1 \
      --health-probe-bind-address 127.0.0.1:$hp --metrics-bind-address 127.0.0.1:$mp
    for p in nginx haproxy coxswain; do wait_port "${PORT[$p-$s]}"; done
  done
  # Every proxy must route before anything is measured.
  for s in "${SCENARIOS[@]}"; do
    for p in "${PROXIES[@]}"; do
      local code
      code=$(curl -s -o /dev/null -w '%{http_code}' -H "Host: host-7.bench.local" "http://127.0.0.1:${PORT[$p-$s]}/")
      [[ $code == 200 ]] || { echo "$p ($s) answered $code" >&2; cat "$WORK/$p-$s.log" >&2; exit 1; }
    done
  done
}

run_one() { # proxy scenario round
  local p=$1 s=$2 port=${PORT[$1-$2]} var="PID_${1}_${2}"
  local pid=${!var} script=()
  [[ $s == 1000hosts ]] && script=(-s "$ROOT/bench/hosts.lua")
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${WARMUP}s" "${script[@]}" "http://127.0.0.1:$port/" >/dev/null
  local t0 t1 out
  t0=$(cpu_ticks "$pid")
  out=$(taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency "${script[@]}" "http://127.0.0.1:$port/")
  t1=$(cpu_ticks "$pid")
  local reqs p50 p99 errs
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  p50=$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
  errs=$(awk '/Non-2xx|Socket errors/ {print}' <<<"$out")
  [[ -z $errs ]] || echo "warning: $p $s round $3: $errs" >&2
  local hz; hz=$(getconf CLK_TCK)
  awk -v p="$p" -v s="$s" -v r="$3" -v d=$((t1 - t0)) -v hz="$hz" -v n="$reqs" -v p50="$p50" -v p99="$p99" -v dur="$DURATION" \
    'BEGIN { printf "%s %s %s %.2f %s %s %.0f\n", s, p, r, d / hz * 1e6 / n, p50, p99, n / dur }' >>"$WORK/results.txt"
}

report() {
  echo
  echo "Median of $ROUNDS interleaved rounds, ${DURATION}s each, $CONNECTIONS connections; proxy on CPU 0, wrk + backend on CPU 1"
  printf '%-10s %-9s %12s %9s %9s %9s %10s %10s\n' scenario proxy "cpu_us/req" "p50_ms" "p99_ms" "req/s" "cpu/nginx" "p99/nginx"
  local s p
  for s in "${SCENARIOS[@]}"; do
    local ncpu np99
    ncpu=$(awk -v s="$s" '$1 == s && $2 == "nginx" {print $4}' "$WORK/results.txt" | median)
    np99=$(awk -v s="$s" '$1 == s && $2 == "nginx" {print $6}' "$WORK/results.txt" | median)
    for p in "${PROXIES[@]}"; do
      local cpu p50 p99 rps
      cpu=$(awk -v s="$s" -v p="$p" '$1 == s && $2 == p {print $4}' "$WORK/results.txt" | median)
      p50=$(awk -v s="$s" -v p="$p" '$1 == s && $2 == p {print $5}' "$WORK/results.txt" | median)
      p99=$(awk -v s="$s" -v p="$p" '$1 == s && $2 == p {print $6}' "$WORK/results.txt" | median)
      rps=$(awk -v s="$s" -v p="$p" '$1 == s && $2 == p {print $7}' "$WORK/results.txt" | median)
      awk -v s="$s" -v p="$p" -v c="$cpu" -v a="$p50" -v b="$p99" -v r="$rps" -v nc="$ncpu" -v n99="$np99" \
        'BEGIN { printf "%-10s %-9s %12.1f %9.3f %9.3f %9.0f %9.2fx %9.2fx\n", s, p, c, a, b, r, c / nc, b / n99 }'
    done
  done
  echo
  echo "raw rounds (scenario proxy round cpu_us/req p50_ms p99_ms req/s):"
  sort -k1,1 -k2,2 -k3,3n "$WORK/results.txt"
}

need
build
write_configs
start_all
run_rounds "${SCENARIOS[@]}"
report
