#!/usr/bin/env bash
# Copyright 2026 The Coxswain Authors.
# Licensed under the Apache License, Version 2.0 (see the header of any .go file).
#
# bench/policies.sh: what each route policy adds to the CPU one proxied
# request costs Coxswain's proxy, as ratios to the same proxy without it,
# measured in one run.
#
#   - one Coxswain per variant, each on its own port with one route:
#     plain (no policy), jwt (an inline ES256 JWKS, issuer and audience;
#     wrk sends a valid Bearer token), basicauth (one bcrypt cost 10 user;
#     wrk sends its Basic credentials), ratelimit (a local ClientIP limit
#     that never limits: the bookkeeping only), ipallow (three allowed
#     CIDRs, 127.0.0.0/8 among them), and per size Z of COMPRESSION_SIZES
#     plain-Zk and compression-Zk (gzip, minBytes 0) in front of a backend
#     answering Z KiB of text, wrk sending Accept-Encoding: gzip to both;
#   - every proxy runs GOMAXPROCS=1 pinned to CPU 0 (taskset); wrk and the
#     backends (bench/backend, GOMAXPROCS=1) share CPU 1;
#   - before measuring, every variant must be seen applying its policy
#     (401 without or with wrong credentials and 200 with good ones, 403 /
#     429 under a stricter probe snapshot the proxy then reloads away from,
#     RateLimit-Limit on the answers, a gzip body that inflates to Z KiB),
#     so a broken configuration cannot produce a ratio;
#   - rounds are interleaved (every variant once per round, the order
#     rotating) and each figure is the median over the rounds;
#   - CPU per request is the proxy's utime+stime delta (/proc/PID/stat) over
#     the requests wrk completed; p50/p99 are wrk's latency percentiles;
#     compression is also reported per KiB: (compression-Zk - plain-Zk) / Z.
#
# Environment: ROUNDS (default 5), DURATION seconds per run (default 8),
# CONNECTIONS (default 32), WARMUP seconds before each run (default 1),
# COMPRESSION_SIZES KiB, space-separated (default "16"), GOAL the ratio to
# plain the auth, rate limit and IP policies should stay within (default
# 1.10), COXSWAIN_BIN (a prebuilt coxswain binary; else it is built from
# this checkout), KEEP=1 keeps the work directory.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-8}
CONNECTIONS=${CONNECTIONS:-32}
WARMUP=${WARMUP:-1}
GOAL=${GOAL:-1.10}
read -r -a SIZES <<<"${COMPRESSION_SIZES:-16}"
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d /tmp/coxswain-policybench.XXXXXX)
PASSWORD=bench-password
ISSUER=https://issuer.bench.local
AUDIENCE=coxswain-bench
# The policies the goal applies to; the rest are reported for reference.
GOAL_VARIANTS=(jwt basicauth ratelimit ipallow)
VARIANTS=(plain "${GOAL_VARIANTS[@]}")
declare -A BACKEND_PORT=([64b]=18490) # backend name → port
for z in "${SIZES[@]}"; do
  [[ $z =~ ^[1-9][0-9]*$ ]] || { echo "COMPRESSION_SIZES: $z is not a positive number of KiB" >&2; exit 2; }
  VARIANTS+=("plain-${z}k" "compression-${z}k")
  BACKEND_PORT[${z}k]=$((18491 + ${#BACKEND_PORT[@]} - 1))
done
declare -A PORT=() PID=()
for i in "${!VARIANTS[@]}"; do PORT[${VARIANTS[$i]}]=$((18401 + i)); done
PIDS=()

# shellcheck source=lib.sh
source "$ROOT/bench/lib.sh"

need() {
  local missing=()
  for tool in wrk:wrk taskset:util-linux curl:curl gzip:gzip base64:coreutils; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || missing+=("${tool##*:}")
  done
  if ((${#missing[@]})); then apt_install "${missing[@]}"; fi
  if [[ $(nproc) -lt 2 ]]; then echo "need at least 2 CPUs (proxy on CPU 0, load on CPU 1)" >&2; exit 1; fi
}

build() {
  echo "building the backend, bench/policytoken and coxswain" >&2
  (cd "$ROOT" && go build -o "$WORK/backend" ./bench/backend && go build -o "$WORK/policytoken" ./bench/policytoken)
  build_coxswain
}

# credentials makes a throwaway ES256 key (its JWKS and a token it signed,
# valid for ten years) and the bcrypt hash of PASSWORD.
credentials() {
  local out
  out=$("$WORK/policytoken" -issuer "$ISSUER" -audience "$AUDIENCE" -password "$PASSWORD" -cost 10)
  JWKS=$(sed -n 's/^jwks //p' <<<"$out")
  TOKEN=$(sed -n 's/^token //p' <<<"$out")
  HASH=$(sed -n 's/^bcrypt //p' <<<"$out")
  BASIC=$(printf 'bench:%s' "$PASSWORD" | base64 -w0)
  # The same token with its signature reversed: well-formed, but forged.
  local sig=${TOKEN##*.}
  BAD_TOKEN=${TOKEN%.*}.$(rev <<<"$sig")
  [[ -n $JWKS && -n $TOKEN && $HASH == "\$2"* && $BAD_TOKEN != "$TOKEN" ]] || { echo "policytoken printed: $out" >&2; exit 1; }
}

# backend_of names the backend variant $1 proxies to.
backend_of() {
  case $1 in
    plain-*k | compression-*k) local z=${1#*-}; echo "$z" ;;
    *) echo 64b ;;
  esac
}

# policy prints the route policy of variant $1, indented for its route;
# with $2 = probe, the stricter setting the proxy starts with (see check).
policy() {
  case $1 in
    jwt) echo "      jwt: {jwks: '$JWKS', issuer: '$ISSUER', audiences: ['$AUDIENCE']}" ;;
    basicauth) echo "      basicAuth: {users: [{name: bench, hash: '$HASH'}]}" ;;
    ratelimit)
      if [[ ${2:-} == probe ]]; then
        echo "      rateLimit: {name: bench/rl, requests: 1, period: 1h, key: ClientIP}"
      else
        echo "      rateLimit: {name: bench/rl, requests: 1000000000, period: 1s, key: ClientIP}"
      fi
      ;;
    ipallow)
      if [[ ${2:-} == probe ]]; then
        echo "      ipAccess: {allow: [10.0.0.0/8]}"
      else
        echo "      ipAccess: {allow: [127.0.0.0/8, 10.0.0.0/8, 192.168.0.0/16]}"
      fi
      ;;
    compression-*) echo "      compression: {algorithms: [gzip], minBytes: 0}" ;;
  esac
}

# write_snapshot writes variant $1's snapshot file (the probe one with $2 =
# probe) by rename, so the proxy never reads half of it.
write_snapshot() {
  local v=$1 port=${PORT[$1]} b; b=$(backend_of "$1")
  {
    echo "scope: {kind: SharedPool}"
    echo "endpointSets:"
    echo "- name: bench/backend-$b:80"
    echo "  endpoints: [{address: 127.0.0.1, port: ${BACKEND_PORT[$b]}}]"
    echo "listeners:"
    echo "- name: bench/$port"
    echo "  port: $port"
    echo "  protocol: HTTP"
    echo "  virtualHosts:"
    echo "  - hostname: \"*\""
    echo "    routes:"
    echo "    - id: bench:0"
    echo "      accessLogOff: true"
    echo "      backends: [{endpointSet: bench/backend-$b:80, weight: 1}]"
    policy "$v" "${2:-}"
  } >"$WORK/coxswain-$v.yaml.tmp"
  mv "$WORK/coxswain-$v.yaml.tmp" "$WORK/coxswain-$v.yaml"
}

# headers sets HDR to the request headers wrk (and the checks) send to
# variant $1.
headers() {
  HDR=()
  case $1 in
    jwt) HDR=(-H "Authorization: Bearer $TOKEN") ;;
    basicauth) HDR=(-H "Authorization: Basic $BASIC") ;;
    plain-*k | compression-*k) HDR=(-H "Accept-Encoding: gzip") ;;
  esac
  return 0
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

start_all() {
  local b v i=0
  for b in "${!BACKEND_PORT[@]}"; do
    local args=(-addr "127.0.0.1:${BACKEND_PORT[$b]}")
    [[ $b == 64b ]] || args+=(-size $((${b%k} * 1024)) -body text)
    free "${BACKEND_PORT[$b]}"
    GOMAXPROCS=1 start "backend-$b" taskset -c 1 "$WORK/backend" "${args[@]}"
  done
  for b in "${!BACKEND_PORT[@]}"; do wait_port "${BACKEND_PORT[$b]}"; done
  for v in "${VARIANTS[@]}"; do
    case $v in
      ratelimit | ipallow) write_snapshot "$v" probe ;;
      *) write_snapshot "$v" ;;
    esac
    local hp=$((18501 + i)) mp=$((18601 + i))
    i=$((i + 1))
    for p in "${PORT[$v]}" "$hp" "$mp"; do free "$p"; done
    GOMAXPROCS=1 start "$v" taskset -c 0 "$WORK/coxswain" serve proxy --shared \
      --snapshot-file "$WORK/coxswain-$v.yaml" --access-log=false --bind-host 127.0.0.1 \
      --health-probe-bind-address "127.0.0.1:$hp" --metrics-bind-address "127.0.0.1:$mp" \
      --shutdown-drain-window 0
  done
  for v in "${VARIANTS[@]}"; do wait_port "${PORT[$v]}" || fail "$v" "its listener never opened"; done
}

fail() { # variant, what went wrong
  echo "$1: $2" >&2
  echo "--- its snapshot ($WORK/coxswain-$1.yaml):" >&2
  cat "$WORK/coxswain-$1.yaml" >&2
  echo "--- its log:" >&2
  tail -n 40 "$WORK/$1.log" >&2
  # shellcheck disable=SC2034 # read by lib.sh's cleanup: keep the evidence
  KEEP=1
  exit 1
}

# status prints the status code variant $1 answers to curl with the
# remaining arguments (000 when it does not answer).
status() {
  local v=$1; shift
  curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$@" "http://127.0.0.1:${PORT[$v]}/" || true
}

expect() { # variant, status, what, curl arguments...
  local v=$1 want=$2 what=$3 got; shift 3
  got=$(status "$v" "$@")
  [[ $got == "$want" ]] || fail "$v" "$what: want $want, got $got"
}

# reload writes variant $1's real snapshot over its probe one and waits
# (15 s at most) until the proxy answers 200.
reload() {
  write_snapshot "$1"
  for _ in $(seq 1 150); do
    [[ $(status "$1") == 200 ]] && return 0
    sleep 0.1
  done
  fail "$1" "still refused 15 s after its real snapshot replaced the probe one"
}

# check makes sure every variant applies its policy, and only it, before
# anything is measured.
check() {
  local v
  for v in "${VARIANTS[@]}"; do
    headers "$v"
    case $v in
      plain)
        expect plain 200 "no policy" ;;
      jwt)
        expect jwt 401 "no token"
        expect jwt 401 "a forged token" -H "Authorization: Bearer $BAD_TOKEN"
        expect jwt 200 "a valid token" "${HDR[@]}" ;;
      basicauth)
        expect basicauth 401 "no credentials"
        expect basicauth 401 "a wrong password" -H "Authorization: Basic $(printf 'bench:wrong' | base64 -w0)"
        expect basicauth 200 "good credentials" "${HDR[@]}" ;;
      ratelimit)
        # The probe snapshot admits one request an hour.
        expect ratelimit 200 "the first request under the probe limit (1 per hour)"
        expect ratelimit 429 "the second request under the probe limit (1 per hour)"
        reload ratelimit
        local limit
        limit=$(curl -s -o /dev/null -D - --max-time 10 "http://127.0.0.1:${PORT[ratelimit]}/" |
          awk -F': *' 'tolower($1) == "ratelimit-limit" { sub(/\r$/, "", $2); print $2 }')
        [[ $limit == 1000000000 ]] || fail ratelimit "RateLimit-Limit is '$limit', want 1000000000 (the real snapshot's limit)" ;;
      ipallow)
        # The probe snapshot allows 10.0.0.0/8 only; the checks come from 127.0.0.1.
        expect ipallow 403 "a client outside the probe's allow list"
        reload ipallow ;;
      plain-*k | compression-*k)
        local z=${v#*-} got enc
        z=${z%k}
        curl -s -D "$WORK/check.head" -o "$WORK/check.body" --max-time 10 "${HDR[@]}" "http://127.0.0.1:${PORT[$v]}/" || true
        enc=$(awk -F': *' 'tolower($1) == "content-encoding" { sub(/\r$/, "", $2); print $2 }' "$WORK/check.head")
        if [[ $v == compression-* ]]; then
          [[ $enc == gzip ]] || fail "$v" "Content-Encoding is '$enc', want gzip"
          got=$(gzip -dc "$WORK/check.body" | wc -c) || fail "$v" "the body is not gzip"
          [[ $(wc -c <"$WORK/check.body") -lt $got ]] || fail "$v" "the gzip body is not smaller than the text"
        else
          [[ -z $enc ]] || fail "$v" "Content-Encoding is '$enc' without a compression policy"
          got=$(wc -c <"$WORK/check.body")
        fi
        [[ $got == $((z * 1024)) ]] || fail "$v" "the body is $got bytes, want $((z * 1024))"
        expect "$v" 200 "the ${z} KiB text" "${HDR[@]}" ;;
    esac
  done
  echo "every variant applies its policy: 401 without or with wrong credentials, 403 / 429 under the probe snapshots, gzip bodies" >&2
}

run_one() { # variant, case (unused), round
  local v=$1 r=$3 port=${PORT[$1]} pid=${PID[$1]}
  headers "$v"
  if [[ $WARMUP != 0 ]]; then
    taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${WARMUP}s" "${HDR[@]}" "http://127.0.0.1:$port/" >/dev/null
  fi
  local t0 t1 out
  t0=$(cpu_ticks "$pid")
  out=$(taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency "${HDR[@]}" "http://127.0.0.1:$port/")
  t1=$(cpu_ticks "$pid")
  local reqs p50 p99
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  p50=$(to_ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")
  p99=$(to_ms "$(awk '$1 == "99%" {print $2}' <<<"$out")")
  # A refused request costs less than a served one: the run would be a
  # measurement of the refusal.
  if grep -q 'Non-2xx' <<<"$out"; then
    echo "$v round $r: the proxy refused requests under load:" >&2
    echo "$out" >&2
    fail "$v" "non-2xx answers under load"
  fi
  if grep -q 'Socket errors' <<<"$out"; then echo "warning: $v round $r: $(grep 'Socket errors' <<<"$out")" >&2; fi
  local hz; hz=$(getconf CLK_TCK)
  awk -v v="$v" -v r="$r" -v d=$((t1 - t0)) -v hz="$hz" -v n="$reqs" -v p50="$p50" -v p99="$p99" -v dur="$DURATION" \
    'BEGIN { printf "%s %s %.2f %s %s %.0f\n", v, r, d / hz * 1e6 / n, p50, p99, n / dur }' >>"$WORK/results.txt"
}

col() { # variant, column of results.txt → its median
  awk -v v="$1" -v c="$2" '$1 == v {print $c}' "$WORK/results.txt" | median
}

# base_of is the variant variant $1's ratio is to.
base_of() {
  case $1 in
    compression-*) echo "plain-${1#*-}" ;;
    *) echo plain ;;
  esac
}

report() {
  echo
  echo "Median of $ROUNDS interleaved rounds, ${DURATION}s each, $CONNECTIONS connections; proxy on CPU 0, wrk + backends on CPU 1"
  printf '%-16s %11s %-10s %7s %7s %-4s %9s %9s %9s\n' variant "cpu_us/req" base ratio goal "" "p50_ms" "p99_ms" "req/s"
  local v base g
  for v in "${VARIANTS[@]}"; do
    base=$(base_of "$v")
    g=-
    [[ " ${GOAL_VARIANTS[*]} " == *" $v "* ]] && g=$GOAL
    awk -v v="$v" -v base="$base" -v c="$(col "$v" 3)" -v bc="$(col "$base" 3)" -v g="$g" \
      -v a="$(col "$v" 4)" -v b="$(col "$v" 5)" -v rps="$(col "$v" 6)" '
      BEGIN {
        ratio = (c == "nan" || bc == "nan" || bc == 0) ? "n/a" : sprintf("%.2fx", c / bc)
        goal = (g == "-") ? "-" : "<=" g
        verdict = (g == "-" || ratio == "n/a") ? "" : (c / bc <= g + 0) ? "ok" : "OVER"
        printf "%-16s %11.1f %-10s %7s %7s %-4s %9.3f %9.3f %9.0f\n", v, c, (v == base ? "-" : base), ratio, goal, verdict, a, b, rps
      }'
  done
  echo
  local z
  for z in "${SIZES[@]}"; do
    awk -v z="$z" -v c="$(col "compression-${z}k" 3)" -v pc="$(col "plain-${z}k" 3)" '
      BEGIN { printf "compression (gzip), %d KiB text: %.2f us/KiB  (compression-%dk - plain-%dk) / %d;  compression-%dk / plain-%dk = %.2fx\n",
                     z, (c - pc) / z, z, z, z, z, z, c / pc }'
  done
  echo
  echo "raw rounds (variant round cpu_us/req p50_ms p99_ms req/s):"
  sort -k1,1 -k2,2n "$WORK/results.txt"
}

need
build
credentials
start_all
check
# run_rounds rotates its PROXIES each round: here, the variants.
# shellcheck disable=SC2034 # read by run_rounds
PROXIES=("${VARIANTS[@]}")
run_rounds policies
report
