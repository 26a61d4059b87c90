# shellcheck shell=bash
# Copyright 2026 The Coxswain Authors.
# Licensed under the Apache License, Version 2.0 (see the header of any .go file).
#
# bench/lib.sh: what bench/proxy.sh, bench/l4.sh and bench/policies.sh share. Source it after
# setting WORK (the work directory) and PIDS (an array); it installs the
# EXIT trap that stops every started process and removes WORK (KEEP=1
# keeps it).

cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [[ "${KEEP:-0}" != 1 ]]; then rm -rf "$WORK"; else echo "work directory kept: $WORK"; fi
}
trap cleanup EXIT

# wait_port waits (10 s at most) until something listens on 127.0.0.1:$1.
wait_port() {
  for _ in $(seq 1 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  return 1
}

# cpu_ticks is the user + system clock ticks process $1 used so far.
cpu_ticks() {
  [[ -r /proc/$1/stat ]] || { echo "process $1 exited" >&2; return 1; }
  awk '{print $14 + $15}' "/proc/$1/stat"
}

# box_ticks prints the machine's busy CPU time in clock ticks, all CPUs
# (/proc/stat: user, nice, system, irq, softirq; steal and idle left out).
box_ticks() {
  awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8}' /proc/stat
}

# median of the numbers on stdin ("nan" for none).
median() { sort -g | awk '{a[NR] = $1} END { if (NR == 0) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }

# run_rounds runs run_one PROXY CASE ROUND for ROUNDS interleaved rounds
# over the cases given as arguments and every entry of PROXIES, rotating
# the order each round so no proxy always runs first.
run_rounds() {
  local r s i p n=${#PROXIES[@]}
  : >"$WORK/results.txt"
  for r in $(seq 1 "$ROUNDS"); do
    for s in "$@"; do
      for ((i = 0; i < n; i++)); do
        p=${PROXIES[$(((i + r) % n))]}
        run_one "$p" "$s" "$r"
      done
    done
    echo "round $r/$ROUNDS done" >&2
  done
}

# apt_install installs the Debian packages given as arguments (with sudo
# unless root), running apt-get update first only when the install fails.
apt_install() {
  echo "installing $* from apt" >&2
  local sudo=""
  [[ $(id -u) == 0 ]] || sudo=sudo
  $sudo apt-get install -y "$@" >/dev/null 2>&1 ||
    { $sudo apt-get update >/dev/null && $sudo apt-get install -y "$@" >/dev/null; }
}

# to_ms converts a wrk latency (512.00us, 1.20ms, 2.00s) to milliseconds.
to_ms() {
  awk -v v="$1" 'BEGIN { n = v + 0; if (v ~ /us$/) n /= 1000; else if (v ~ /ms$/) n += 0; else if (v ~ /s$/) n *= 1000; printf "%.3f", n }'
}

# build_coxswain puts coxswain into $WORK with coxswain-proxy beside it, as
# in the image (coxswain's `serve proxy` hands over to it): built from
# $ROOT, or copied from $COXSWAIN_BIN and the coxswain-proxy beside it, if
# any (without one the proxy runs in coxswain itself).
build_coxswain() {
  if [[ -n "${COXSWAIN_BIN:-}" ]]; then
    cp "$COXSWAIN_BIN" "$WORK/coxswain"
    local beside
    beside="$(dirname "$COXSWAIN_BIN")/coxswain-proxy"
    if [[ -x "$beside" ]]; then cp "$beside" "$WORK/coxswain-proxy"; fi
  else
    (cd "$ROOT" && go build -trimpath -ldflags "-s -w" -o "$WORK/coxswain" ./cmd/coxswain &&
      go build -trimpath -ldflags "-s -w" -o "$WORK/coxswain-proxy" ./cmd/coxswain-proxy)
  fi
}
