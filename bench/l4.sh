#!/usr/bin/env bash
# Copyright 2026 The Coxswain Authors.
# Licensed under the Apache License, Version 2.0 (see the header of any .go file).
#
# bench/l4.sh: CPU per connection and per MiB of Coxswain's L4 proxy (TCP
# and TLS passthrough listeners) against nginx `stream` and HAProxy
# `mode tcp`, behind the same Go backends (bench/l4load), with the same
# routes.
#
#   - each proxy runs one worker pinned to CPU 0 (taskset; GOMAXPROCS=1 for
#     Coxswain, worker_processes 1 / master_process off for nginx, nbthread 1
#     for HAProxy); the load generator and the backends share CPU 1;
#   - four shapes: tcp-conn (a new TCP connection per 64-byte echo),
#     tcp-bulk (long-lived connections streaming to a sink),
#     tls-passthrough-conn (a new TLS connection per echo, routed by SNI over
#     10 hostnames, terminated by the backend) and tls-passthrough-bulk;
#   - rounds are interleaved (every proxy and shape once per round, the
#     proxy order rotating) and each figure is the median over the rounds;
#   - CPU is the proxy's utime+stime delta (/proc/PID/stat) over the
#     exchanges (conn shapes) or MiB (bulk shapes) the generator completed.
#
# Environment: ROUNDS (default 5), DURATION seconds per run (default 8),
# CONNECTIONS concurrent connections of the conn shapes (default 32),
# BULK_CONNECTIONS of the bulk shapes (default 8), WARMUP seconds before
# each run (default 1), SHAPES (a space-separated subset of the four),
# COXSWAIN_BIN (a prebuilt coxswain binary; else it is built from this
# checkout), KEEP=1 keeps the work directory.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-8}
CONNECTIONS=${CONNECTIONS:-32}
BULK_CONNECTIONS=${BULK_CONNECTIONS:-8}
WARMUP=${WARMUP:-1}
read -r -a SHAPES <<<"${SHAPES:-tcp-conn tcp-bulk tls-passthrough-conn tls-passthrough-bulk}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/coxswain-l4bench.XXXXXX)
PROXIES=(nginx haproxy coxswain)
HOSTS=10 # SNI hostnames host-0.bench.local … host-9.bench.local
# Backends: a TCP echo, a TCP sink, and both over TLS (terminated there).
declare -A BACKEND=([echo]=19080 [sink]=19081 [tls-echo]=19082 [tls-sink]=19083)
declare -A UPSTREAM=([tcp-conn]=echo [tcp-bulk]=sink [tls-passthrough-conn]=tls-echo [tls-passthrough-bulk]=tls-sink)
declare -A PORT=(
  [nginx-tcp-conn]=19101 [nginx-tcp-bulk]=19102 [nginx-tls-passthrough-conn]=19103 [nginx-tls-passthrough-bulk]=19104
  [haproxy-tcp-conn]=19111 [haproxy-tcp-bulk]=19112 [haproxy-tls-passthrough-conn]=19113 [haproxy-tls-passthrough-bulk]=19114
  [coxswain-tcp-conn]=19121 [coxswain-tcp-bulk]=19122 [coxswain-tls-passthrough-conn]=19123 [coxswain-tls-passthrough-bulk]=19124
)
declare -A PID=()
PIDS=()

for s in "${SHAPES[@]}"; do
  [[ -n ${UPSTREAM[$s]:-} ]] || { echo "unknown shape $s (tcp-conn tcp-bulk tls-passthrough-conn tls-passthrough-bulk)" >&2; exit 2; }
done

# shellcheck source=lib.sh
source "$ROOT/bench/lib.sh"

nginx_stream_dynamic() { nginx -V 2>&1 | grep -q -- '--with-stream=dynamic'; }

nginx_modules_path() {
  local p
  p=$(nginx -V 2>&1 | tr ' ' '\n' | sed -n 's/^--modules-path=//p')
  echo "${p:-/usr/lib/nginx/modules}"
}

need() {
  local missing=()
  for tool in nginx:nginx haproxy:haproxy taskset:util-linux; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool##*:}")
  done
  # Debian builds nginx's stream module as a module of its own package.
  if ! command -v nginx >/dev/null 2>&1; then
    missing+=(libnginx-mod-stream)
  elif nginx_stream_dynamic && [[ ! -e "$(nginx_modules_path)/ngx_stream_module.so" ]]; then
    missing+=(libnginx-mod-stream)
  fi
  if ((${#missing[@]})); then apt_install "${missing[@]}"; fi
  if [[ $(nproc) -lt 2 ]]; then echo "need at least 2 CPUs (proxy on CPU 0, load on CPU 1)" >&2; exit 1; fi
  # The conn shapes open thousands of connections a second from 127.0.0.1;
  # without TIME_WAIT reuse on loopback the ephemeral ports run out.
  if [[ $(cat /proc/sys/net/ipv4/tcp_tw_reuse 2>/dev/null || echo 2) == 0 ]]; then
    echo "warning: net.ipv4.tcp_tw_reuse is 0: the conn shapes may run out of ephemeral ports (sysctl -w net.ipv4.tcp_tw_reuse=2)" >&2
  fi
}

build() {
  echo "building bench/l4load and coxswain" >&2
  (cd "$ROOT" && go build -o "$WORK/l4load" ./bench/l4load)
  build_coxswain
}

# endpoint_set names a backend's endpoint set in Coxswain's snapshot.
endpoint_set() { if [[ $1 == tls-* ]]; then echo "bench/$1:443"; else echo "bench/$1:80"; fi; }

hosts() { for i in $(seq 0 $((HOSTS - 1))); do echo "host-$i.bench.local"; done; }

write_configs() {
  local s h
  hosts >"$WORK/sni.lst"
  SNI=$(paste -sd, "$WORK/sni.lst")

  mkdir -p "$WORK/nginx"
  {
    if nginx_stream_dynamic; then echo "load_module $(nginx_modules_path)/ngx_stream_module.so;"; fi
    echo "worker_processes 1; master_process off; daemon off; pid $WORK/nginx/nginx.pid;"
    echo "error_log $WORK/nginx/error.log warn;"
    echo "events { worker_connections 4096; }"
    echo "stream {"
    echo "  access_log off;"
    echo "  proxy_half_close on; # relay a FIN one way and keep the other open, as HAProxy and Coxswain do"
    for b in "${!BACKEND[@]}"; do echo "  upstream ${b//-/_} { server 127.0.0.1:${BACKEND[$b]}; }"; done
    echo "  upstream refused { server 127.0.0.1:1; } # an SNI no route serves"
    for s in "${SHAPES[@]}"; do
      local u=${UPSTREAM[$s]//-/_} np=${PORT[nginx-$s]}
      if [[ $s == tls-* ]]; then
        echo "  map \$ssl_preread_server_name \$sni_$u {"
        for h in $(hosts); do echo "    $h $u;"; done
        echo "    default refused;"
        echo "  }"
        echo "  server { listen 127.0.0.1:$np; ssl_preread on; proxy_pass \$sni_$u; }"
      else
        echo "  server { listen 127.0.0.1:$np; proxy_pass $u; }"
      fi
    done
    echo "}"
  } >"$WORK/nginx/nginx.conf"

  {
    echo "global"
    echo "  nbthread 1"
    echo "  maxconn 4096"
    echo "defaults"
    echo "  mode tcp"
    echo "  timeout connect 5s"
    echo "  timeout client 60s"
    echo "  timeout server 60s"
    for s in "${SHAPES[@]}"; do
      local u=${UPSTREAM[$s]//-/_}
      echo "frontend ${s//-/_}"
      echo "  bind 127.0.0.1:${PORT[haproxy-$s]}"
      if [[ $s == tls-* ]]; then
        echo "  tcp-request inspect-delay 5s"
        echo "  tcp-request content accept if { req_ssl_hello_type 1 }"
        echo "  use_backend $u if { req_ssl_sni -i -f $WORK/sni.lst }"
        echo "  # no default_backend: an SNI no route serves is closed"
      else
        echo "  default_backend $u"
      fi
    done
    for b in "${!BACKEND[@]}"; do
      echo "backend ${b//-/_}"
      echo "  server s1 127.0.0.1:${BACKEND[$b]}"
    done
  } >"$WORK/haproxy.cfg"

  {
    echo "scope: {kind: SharedPool}"
    echo "endpointSets:"
    for b in $(printf '%s\n' "${!BACKEND[@]}" | sort); do
      echo "- name: $(endpoint_set "$b")"
      echo "  endpoints: [{address: 127.0.0.1, port: ${BACKEND[$b]}}]"
    done
    echo "listeners:"
    for s in "${SHAPES[@]}"; do
      local cp=${PORT[coxswain-$s]} u=${UPSTREAM[$s]}
      echo "- name: bench/$cp"
      echo "  port: $cp"
      if [[ $s == tls-* ]]; then
        echo "  protocol: TLS"
        echo "  streamRoutes:"
        for h in $(hosts | sort); do
          echo "  - {id: 'tlsroute/bench/${h%%.*}:0', hostname: $h, backends: [{endpointSet: '$(endpoint_set "$u")', weight: 1}]}"
        done
      else
        echo "  protocol: TCP"
        echo "  streamRoutes: [{id: 'tcproute/bench/$u:0', backends: [{endpointSet: '$(endpoint_set "$u")', weight: 1}]}]"
      fi
    done
  } >"$WORK/coxswain.yaml"
}

start() { # name, command...
  local name=$1; shift
  "$@" >"$WORK/$name.log" 2>&1 &
  PIDS+=($!)
  PID[$name]=$!
}

# gen runs the load generator on CPU 1.
gen() { GOMAXPROCS=1 taskset -c 1 "$WORK/l4load" "$@"; }

start_all() {
  "$WORK/l4load" cert -dir "$WORK"
  # Backends outlive the run only by a margin, even if nothing kills them.
  local lifetime=$((ROUNDS * ${#SHAPES[@]} * 3 * (DURATION + WARMUP + 3) + 600)) b tlsargs
  for b in "${!BACKEND[@]}"; do
    tlsargs=()
    [[ $b == tls-* ]] && tlsargs=(-cert "$WORK/cert.pem" -key "$WORK/key.pem")
    GOMAXPROCS=1 start "$b" taskset -c 1 "$WORK/l4load" "${b#tls-}" -addr "127.0.0.1:${BACKEND[$b]}" "${tlsargs[@]}" -lifetime "${lifetime}s"
  done
  for b in "${!BACKEND[@]}"; do wait_port "${BACKEND[$b]}"; done
  start nginx taskset -c 0 nginx -p "$WORK/nginx" -e "$WORK/nginx/error.log" -c "$WORK/nginx/nginx.conf"
  start haproxy taskset -c 0 haproxy -db -f "$WORK/haproxy.cfg"
  GOMAXPROCS=1 start coxswain taskset -c 0 "$WORK/coxswain" serve proxy --shared \
    --snapshot-file "$WORK/coxswain.yaml" --access-log=false --bind-host 127.0.0.1 \
    --health-probe-bind-address 127.0.0.1:19191 --metrics-bind-address 127.0.0.1:19192 --shutdown-drain-window 0
  local p s
  for s in "${SHAPES[@]}"; do
    for p in "${PROXIES[@]}"; do wait_port "${PORT[$p-$s]}"; done
  done
}

field() { # key, "k=v k=v …"
  awk -v k="$1" '{ for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[1] == k) print a[2] } }' <<<"$2"
}

# load_args sets ARGS to the generator's command for shape $1 on port $2,
# without its bound (-duration or -count).
load_args() {
  ARGS=()
  case $1 in
    *-conn) ARGS=(conn -c "$CONNECTIONS") ;;
    *-bulk) ARGS=(bulk -c "$BULK_CONNECTIONS") ;;
  esac
  ARGS+=(-addr "127.0.0.1:$2")
  [[ $1 == tls-* ]] && ARGS+=(-sni "$SNI" -ca "$WORK/cert.pem")
  return 0
}

fail_check() { # proxy shape what output
  echo "$1 ($2): $3:" >&2
  echo "$4" >&2
  cat "$WORK/$1.log" >&2
  [[ $1 != nginx ]] || cat "$WORK/nginx/error.log" >&2
  exit 1
}

# Every proxy must route every shape, and refuse an SNI no route serves,
# before anything is measured.
check_routes() {
  local p s out
  for s in "${SHAPES[@]}"; do
    for p in "${PROXIES[@]}"; do
      load_args "$s" "${PORT[$p-$s]}"
      if [[ $s == *-conn ]]; then
        out=$(gen "${ARGS[@]}" -count 40 2>&1)
        [[ $(field ok "$out") == 40 && $(field errors "$out") == 0 ]] || fail_check "$p" "$s" "40 exchanges" "$out"
      else
        out=$(gen "${ARGS[@]}" -duration 300ms 2>&1)
        [[ $(field ok "$out") == "$BULK_CONNECTIONS" && $(field errors "$out") == 0 && $(field bytes "$out") -gt 0 ]] ||
          fail_check "$p" "$s" "$BULK_CONNECTIONS streams" "$out"
      fi
      if [[ $s == tls-* ]]; then
        # nobody.bench.local is in the backend's certificate: only the
        # proxy's routing can refuse it.
        out=$(gen conn -addr "127.0.0.1:${PORT[$p-$s]}" -sni nobody.bench.local -ca "$WORK/cert.pem" -c 1 -count 2 -timeout 2s 2>&1)
        [[ $(field ok "$out") == 0 && $(field errors "$out") == 2 ]] || fail_check "$p" "$s" "an unrouted SNI was served" "$out"
      fi
    done
  done
  echo "every proxy routes every shape (and refuses an unrouted SNI)" >&2
}

run_one() { # proxy shape round
  local p=$1 s=$2 r=$3 pid=${PID[$1]}
  load_args "$s" "${PORT[$p-$s]}"
  if [[ $WARMUP != 0 ]]; then gen "${ARGS[@]}" -duration "${WARMUP}s" >/dev/null 2>&1 || true; fi
  local t0 t1 out
  t0=$(cpu_ticks "$pid")
  out=$(gen "${ARGS[@]}" -duration "${DURATION}s" 2>"$WORK/gen.err")
  t1=$(cpu_ticks "$pid")
  local ok errs bytes secs
  ok=$(field ok "$out"); errs=$(field errors "$out"); bytes=$(field bytes "$out"); secs=$(field seconds "$out")
  if [[ $errs != 0 ]]; then
    echo "warning: $p $s round $r: $errs errors ($ok completed)" >&2
    cat "$WORK/gen.err" >&2
  fi
  local units
  if [[ $s == *-conn ]]; then units=$ok; else units=$(awk -v b="$bytes" 'BEGIN { printf "%.6f", b / 1048576 }'); fi
  if awk -v u="$units" 'BEGIN { exit !(u <= 0) }'; then
    echo "warning: $p $s round $r: nothing completed, round not counted" >&2
    return 0
  fi
  local hz; hz=$(getconf CLK_TCK)
  awk -v s="$s" -v p="$p" -v r="$r" -v d=$((t1 - t0)) -v hz="$hz" -v u="$units" -v secs="$secs" -v e="$errs" \
    'BEGIN { printf "%s %s %s %.2f %.1f %s\n", s, p, r, d / hz * 1e6 / u, u / secs, e }' >>"$WORK/results.txt"
}

report() {
  echo
  echo "Median of $ROUNDS interleaved rounds, ${DURATION}s each; conn shapes $CONNECTIONS connections at a time, bulk shapes $BULK_CONNECTIONS;"
  echo "proxy on CPU 0, load generator + backends on CPU 1. cpu_us is the proxy's CPU per connection (conn) or per MiB (bulk)."
  printf '%-22s %-9s %10s %-5s %11s %-7s %10s\n' shape proxy cpu_us per rate unit cpu/nginx
  local s p
  for s in "${SHAPES[@]}"; do
    local per=conn unit=conn/s ncpu
    [[ $s == *-bulk ]] && per=MiB unit=MiB/s
    ncpu=$(awk -v s="$s" '$1 == s && $2 == "nginx" {print $4}' "$WORK/results.txt" | median)
    for p in "${PROXIES[@]}"; do
      local cpu rate
      cpu=$(awk -v s="$s" -v p="$p" '$1 == s && $2 == p {print $4}' "$WORK/results.txt" | median)
      rate=$(awk -v s="$s" -v p="$p" '$1 == s && $2 == p {print $5}' "$WORK/results.txt" | median)
      awk -v s="$s" -v p="$p" -v c="$cpu" -v r="$rate" -v nc="$ncpu" -v per="$per" -v unit="$unit" \
        'BEGIN { ratio = (c == "nan" || nc == "nan" || nc == 0) ? "n/a" : sprintf("%.2fx", c / nc)
                 printf "%-22s %-9s %10.1f %-5s %11.1f %-7s %10s\n", s, p, c, per, r, unit, ratio }'
    done
  done
  echo
  echo "raw rounds (shape proxy round cpu_us per conn or MiB, rate conn/s or MiB/s, errors):"
  sort -k1,1 -k2,2 -k3,3n "$WORK/results.txt"
}

need
build
write_configs
start_all
check_routes
run_rounds "${SHAPES[@]}"
report
