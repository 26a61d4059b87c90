#!/usr/bin/env bash
# Copyright 2026 The Coxswain Authors.
# Licensed under the Apache License, Version 2.0 (see the header of any .go file).
#
# bench/idle.sh: resident memory per idle client connection of Coxswain's
# proxy against nginx, behind the same Go backend (bench/backend).
#
#   - each proxy runs one worker pinned to CPU 0 (taskset; GOMAXPROCS=1 for
#     Coxswain, worker_processes 1 / master_process off for nginx); the load
#     tool (bench/idleconns) and the backend share CPU 1;
#   - three shapes: h1 (HTTP/1.1 keep-alive), h1tls (the same over TLS,
#     ALPN http/1.1: Coxswain's HTTPS listener, nginx `listen ... ssl`,
#     one ECDSA P-256 certificate) and h2c (HTTP/2 with prior knowledge on
#     a cleartext listener: Coxswain's HTTP listener, nginx
#     `listen ... http2`);
#   - every shape and proxy gets a fresh process: the tool warms it up
#     (WARMUP connections used once and closed), reads its anonymous
#     resident memory (RssAnon: not its binary's pages, which Coxswain's
#     proxy unmaps once quiet), opens N
#     connections, sends ONE request on each, reads the answer and leaves
#     them idle; after SETTLE seconds it reads RssAnon again, SAMPLES times,
#     SETTLE apart. KiB per connection is (last sample - baseline) / N. No
#     GC is forced: the figure is what the process holds.
#
# Environment: N (default 10000), SHAPES (default "h1 h2c"; h1tls on
# request), SETTLE seconds
# (default 5), SAMPLES (default 2), WARMUP connections (default 200),
# WORKERS connections opened at once (default 16), COXSWAIN_BIN (a prebuilt
# coxswain binary; else it is built from this checkout), PPROF=1 saves
# Coxswain's heap and goroutine profiles of the idle connections into the
# work directory (implies KEEP=1), KEEP=1 keeps the work directory.
set -euo pipefail

N=${N:-10000}
SETTLE=${SETTLE:-5}
SAMPLES=${SAMPLES:-2}
WARMUP=${WARMUP:-200}
WORKERS=${WORKERS:-16}
read -r -a SHAPES <<<"${SHAPES:-h1 h2c}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/coxswain-idlebench.XXXXXX)
BACKEND_PORT=18480
declare -A PORT=([nginx]=18481 [coxswain]=18482)
declare -A TLS_PORT=([nginx]=18483 [coxswain]=18484)
HEALTH_PORT=18491
METRICS_PORT=18492
PROXIES=(nginx coxswain)
PIDS=()
[[ "${PPROF:-0}" == 1 ]] && export KEEP=1

for s in "${SHAPES[@]}"; do
  [[ $s == h1 || $s == h1tls || $s == h2c ]] || { echo "unknown shape $s (h1 h1tls h2c)" >&2; exit 2; }
done

# shellcheck source=lib.sh
source "$ROOT/bench/lib.sh"

need() {
  local missing=()
  for tool in nginx:nginx taskset:util-linux curl:curl; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool##*:}")
  done
  if ((${#missing[@]})); then apt_install "${missing[@]}"; fi
  if [[ $(nproc) -lt 2 ]]; then echo "need at least 2 CPUs (proxy on CPU 0, load on CPU 1)" >&2; exit 1; fi
  # Each side of every connection is a descriptor in its process: the
  # tool holds N, the proxy N plus its upstream connections.
  local want=$((N + 1024))
  if (($(ulimit -n) < want)); then
    ulimit -n "$want" 2>/dev/null || ulimit -n "$(ulimit -Hn)"
  fi
  if (($(ulimit -n) < want)); then
    echo "ulimit -n is $(ulimit -n), need $want for N=$N (raise the hard limit or lower N)" >&2
    exit 1
  fi
}

build() {
  echo "building the backend, the load tool and coxswain" >&2
  (cd "$ROOT" && go build -o "$WORK/backend" ./bench/backend && go build -o "$WORK/idleconns" ./bench/idleconns &&
    go build -o "$WORK/l4load" ./bench/l4load)
  build_coxswain
}

# port proxy shape: where the shape's listener is.
port() { if [[ $2 == h1tls ]]; then echo "${TLS_PORT[$1]}"; else echo "${PORT[$1]}"; fi; }

write_configs() {
  local s
  "$WORK/l4load" cert -dir "$WORK" # cert.pem, key.pem: ECDSA P-256
  for s in "${SHAPES[@]}"; do
    local listen="127.0.0.1:${PORT[nginx]}"
    [[ $s == h2c ]] && listen+=" http2"
    [[ $s == h1tls ]] && listen="127.0.0.1:${TLS_PORT[nginx]} ssl; ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem"
    mkdir -p "$WORK/nginx-$s"
    {
      echo "worker_processes 1; master_process off; daemon off; pid $WORK/nginx-$s/nginx.pid;"
      echo "worker_rlimit_nofile $((N + 1024));"
      echo "error_log $WORK/nginx-$s/error.log warn;"
      echo "events { worker_connections $((N + 1000)); }"
      echo "http {"
      echo "  access_log off;"
      for d in client_body proxy fastcgi uwsgi scgi; do echo "  ${d}_temp_path $WORK/nginx-$s/$d;"; done
      echo "  upstream backend { server 127.0.0.1:$BACKEND_PORT; keepalive 256; }"
      echo "  server { listen $listen; location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\"; } }"
      echo "}"
    } >"$WORK/nginx-$s/nginx.conf"
  done
  {
    echo "scope: {kind: SharedPool}"
    echo "certificates:"
    echo "- name: bench/cert"
    echo "  certPEM: |"
    sed 's/^/    /' "$WORK/cert.pem"
    echo "  keyPEM: |"
    sed 's/^/    /' "$WORK/key.pem"
    echo "endpointSets:"
    echo "- name: bench/backend:80"
    echo "  endpoints: [{address: 127.0.0.1, port: $BACKEND_PORT}]"
    echo "listeners:"
    echo "- name: bench/${PORT[coxswain]}"
    echo "  port: ${PORT[coxswain]}"
    echo "  protocol: HTTP"
    echo "  virtualHosts:"
    echo "  - hostname: \"*\""
    echo "    routes: [{id: bench:0, accessLogOff: true, backends: [{endpointSet: bench/backend:80, weight: 1}]}]"
    echo "- name: bench/${TLS_PORT[coxswain]}"
    echo "  port: ${TLS_PORT[coxswain]}"
    echo "  protocol: HTTPS"
    echo "  tls: {certificates: [{certificate: bench/cert}]}"
    echo "  virtualHosts:"
    echo "  - hostname: \"*\""
    echo "    routes: [{id: bench:0, accessLogOff: true, backends: [{endpointSet: bench/backend:80, weight: 1}]}]"
  } >"$WORK/coxswain.yaml"
}

# start_proxy starts proxy $1 for shape $2 and sets PROXY_PID.
start_proxy() {
  local p=$1 s=$2
  case $p in
    nginx)
      taskset -c 0 nginx -p "$WORK/nginx-$s" -c "$WORK/nginx-$s/nginx.conf" >"$WORK/$p-$s.log" 2>&1 &
      ;;
    coxswain)
      local pprof=()
      [[ "${PPROF:-0}" == 1 ]] && pprof=(--enable-pprof)
      GOMAXPROCS=1 taskset -c 0 "$WORK/coxswain" serve proxy --shared \
        --snapshot-file "$WORK/coxswain.yaml" --access-log=false --bind-host 127.0.0.1 \
        --health-probe-bind-address 127.0.0.1:$HEALTH_PORT --metrics-bind-address 127.0.0.1:$METRICS_PORT \
        "${pprof[@]}" >"$WORK/$p-$s.log" 2>&1 &
      ;;
  esac
  PROXY_PID=$!
  PIDS+=("$PROXY_PID")
  wait_port "$(port "$p" "$s")"
  local code
  case $s in
    h1) code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${PORT[$p]}/" || true) ;;
    h1tls) code=$(curl -sk --http1.1 -o /dev/null -w '%{http_code}' "https://127.0.0.1:${TLS_PORT[$p]}/" || true) ;;
    h2c) code=$(curl -s -o /dev/null -w '%{http_code}' --http2-prior-knowledge "http://127.0.0.1:${PORT[$p]}/" || true) ;;
  esac
  [[ $code == 200 ]] || { echo "$p ($s) answered $code" >&2; cat "$WORK/$p-$s.log" >&2; exit 1; }
}

stop_proxy() {
  kill "$PROXY_PID" 2>/dev/null || true
  wait "$PROXY_PID" 2>/dev/null || true
  local i
  for i in "${!PIDS[@]}"; do [[ ${PIDS[$i]} == "$PROXY_PID" ]] && unset 'PIDS[i]'; done
}

run_one() { # proxy shape
  local p=$1 s=$2 out
  echo "$p $s: $N idle connections" >&2
  start_proxy "$p" "$s"
  local pprof=()
  if [[ $p == coxswain && "${PPROF:-0}" == 1 ]]; then
    pprof=(-pprof "http://127.0.0.1:$HEALTH_PORT/debug/pprof" -pprof-out "$WORK/pprof-$s")
  fi
  out=$(taskset -c 1 "$WORK/idleconns" -addr "127.0.0.1:$(port "$p" "$s")" -pid "$PROXY_PID" -n "$N" -proto "$s" \
    -settle "${SETTLE}s" -samples "$SAMPLES" -warmup "$WARMUP" -workers "$WORKERS" "${pprof[@]}") ||
    { echo "$p $s failed; the proxy's log:" >&2; tail -20 "$WORK/$p-$s.log" >&2; exit 1; }
  echo "$s $p $out" >>"$WORK/results.txt"
  stop_proxy
}

field() { # results line, key
  tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p"
}

report() {
  echo
  echo "Idle connections: $N per run, one request each, RssAnon $SAMPLES× ${SETTLE}s apart after opening; proxy on CPU 0, load + backend on CPU 1"
  printf '%-5s %-9s %7s %14s %14s %10s %10s\n' shape proxy conns "anon_before_MiB" "anon_after_MiB" "KiB/conn" "vs_nginx"
  local s p line
  for s in "${SHAPES[@]}"; do
    local nginx_per
    nginx_per=$(awk -v s="$s" '$1 == s && $2 == "nginx"' "$WORK/results.txt" | tr ' ' '\n' | sed -n 's/^kib_per_conn=//p' | awk -F, '{print $NF}')
    for p in "${PROXIES[@]}"; do
      line=$(awk -v s="$s" -v p="$p" '$1 == s && $2 == p' "$WORK/results.txt")
      local conns before after per
      conns=$(field "$line" conns)
      before=$(field "$line" anon_before_kib)
      after=$(field "$line" anon_after_kib | awk -F, '{print $NF}')
      per=$(field "$line" kib_per_conn | awk -F, '{print $NF}')
      awk -v s="$s" -v p="$p" -v c="$conns" -v b="$before" -v a="$after" -v k="$per" -v nk="$nginx_per" \
        'BEGIN { printf "%-5s %-9s %7d %14.1f %14.1f %10.2f %9.2fx\n", s, p, c, b / 1024, a / 1024, k, (nk > 0 ? k / nk : 0) }'
    done
  done
  echo
  echo "raw (shape proxy figures; kib_per_conn and anon_after_kib per sample):"
  cat "$WORK/results.txt"
  if [[ "${PPROF:-0}" == 1 ]]; then echo "profiles: $WORK/pprof-*"; fi
}

need
build
write_configs
: >"$WORK/results.txt"
GOMAXPROCS=1 taskset -c 1 "$WORK/backend" -addr 127.0.0.1:$BACKEND_PORT >"$WORK/backend.log" 2>&1 &
PIDS+=($!)
wait_port $BACKEND_PORT
for s in "${SHAPES[@]}"; do
  for p in "${PROXIES[@]}"; do
    run_one "$p" "$s"
  done
done
report
