/*
Copyright 2026 The Coxswain Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

	http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package translator

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// The CoxswainBackendPolicy defaults (Envoy's, where it has them).
const (
	defaultOutlierConsecutive  = 5
	defaultOutlierBaseEjection = 30 * time.Second
	defaultOutlierMaxEjection  = 300 * time.Second
	defaultOutlierMaxPercent   = 10
	defaultHealthInterval      = 5 * time.Second
	defaultHealthTimeout       = time.Second
	defaultHealthyThreshold    = 1
	defaultUnhealthyThreshold  = 3
)

// compileBackendPolicies compiles every CoxswainBackendPolicy: settings of
// the endpoint sets of the Service ports it covers, shared by every route
// that uses them.
func compileBackendPolicies(t *translator) {
	addPolicies(t, gatewayv1alpha1.KindBackendPolicy, t.res.BackendPolicies,
		func(p *gatewayv1alpha1.CoxswainBackendPolicy) (*metav1.ObjectMeta, []gwv1.LocalPolicyTargetReferenceWithSectionName) {
			return &p.ObjectMeta, p.Spec.TargetRefs
		},
		func(o *gatewayv1alpha1.CoxswainBackendPolicy, p *policy) {
			var b backendSettings
			if msg := b.compile(&o.Spec); msg != "" {
				p.invalidf("%s", msg)
				return
			}
			p.backend = b.apply
		})
}

// backendSettings are a CoxswainBackendPolicy's endpoint-set settings.
type backendSettings struct {
	lb      snapshot.LoadBalancer
	hash    *snapshot.HashPolicy
	connect snapshot.Duration
	idle    snapshot.Duration
	breaker *snapshot.CircuitBreaker
	outlier *snapshot.OutlierDetection
	health  *snapshot.HealthCheck
}

func (b *backendSettings) apply(es *snapshot.EndpointSet) {
	es.LoadBalancer, es.Hash, es.ConnectTimeout, es.IdleTimeout = b.lb, b.hash, b.connect, b.idle
	es.CircuitBreaker, es.Outlier, es.HealthCheck = b.breaker, b.outlier, b.health
}

// compile validates a spec; the message names the bad field.
func (b *backendSettings) compile(s *gatewayv1alpha1.CoxswainBackendPolicySpec) string {
	dur := func(field string, d *gwv1.Duration, def time.Duration, out *snapshot.Duration) string {
		*out = snapshot.Duration(def)
		if d == nil {
			return ""
		}
		v, err := policyDuration(*d)
		if err != nil {
			return field + ": " + string(*d) + " is not a duration"
		}
		*out = v
		return ""
	}
	if lb := s.LoadBalancer; lb != nil {
		switch lb.Type {
		case "RoundRobin", "":
		case "LeastRequest":
			b.lb = snapshot.LeastRequest
		case "Random":
			b.lb = snapshot.Random
		case "ConsistentHash":
			b.lb = snapshot.ConsistentHash
			h := lb.ConsistentHash
			if h == nil {
				return "spec.loadBalancer.consistentHash: required for ConsistentHash"
			}
			hp := &snapshot.HashPolicy{Header: h.Header, SourceIP: h.SourceIP}
			n := 0
			if h.Header != "" {
				n++
				if !snapshot.ValidToken(h.Header) {
					return "spec.loadBalancer.consistentHash.header: not a header name"
				}
			}
			if h.SourceIP {
				n++
			}
			if c := h.Cookie; c != nil {
				n++
				if !snapshot.ValidToken(c.Name) {
					return "spec.loadBalancer.consistentHash.cookie.name: not a cookie name"
				}
				if c.Path != "" && (c.Path[0] != '/' || strings.ContainsAny(c.Path, ";,\x00\r\n\t ")) {
					return "spec.loadBalancer.consistentHash.cookie.path: must start with / and hold no ; , or spaces"
				}
				hp.Cookie, hp.CookiePath = c.Name, c.Path
				if msg := dur("spec.loadBalancer.consistentHash.cookie.ttl", c.TTL, 0, &hp.CookieTTL); msg != "" {
					return msg
				}
			}
			if n != 1 {
				return "spec.loadBalancer.consistentHash: set exactly one of header, cookie and sourceIP"
			}
			b.hash = hp
		default:
			return "spec.loadBalancer.type: " + string(lb.Type) + " is not RoundRobin, LeastRequest, Random or ConsistentHash"
		}
	}
	if msg := dur("spec.connectTimeout", s.ConnectTimeout, 0, &b.connect); msg != "" {
		return msg
	}
	if msg := dur("spec.idleTimeout", s.IdleTimeout, 0, &b.idle); msg != "" {
		return msg
	}
	if c := s.CircuitBreaker; c != nil {
		b.breaker = &snapshot.CircuitBreaker{MaxConnections: ptr.Deref(c.MaxConnections, 0), MaxPendingRequests: ptr.Deref(c.MaxPendingRequests, 0), MaxRequests: ptr.Deref(c.MaxRequests, 0)}
		if b.breaker.MaxConnections < 0 || b.breaker.MaxPendingRequests < 0 || b.breaker.MaxRequests < 0 {
			return "spec.circuitBreaker: bounds must be positive"
		}
	}
	if o := s.OutlierDetection; o != nil {
		od := &snapshot.OutlierDetection{Consecutive5xx: ptr.Deref(o.Consecutive5xx, defaultOutlierConsecutive),
			ConsecutiveConnectFailures: ptr.Deref(o.ConsecutiveConnectFailures, defaultOutlierConsecutive),
			MaxEjectionPercent:         ptr.Deref(o.MaxEjectionPercent, defaultOutlierMaxPercent)}
		if msg := dur("spec.outlierDetection.baseEjectionTime", o.BaseEjectionTime, defaultOutlierBaseEjection, &od.BaseEjectionTime); msg != "" {
			return msg
		}
		if msg := dur("spec.outlierDetection.maxEjectionTime", o.MaxEjectionTime, defaultOutlierMaxEjection, &od.MaxEjectionTime); msg != "" {
			return msg
		}
		switch {
		case od.Consecutive5xx < 1:
			return "spec.outlierDetection.consecutive5xx: must be at least 1"
		case od.MaxEjectionPercent < 0 || od.MaxEjectionPercent > 100:
			return "spec.outlierDetection.maxEjectionPercent: must be 0-100"
		case od.BaseEjectionTime <= 0 || od.MaxEjectionTime < od.BaseEjectionTime:
			return "spec.outlierDetection: baseEjectionTime must be positive and not above maxEjectionTime"
		}
		b.outlier = od
	}
	if h := s.HealthCheck; h != nil {
		hc := &snapshot.HealthCheck{Path: h.Path, Hostname: h.Hostname, HealthyThreshold: ptr.Deref(h.HealthyThreshold, defaultHealthyThreshold),
			UnhealthyThreshold: ptr.Deref(h.UnhealthyThreshold, defaultUnhealthyThreshold), ExpectedStatuses: h.ExpectedStatuses}
		if msg := dur("spec.healthCheck.interval", h.Interval, defaultHealthInterval, &hc.Interval); msg != "" {
			return msg
		}
		if msg := dur("spec.healthCheck.timeout", h.Timeout, defaultHealthTimeout, &hc.Timeout); msg != "" {
			return msg
		}
		switch {
		case hc.Path == "" || hc.Path[0] != '/' || strings.ContainsAny(hc.Path, "?# \t\r\n\x00"):
			return "spec.healthCheck.path: must start with / and hold no query, fragment or spaces"
		case hc.Hostname != "" && !validHostname(hc.Hostname):
			return "spec.healthCheck.hostname: not a hostname"
		case hc.Interval <= 0 || hc.Timeout <= 0:
			return "spec.healthCheck: interval and timeout must be positive"
		case hc.HealthyThreshold < 1 || hc.UnhealthyThreshold < 1:
			return "spec.healthCheck: thresholds must be at least 1"
		}
		for _, c := range hc.ExpectedStatuses {
			if c < 100 || c > 599 {
				return "spec.healthCheck.expectedStatuses: codes must be 100-599"
			}
		}
		b.health = hc
	}
	return ""
}
