#!/usr/bin/env bash
# Copyright 2026 The Coxswain Authors.
# Licensed under the Apache License, Version 2.0 (see the header of any .go file).
#
# bench/shapes.sh: CPU per request and latency of Coxswain's proxy against
# nginx and HAProxy on every traffic shape, side by side in one run, behind
# the same backends, with equivalent configurations.
#
#   - each proxy runs one worker pinned to CPU 0 (taskset; GOMAXPROCS=1 for
#     Coxswain, worker_processes 1 / master_process off for nginx, nbthread 1
#     for HAProxy); the load tools and the backends share CPU 1;
#   - one instance of each proxy with four listeners: plain HTTP/1.1, TLS
#     1.3 (HTTP/1.1 and HTTP/2 by ALPN; one throwaway ECDSA P-256
#     certificate for all three), h2c (HTTP/2 with prior knowledge on a
#     cleartext port) and gRPC (h2c in front of an h2c gRPC backend);
#   - the shapes (SHAPES): http1 (GET, keep-alive), https (the same over
#     TLS 1.3), h2 (h2load, HTTP/2 over TLS, multiplexed), h2c (h2load,
#     prior knowledge, multiplexed), post-16k and post-1m (a POST body
#     streamed to a backend that reads and discards it), put-1m-curl (1 MiB
#     uploads as curl sends them: "Expect: 100-continue", the body once the
#     100 came; curl --parallel, CONNECTIONS at a time), get-1m (a 1 MiB
#     answer), headers-30 (30 extra request headers), conn-close (a new
#     connection per request) and grpc (unary health checks, bench/grpcload);
#   - all three stream bodies both ways through 32 KiB buffers (Coxswain's
#     copy buffer; nginx proxy_request_buffering off, proxy_buffering off,
#     client_body_buffer_size and proxy_buffer_size 32k; HAProxy
#     tune.bufsize 32768) and limit no keep-alive connection's requests;
#     Coxswain splices a large plain response body between its sockets,
#     which HAProxy does with option splice-auto and nginx cannot;
#   - before measuring, every proxy must serve every shape (status, protocol,
#     TLS version and cipher, body sizes, a gRPC answer);
#   - rounds are interleaved (every proxy and shape once per round, the
#     proxy order rotating) and each figure is the median over the rounds;
#   - CPU per request is the proxy's utime+stime delta (/proc/PID/stat) over
#     the requests the load tool completed; p50/p99 are the tool's latency
#     percentiles (wrk --latency, h2load's per-request log, grpcload);
#     box_us/req is the whole machine's busy CPU (/proc/stat) over the same
#     requests: the proxy, the load tool, the backends and the kernel's
#     network work wherever it was counted, so that work a proxy moves out
#     of its own process (splicing, say) still shows.
#
# Environment: ROUNDS (default 5), DURATION seconds per run (default 8),
# WARMUP seconds before each run (default 1), CONNECTIONS of the wrk shapes
# (default 32), H2_CONNECTIONS and H2_STREAMS of the h2, h2c and grpc shapes
# (default 8 and 16), SHAPES (default all, space-separated), COXSWAIN_BIN
# (a prebuilt coxswain binary; else it is built from this checkout), PPROF=1
# runs Coxswain with --enable-pprof and, after the rounds, once more per
# shape (not counted) while saving a CPU profile to WORK/cpu-SHAPE.pprof
# (implies KEEP=1), KEEP=1 keeps the work directory.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-8}
WARMUP=${WARMUP:-1}
CONNECTIONS=${CONNECTIONS:-32}
H2_CONNECTIONS=${H2_CONNECTIONS:-8}
H2_STREAMS=${H2_STREAMS:-16}
ALL_SHAPES=(http1 https h2 h2c post-16k post-1m put-1m-curl get-1m headers-30 conn-close grpc)
read -r -a SHAPES <<<"${SHAPES:-${ALL_SHAPES[*]}}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/coxswain-shapes.XXXXXX)
BACKEND_PORT=17080
GRPC_PORT=17081
HEALTH_PORT=17191
METRICS_PORT=17192
PROXIES=(nginx haproxy coxswain)
# Each proxy's listeners: http (plain HTTP/1.1), https (TLS: HTTP/1.1 and
# HTTP/2), h2c, grpc.
declare -A BASE=([nginx]=17100 [haproxy]=17110 [coxswain]=17120)
declare -A KIND_OFFSET=([http]=1 [https]=2 [h2c]=3 [grpc]=4)
declare -A PID=()
PIDS=()

# shellcheck source=lib.sh
source "$ROOT/bench/lib.sh"

for s in "${SHAPES[@]}"; do
  [[ " ${ALL_SHAPES[*]} " == *" $s "* ]] || { echo "SHAPES: unknown shape $s (known: ${ALL_SHAPES[*]})" >&2; exit 2; }
done

port() { echo $((BASE[$1] + KIND_OFFSET[$2])); } # proxy, listener kind

need() {
  local missing=()
  for tool in nginx:nginx haproxy:haproxy wrk:wrk h2load:nghttp2-client taskset:util-linux curl:curl; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool##*:}")
  done
  if ((${#missing[@]})); then apt_install "${missing[@]}"; fi
  if [[ $(nproc) -lt 2 ]]; then echo "need at least 2 CPUs (proxy on CPU 0, load on CPU 1)" >&2; exit 1; fi
}

build() {
  echo "building the backend, bench/grpcload, bench/l4load (for its certificate) and coxswain" >&2
  (cd "$ROOT" && go build -o "$WORK/backend" ./bench/backend && go build -o "$WORK/grpcload" ./bench/grpcload &&
    go build -o "$WORK/l4load" ./bench/l4load)
  build_coxswain
}

# The one TLS 1.3 cipher suite all three negotiate: Go's server picks
# AES-128-GCM on hardware with AES instructions, OpenSSL's clients (wrk,
# h2load, curl) put AES-256-GCM first, which nginx and HAProxy would take.
CIPHER=TLS_AES_128_GCM_SHA256

write_configs() {
  "$WORK/l4load" cert -dir "$WORK" # cert.pem, key.pem: ECDSA P-256, *.bench.local
  cat "$WORK/cert.pem" "$WORK/key.pem" >"$WORK/haproxy.pem"

  # Request scripts for wrk.
  local z
  for z in 16 1024; do
    cat >"$WORK/post-$z.lua" <<EOF
wrk.method = "POST"
wrk.path = "/upload"
wrk.body = string.rep("x", $z * 1024)
wrk.headers["Content-Type"] = "application/octet-stream"
EOF
  done
  {
    # 30 headers of about 60 bytes each (1.8 KiB in all) on top of wrk's own.
    for i in $(seq -w 1 30); do echo "wrk.headers[\"X-Bench-Header-$i\"] = \"value-$i-0123456789abcdefghijklmnopqrstuvw\""; done
  } >"$WORK/headers-30.lua"
  head -c $((16 * 1024)) /dev/zero | tr '\0' x >"$WORK/body-16k"
  head -c $((1024 * 1024)) /dev/zero | tr '\0' x >"$WORK/body-1m"

  local loc="location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection \"\"; }"
  mkdir -p "$WORK/nginx"
  {
    echo "worker_processes 1; master_process off; daemon off; pid $WORK/nginx/nginx.pid;"
    echo "error_log $WORK/nginx/error.log warn;"
    echo "events { worker_connections 4096; }"
    echo "http {"
    echo "  access_log off;"
    for d in client_body proxy fastcgi uwsgi scgi; do echo "  ${d}_temp_path $WORK/nginx/$d;"; done
    # Coxswain limits neither requests per client connection nor per
    # upstream connection; nginx's default closes both after 1000.
    echo "  keepalive_requests 100000000;"
    # Stream request bodies and responses as Coxswain does (through a
    # 32 KiB buffer, never a temporary file), and admit the 1 MiB body.
    echo "  client_max_body_size 2m; proxy_request_buffering off; client_body_buffer_size 32k;"
    echo "  proxy_buffering off; proxy_buffer_size 32k; proxy_buffers 4 32k;"
    echo "  ssl_certificate $WORK/cert.pem; ssl_certificate_key $WORK/key.pem;"
    echo "  ssl_protocols TLSv1.3; ssl_conf_command Ciphersuites $CIPHER;"
    echo "  upstream backend { server 127.0.0.1:$BACKEND_PORT; keepalive 256; keepalive_requests 100000000; }"
    echo "  upstream grpcbe { server 127.0.0.1:$GRPC_PORT; keepalive 256; keepalive_requests 100000000; }"
    echo "  server { listen 127.0.0.1:$(port nginx http); $loc }"
    echo "  server { listen 127.0.0.1:$(port nginx https) ssl http2; $loc }"
    echo "  server { listen 127.0.0.1:$(port nginx h2c) http2; $loc }"
    echo "  server { listen 127.0.0.1:$(port nginx grpc) http2; location / { grpc_pass grpc://grpcbe; } }"
    echo "}"
  } >"$WORK/nginx/nginx.conf"

  {
    echo "global"
    echo "  nbthread 1"
    echo "  maxconn 4096"
    # 32 KiB buffers, as nginx's and Coxswain's here (HAProxy's default: 16).
    echo "  tune.bufsize 32768"
    echo "  ssl-default-bind-options ssl-min-ver TLSv1.3"
    echo "  ssl-default-bind-ciphersuites $CIPHER"
    echo "defaults"
    echo "  mode http"
    echo "  timeout connect 5s"
    echo "  timeout client 60s"
    echo "  timeout server 60s"
    echo "  http-reuse always"
    # Large bodies between sockets through the kernel, as Coxswain does.
    echo "  option splice-auto"
    echo "frontend http"
    echo "  bind 127.0.0.1:$(port haproxy http)"
    echo "  default_backend be"
    echo "frontend https"
    echo "  bind 127.0.0.1:$(port haproxy https) ssl crt $WORK/haproxy.pem alpn h2,http/1.1"
    echo "  default_backend be"
    echo "frontend h2c"
    echo "  bind 127.0.0.1:$(port haproxy h2c) proto h2"
    echo "  default_backend be"
    echo "frontend grpc"
    echo "  bind 127.0.0.1:$(port haproxy grpc) proto h2"
    echo "  default_backend grpc"
    echo "backend be"
    echo "  server s1 127.0.0.1:$BACKEND_PORT"
    echo "backend grpc"
    echo "  server g1 127.0.0.1:$GRPC_PORT proto h2"
  } >"$WORK/haproxy.cfg"

  local route="routes: [{id: bench:0, accessLogOff: true, backends: [{endpointSet: bench/backend:80, weight: 1}]}]"
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
    echo "- name: bench/grpc:80"
    echo "  appProtocol: kubernetes.io/h2c"
    echo "  endpoints: [{address: 127.0.0.1, port: $GRPC_PORT}]"
    echo "listeners:"
    echo "- {name: bench/http, port: $(port coxswain http), protocol: HTTP, virtualHosts: [{hostname: \"*\", $route}]}"
    echo "- name: bench/https"
    echo "  port: $(port coxswain https)"
    echo "  protocol: HTTPS"
    echo "  tls: {certificates: [{certificate: bench/cert}]}"
    echo "  virtualHosts: [{hostname: \"*\", $route}]"
    echo "- {name: bench/h2c, port: $(port coxswain h2c), protocol: HTTP, virtualHosts: [{hostname: \"*\", $route}]}"
    # A GRPCRoute compiles to an HTTP route whose backend set speaks h2c.
    echo "- {name: bench/grpc, port: $(port coxswain grpc), protocol: HTTP, virtualHosts: [{hostname: \"*\", routes: [{id: bench:grpc, accessLogOff: true, backends: [{endpointSet: bench/grpc:80, weight: 1}]}]}]}"
  } >"$WORK/coxswain.yaml"
}

start() { # name, command...
  local name=$1; shift
  "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  PID[$name]=$!
}

# free fails when something already listens on port $1: wait_port would
# take it for the process about to start.
free() {
  if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
    echo "port $1 is in use (another benchmark running?)" >&2
    exit 1
  fi
}

fail() { # proxy, what went wrong
  echo "$1: $2" >&2
  echo "--- its log:" >&2
  tail -n 40 "$WORK/$1.log" >&2
  [[ $1 != nginx ]] || tail -n 20 "$WORK/nginx/error.log" >&2
  # shellcheck disable=SC2034 # read by lib.sh's cleanup: keep the evidence
  KEEP=1
  exit 1
}

start_all() {
  local p k
  for p in $BACKEND_PORT $GRPC_PORT $HEALTH_PORT $METRICS_PORT; do free "$p"; done
  for p in "${PROXIES[@]}"; do for k in "${!KIND_OFFSET[@]}"; do free "$(port "$p" "$k")"; done; done
  GOMAXPROCS=1 start backend taskset -c 1 "$WORK/backend" -addr 127.0.0.1:$BACKEND_PORT
  GOMAXPROCS=1 start grpc-backend taskset -c 1 "$WORK/grpcload" serve -addr 127.0.0.1:$GRPC_PORT -lifetime 3h
  wait_port $BACKEND_PORT
  wait_port $GRPC_PORT
  start nginx taskset -c 0 nginx -p "$WORK/nginx" -c "$WORK/nginx/nginx.conf"
  start haproxy taskset -c 0 haproxy -db -f "$WORK/haproxy.cfg"
  local pprof=()
  [[ ${PPROF:-0} != 1 ]] || pprof=(--enable-pprof)
  GOMAXPROCS=1 start coxswain taskset -c 0 "$WORK/coxswain" serve proxy --shared \
    --snapshot-file "$WORK/coxswain.yaml" --access-log=false --bind-host 127.0.0.1 \
    --health-probe-bind-address 127.0.0.1:$HEALTH_PORT --metrics-bind-address 127.0.0.1:$METRICS_PORT \
    --shutdown-drain-window 0 "${pprof[@]}"
  for p in "${PROXIES[@]}"; do
    for k in "${!KIND_OFFSET[@]}"; do wait_port "$(port "$p" "$k")" || fail "$p" "its $k listener never opened"; done
  done
}

# expect_eq fails proxy $1 unless $3 equals $4 ($2 says what was checked).
expect_eq() { [[ $3 == "$4" ]] || fail "$1" "$2: want '$4', got '$3'"; }

# check makes sure every proxy serves every shape as the shape means it,
# so a misconfigured listener cannot produce a figure.
check() {
  local p out
  for p in "${PROXIES[@]}"; do
    local http https h2c
    http=127.0.0.1:$(port "$p" http) https=127.0.0.1:$(port "$p" https) h2c=127.0.0.1:$(port "$p" h2c)
    local c=(curl -s -o /dev/null --max-time 10)
    expect_eq "$p" "GET over HTTP/1.1" "$("${c[@]}" -w '%{http_code} %{http_version} %{size_download}' "http://$http/")" "200 1.1 64"
    out=$(curl -sv -k --http1.1 -o /dev/null --max-time 10 -w '%{http_code} %{http_version}' "https://$https/" 2>"$WORK/check.tls")
    expect_eq "$p" "GET over HTTPS" "$out" "200 1.1"
    grep -q "SSL connection using TLSv1.3 / $CIPHER" "$WORK/check.tls" ||
      fail "$p" "TLS: want TLSv1.3 / $CIPHER, curl says: $(grep 'SSL connection using' "$WORK/check.tls")"
    expect_eq "$p" "GET over HTTP/2 (TLS, ALPN h2)" "$("${c[@]}" -k --http2 -w '%{http_code} %{http_version}' "https://$https/")" "200 2"
    expect_eq "$p" "GET over h2c (prior knowledge)" "$("${c[@]}" --http2-prior-knowledge -w '%{http_code} %{http_version}' "http://$h2c/")" "200 2"
    expect_eq "$p" "POST 16 KiB" "$("${c[@]}" --data-binary @"$WORK/body-16k" -w '%{http_code} %{size_upload}' "http://$http/upload")" "200 16384"
    expect_eq "$p" "POST 1 MiB" "$("${c[@]}" --data-binary @"$WORK/body-1m" -w '%{http_code} %{size_upload}' "http://$http/upload")" "200 1048576"
    out=$("${c[@]}" -v -T "$WORK/body-1m" -w '%{http_code} %{size_upload}' "http://$http/upload" 2>"$WORK/check.expect")
    expect_eq "$p" "PUT 1 MiB after 100 Continue" "$out" "200 1048576"
    grep -q '^> Expect: 100-continue' "$WORK/check.expect" && grep -q '^< HTTP/1.1 100 Continue' "$WORK/check.expect" ||
      fail "$p" "curl's upload: no Expect: 100-continue sent, or no 100 Continue answered"
    expect_eq "$p" "GET 1 MiB" "$("${c[@]}" -w '%{http_code} %{size_download}' "http://$http/big")" "200 1048576"
    out=$("$WORK/grpcload" load -addr "127.0.0.1:$(port "$p" grpc)" -conns 1 -streams 1 -count 3 -duration 10s -timeout 5s 2>&1)
    [[ $out == ok=3\ errors=0* ]] || fail "$p" "gRPC Health/Check: $out"
  done
  echo "every proxy serves every shape (HTTP/1.1, TLS 1.3 $CIPHER, h2, h2c, 16 KiB and 1 MiB bodies both ways, gRPC)" >&2
}

# load runs shape $1 against proxy $2 for $3 seconds on CPU 1 and prints
# "requests p50_ms p99_ms req/s"; with $4 = warmup it prints nothing.
load() {
  local s=$1 p=$2 d=$3 out
  local http https
  http=127.0.0.1:$(port "$p" http) https=127.0.0.1:$(port "$p" https)
  local wrk=(taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${d}s" --latency)
  case $s in
    http1) out=$("${wrk[@]}" "http://$http/") ;;
    https) out=$("${wrk[@]}" "https://$https/") ;;
    post-16k) out=$("${wrk[@]}" -s "$WORK/post-16.lua" "http://$http/upload") ;;
    post-1m) out=$("${wrk[@]}" -s "$WORK/post-1024.lua" "http://$http/upload") ;;
    get-1m) out=$("${wrk[@]}" "http://$http/big") ;;
    put-1m-curl)
      # curl waits for each 100 Continue (up to 1 s) before the body. It
      # runs until the duration ends; each finished upload prints a line.
      rm -f "$WORK/curl.log"
      timeout "$d" taskset -c 1 curl -s --parallel --parallel-max "$CONNECTIONS" -T "$WORK/body-1m" \
        -w '%{stderr}%{http_code} %{time_total}\n' "http://$http/upload?n=[1-1000000]" >/dev/null 2>"$WORK/curl.log" || true
      [[ $4 == warmup ]] && return
      local ndone bad
      ndone=$(grep -c '^200 ' "$WORK/curl.log" || true)
      bad=$(grep -vc '^200 ' "$WORK/curl.log" || true)
      # The uploads cut short by the end of the run are not answers.
      if [[ $ndone == 0 || $bad -gt $CONNECTIONS ]]; then
        head -5 "$WORK/curl.log" >&2
        fail "$p" "curl: $ndone uploads answered 200, $bad others ($s)"
      fi
      awk '$1 == "200" {print $2}' "$WORK/curl.log" | sort -n |
        awk -v n="$ndone" -v d="$d" '{a[NR] = $1} END {
          printf "%d %.3f %.3f %.0f\n", n, a[int(0.50 * (NR - 1)) + 1] * 1000, a[int(0.99 * (NR - 1)) + 1] * 1000, n / d }'
      return ;;
    headers-30) out=$("${wrk[@]}" -s "$WORK/headers-30.lua" "http://$http/") ;;
    conn-close) out=$("${wrk[@]}" -H "Connection: close" "http://$http/") ;;
    h2 | h2c)
      local url="https://$https/"
      [[ $s == h2 ]] || url="http://127.0.0.1:$(port "$p" h2c)/"
      rm -f "$WORK/h2load.log"
      out=$(taskset -c 1 h2load -t1 -c"$H2_CONNECTIONS" -m"$H2_STREAMS" -D "$d" --log-file="$WORK/h2load.log" "$url")
      [[ $4 == warmup ]] && return
      local ndone bad rps
      ndone=$(awk '/^requests:/ {print $8}' <<<"$out")
      # failed, errored, timeout; 3xx, 4xx, 5xx answers.
      bad=$(awk '/^requests:/ {n += $10 + $12 + $14} /^status codes:/ {n += $5 + $7 + $9} END {print n + 0}' <<<"$out")
      rps=$(awk '/^finished in/ {print $4}' <<<"$out")
      if [[ -z $ndone || $ndone == 0 || $bad != 0 ]]; then
        echo "$s $p: h2load: $ndone requests succeeded, $bad failed or not 2xx:" >&2
        echo "$out" >&2
        fail "$p" "errors or non-2xx answers under load ($s)"
      fi
      # The log's third column is each request's time to its last byte, µs.
      awk -F'\t' '$2 ~ /^2/ {print $3}' "$WORK/h2load.log" | sort -n |
        awk -v n="$ndone" -v rps="$rps" '{a[NR] = $1} END {
          printf "%d %.3f %.3f %.0f\n", n, a[int(0.50 * (NR - 1)) + 1] / 1000, a[int(0.99 * (NR - 1)) + 1] / 1000, rps }'
      return ;;
    grpc)
      out=$(taskset -c 1 "$WORK/grpcload" load -addr "127.0.0.1:$(port "$p" grpc)" -conns "$H2_CONNECTIONS" -streams "$H2_STREAMS" -duration "${d}s" 2>&1)
      [[ $4 == warmup ]] && return
      [[ $out == *" errors=0 "* ]] || { echo "$out" >&2; fail "$p" "failed gRPC calls under load"; }
      awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
        END { printf "%d %.3f %.3f %.0f\n", v["ok"], v["p50_ms"], v["p99_ms"], v["rps"] }' <<<"$out"
      return ;;
  esac
  [[ $4 == warmup ]] && return
  # A refused request costs less than a served one: the run would measure
  # the refusal.
  if grep -q 'Non-2xx' <<<"$out"; then echo "$out" >&2; fail "$p" "non-2xx answers under load ($s)"; fi
  if grep -q 'Socket errors' <<<"$out"; then echo "warning: $s $p: $(grep 'Socket errors' <<<"$out")" >&2; fi
  local reqs
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  printf '%s %s %s %s\n' "$reqs" "$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")" \
    "$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")" "$(awk -v n="$reqs" -v d="$d" 'BEGIN {printf "%.0f", n / d}')"
}

run_one() { # proxy shape round
  local p=$1 s=$2 r=$3 pid=${PID[$1]}
  [[ $WARMUP == 0 ]] || load "$s" "$p" "$WARMUP" warmup
  local t0 t1 b0 b1 res
  t0=$(cpu_ticks "$pid") b0=$(box_ticks)
  res=$(load "$s" "$p" "$DURATION" measure)
  t1=$(cpu_ticks "$pid") b1=$(box_ticks)
  local n p50 p99 rps
  read -r n p50 p99 rps <<<"$res"
  local hz; hz=$(getconf CLK_TCK)
  awk -v s="$s" -v p="$p" -v r="$r" -v d=$((t1 - t0)) -v box=$((b1 - b0)) -v hz="$hz" -v n="$n" -v p50="$p50" -v p99="$p99" -v rps="$rps" \
    'BEGIN { printf "%s %s %s %.2f %s %s %s %.2f\n", s, p, r, d / hz * 1e6 / n, p50, p99, rps, box / hz * 1e6 / n }' >>"$WORK/results.txt"
}

# profile runs every shape against Coxswain once more, saving a CPU
# profile of the run (PPROF=1).
profile() {
  local s secs=$((DURATION > 2 ? DURATION - 1 : 1))
  for s in "${SHAPES[@]}"; do
    curl -s --max-time $((secs + 10)) -o "$WORK/cpu-$s.pprof" "http://127.0.0.1:$HEALTH_PORT/debug/pprof/profile?seconds=$secs" &
    load "$s" coxswain "$DURATION" warmup
    wait $!
  done
  echo "CPU profiles of Coxswain, one per shape: $WORK/cpu-*.pprof (go tool pprof -top \$WORK/coxswain FILE)" >&2
}

col() { # shape, proxy, column of results.txt → its median
  awk -v s="$1" -v p="$2" -v c="$3" '$1 == s && $2 == p {print $c}' "$WORK/results.txt" | median
}

report() {
  echo
  echo "Median of $ROUNDS interleaved rounds, ${DURATION}s each; wrk -t1 -c$CONNECTIONS, h2load and grpcload $H2_CONNECTIONS connections x $H2_STREAMS streams;"
  echo "proxy on CPU 0, load tools + backends on CPU 1"
  printf '%-11s %-9s %11s %10s %9s %9s %9s %11s %10s\n' shape proxy "cpu_us/req" "cpu/nginx" "p50_ms" "p99_ms" "req/s" "box_us/req" "box/nginx"
  local s p
  for s in "${SHAPES[@]}"; do
    local ncpu nbox
    ncpu=$(col "$s" nginx 4) nbox=$(col "$s" nginx 8)
    for p in "${PROXIES[@]}"; do
      awk -v s="$s" -v p="$p" -v c="$(col "$s" "$p" 4)" -v a="$(col "$s" "$p" 5)" -v b="$(col "$s" "$p" 6)" \
        -v r="$(col "$s" "$p" 7)" -v x="$(col "$s" "$p" 8)" -v nc="$ncpu" -v nx="$nbox" \
        'BEGIN { printf "%-11s %-9s %11.1f %9.2fx %9.3f %9.3f %9.0f %11.1f %9.2fx\n", s, p, c, c / nc, a, b, r, x, x / nx }'
    done
  done
  echo
  echo "raw rounds (shape proxy round cpu_us/req p50_ms p99_ms req/s box_us/req):"
  sort -k1,1 -k2,2 -k3,3n "$WORK/results.txt"
}

need
build
write_configs
start_all
check
run_rounds "${SHAPES[@]}"
report
if [[ ${PPROF:-0} == 1 ]]; then
  # shellcheck disable=SC2034 # read by lib.sh's cleanup
  KEEP=1
  profile
fi
