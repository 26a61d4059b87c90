#!/usr/bin/env bash
# Copyright 2026 The Coxswain Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# Runs the upstream Gateway API conformance suite against Coxswain on the
# container-free local cluster (docs/conformance.md). `make conformance`
# builds everything and calls this with:
#
#   LOCALCLUSTER       bin/localcluster
#   COXSWAIN           bin/coxswain (the binary behind coxswain images)
#   ECHO_BASIC         bin/echo-basic
#   COREDNS            bin/coredns (the binary behind the coredns image, the
#                      suite's UDP backend)
#   ASSETS             envtest asset directory (etcd, kube-apiserver,
#                      kube-controller-manager, kubectl)
#   REPO               repository root (config/default is applied from it)
#   GATEWAY_API_CRDS   the gateway-api module's config/crd/<channel>
#   TEST_BIN           the compiled test/conformance test binary
#   REPORT             where the conformance report YAML goes
#   WORKDIR            work directory (cluster state, logs), wiped at start
#   VERSION            Coxswain's version, recorded in the report
#   PROFILES           conformance profiles (default: the five Gateway profiles)
#   CONFORMANCE_ARGS   extra suite flags (e.g. -run-test=HTTPRouteSimpleSameNamespace)
#   LOCK_WAIT          seconds to wait for another local cluster to stop (default 600)
#   KEEP=1             leave the cluster running after the suite (Ctrl-C stops it)
#   MODE               default: GatewayClass coxswain, Gateways on the shared
#                      proxy pool; dedicated: GatewayClass coxswain-dedicated
#                      (parametersRef), every Gateway gets its own proxies
#
# Steps: start `localcluster up` in the background (by PID), install the
# Gateway API CRDs, Coxswain (config/default: the controller runs as a local
# pod and provisions the shared proxy pool) and the GatewayClass `coxswain`,
# wait until the class is Accepted, run the suite, print the counts, then
# stop the cluster (SIGTERM to its PID) whatever happened.
set -euo pipefail

: "${LOCALCLUSTER:?}" "${COXSWAIN:?}" "${ECHO_BASIC:?}" "${COREDNS:?}" "${ASSETS:?}" "${REPO:?}"
: "${GATEWAY_API_CRDS:?}" "${TEST_BIN:?}" "${REPORT:?}" "${WORKDIR:?}"
VERSION="${VERSION:-dev}"
PROFILES="${PROFILES:-GATEWAY-HTTP,GATEWAY-GRPC,GATEWAY-TLS,GATEWAY-TCP,GATEWAY-UDP}"
CONFORMANCE_ARGS="${CONFORMANCE_ARGS:-}"
LOCK_WAIT="${LOCK_WAIT:-600}"
MODE="${MODE:-default}"
case "$MODE" in
default) GATEWAY_CLASS=coxswain ;;
dedicated) GATEWAY_CLASS=coxswain-dedicated ;;
*) echo "conformance: MODE must be default or dedicated" >&2; exit 1 ;;
esac

log() { printf '==> %s\n' "$*"; }
die() { printf 'conformance: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (the local cluster uses network namespaces and a bridge)"
for f in "$LOCALCLUSTER" "$COXSWAIN" "$ECHO_BASIC" "$COREDNS" "$ASSETS/kubectl" "$TEST_BIN"; do
	[ -x "$f" ] || die "missing executable $f"
done
[ -d "$GATEWAY_API_CRDS" ] || die "missing Gateway API CRD directory $GATEWAY_API_CRDS"

# One run per work directory: a second run must not wipe a running one's.
exec 9>"${WORKDIR%/}.lock"
flock -w "$LOCK_WAIT" 9 || die "another conformance run still uses $WORKDIR"
rm -rf "$WORKDIR"
mkdir -p "$WORKDIR" "$(dirname "$REPORT")"
READY="$WORKDIR/ready"
KUBECONFIG="$WORKDIR/kubeconfig"
export KUBECONFIG
CLUSTER_LOG="$WORKDIR/localcluster.log"
LC_PID=""

stop_cluster() {
	local rc=$?
	if [ -n "$LC_PID" ] && kill -0 "$LC_PID" 2>/dev/null; then
		log "stopping the local cluster (pid $LC_PID)"
		kill -TERM "$LC_PID" 2>/dev/null || true
		for _ in $(seq 1 60); do
			kill -0 "$LC_PID" 2>/dev/null || break
			sleep 1
		done
		if kill -0 "$LC_PID" 2>/dev/null; then
			kill -KILL "$LC_PID" 2>/dev/null || true
			"$LOCALCLUSTER" down >/dev/null 2>&1 || true
		fi
		wait "$LC_PID" 2>/dev/null || true
	fi
	exit "$rc"
}
trap stop_cluster EXIT
trap 'exit 130' INT TERM

kubectl() { timeout 300 "$ASSETS/kubectl" --kubeconfig "$KUBECONFIG" "$@"; }

log "starting the local cluster (log: $CLUSTER_LOG; waits up to ${LOCK_WAIT}s for another local cluster to stop)"
"$LOCALCLUSTER" up --assets "$ASSETS" --dir "$WORKDIR/cluster" \
	--echo-basic "$ECHO_BASIC" --coxswain "$COXSWAIN" --coredns "$COREDNS" --lock-wait "${LOCK_WAIT}s" \
	--kubeconfig-out "$KUBECONFIG" --ready-file "$READY" >"$CLUSTER_LOG" 2>&1 &
LC_PID=$!
for _ in $(seq 1 $(((LOCK_WAIT + 180) * 2))); do
	[ -f "$READY" ] && break
	if ! kill -0 "$LC_PID" 2>/dev/null; then
		wait "$LC_PID" 2>/dev/null || true
		LC_PID=""
		tail -n 30 "$CLUSTER_LOG" >&2
		die "the local cluster did not start (log: $CLUSTER_LOG)"
	fi
	sleep 0.5
done
[ -f "$READY" ] || { tail -n 30 "$CLUSTER_LOG" >&2; die "the local cluster was not ready in time (log: $CLUSTER_LOG)"; }

log "Gateway API CRDs ($GATEWAY_API_CRDS)"
if [ -f "$GATEWAY_API_CRDS/kustomization.yaml" ]; then
	kubectl apply --server-side -k "$GATEWAY_API_CRDS" >/dev/null # the experimental channel
else
	kubectl apply --server-side -f "$GATEWAY_API_CRDS" >/dev/null
fi
log "Coxswain (config/default)"
kubectl apply --server-side -k "$REPO/config/default" >/dev/null
kubectl wait --for=condition=Established crd --all --timeout=60s >/dev/null
log "GatewayClass $GATEWAY_CLASS"
if [ "$MODE" = dedicated ]; then
	kubectl apply --server-side -f - >/dev/null <<EOF
apiVersion: gateway.coxswain-labs.dev/v1alpha1
kind: CoxswainGatewayParameters
metadata:
  name: conformance-dedicated
  namespace: coxswain-system
spec:
  replicas: 1
  serviceType: LoadBalancer
---
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: $GATEWAY_CLASS
spec:
  controllerName: coxswain-labs.dev/gateway-controller
  parametersRef:
    group: gateway.coxswain-labs.dev
    kind: CoxswainGatewayParameters
    name: conformance-dedicated
    namespace: coxswain-system
EOF
else
	kubectl apply --server-side -f - >/dev/null <<EOF
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata:
  name: $GATEWAY_CLASS
spec:
  controllerName: coxswain-labs.dev/gateway-controller
EOF
fi

log "waiting for the controller and GatewayClass $GATEWAY_CLASS Accepted"
ok=""
for _ in $(seq 1 180); do
	if kubectl wait --for=condition=Accepted "gatewayclass/$GATEWAY_CLASS" --timeout=1s >/dev/null 2>&1; then
		features="$(kubectl get gatewayclass "$GATEWAY_CLASS" -o jsonpath='{.status.supportedFeatures[*].name}')"
		if [ -n "$features" ]; then
			ok=1
			break
		fi
	fi
	sleep 1
done
if [ -z "$ok" ]; then
	kubectl get pods -A -o wide >&2 || true
	kubectl get gatewayclass "$GATEWAY_CLASS" -o yaml >&2 || true
	die "GatewayClass $GATEWAY_CLASS not Accepted with supportedFeatures after 180 s"
fi
echo "supported features (GatewayClass status): $features"

args=(
	-test.v -test.run '^TestConformance$' -test.timeout 60m
	-gateway-class="$GATEWAY_CLASS"
	-conformance-profiles="$PROFILES"
	-report-output="$REPORT"
	-organization=coxswain-go -project=coxswain
	-url=https://github.com/coxswain-go/coxswain -version="$VERSION"
	-contact=https://github.com/coxswain-go/coxswain/issues
	-cleanup-base-resources=false
	-mode="$MODE"
	# GatewayStaticAddresses: a ClusterIP inside the local cluster's Service
	# range (10.96.0.0/16) that nothing else takes, and one outside it.
	-usable-address=10.96.255.200
	-unusable-address=192.0.2.1
)
# The suite reads the supported features from the GatewayClass unless told
# otherwise; a single test (-run-test) needs them named.
case " $CONFORMANCE_ARGS " in
*" -run-test"*) args+=(-supported-features="${features// /,}") ;;
esac
# shellcheck disable=SC2206
args+=($CONFORMANCE_ARGS)

log "running the Gateway API conformance suite (log: $WORKDIR/conformance.log)"
rc=0
(cd "$(dirname "$TEST_BIN")" && COXSWAIN_CONFORMANCE=1 "$TEST_BIN" "${args[@]}") 2>&1 | tee "$WORKDIR/conformance.log" || rc=$?

# Keep what is needed to explain a failure; the cluster goes away next.
kubectl get gatewayclasses,gateways,httproutes,referencegrants -A -o yaml >"$WORKDIR/gateway-api-objects.yaml" 2>&1 || true
kubectl get pods,services,endpointslices -A -o wide >"$WORKDIR/pods-services.txt" 2>&1 || true

if [ -f "$REPORT" ]; then
	log "report: $REPORT"
else
	echo "conformance: no report was written" >&2
	[ "$rc" = 0 ] && rc=1
fi
echo "logs: $WORKDIR (pods: $WORKDIR/cluster/logs/pods)"
if [ "${KEEP:-}" = 1 ]; then
	echo "KEEP=1: the cluster keeps running; export KUBECONFIG=$KUBECONFIG; Ctrl-C stops it"
	wait "$LC_PID" || true
fi
exit "$rc"
