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

package provision

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	gatewayv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
)

// Built-in defaults of the shutdown block. The preStop sleep covers the
// propagation of the pod's deletion to the EndpointSlice controller and
// kube-proxy (about a second on a healthy cluster); the drain matches the
// proxy's own --shutdown-drain-window default (Istio's
// terminationDrainDuration is 5 s too); 30 s is the Kubernetes default
// grace period, leaving 22 s for in-flight requests.
const (
	DefaultPreStopSleepSeconds           int32 = 2
	DefaultDrainSeconds                  int32 = 5
	DefaultTerminationGracePeriodSeconds int32 = 30
	// minGraceMargin is how much longer than preStop + drain the grace
	// period is when unset and the default would not fit.
	minGraceMargin int32 = 10
	// exitMargin is left at the end of the grace period for the process to
	// exit after its last in-flight request, before SIGKILL.
	exitMargin int32 = 1
)

// ShutdownSettings is the resolved shutdown block of a proxy pod.
type ShutdownSettings struct {
	PreStopSleepSeconds           int32
	DrainSeconds                  int32
	TerminationGracePeriodSeconds int32
}

// DefaultShutdown is the shutdown of proxies no parameters tune (the shared
// pool, and dedicated Gateways whose parameters set no shutdown block).
func DefaultShutdown() ShutdownSettings { return ResolveShutdown(nil) }

// ResolveShutdown fills in the built-in defaults. A grace period that leaves
// no time for in-flight requests (the API rejects it; objects written before
// that rule may hold one) is raised to preStop + drain + 2 s.
func ResolveShutdown(s *gatewayv1alpha1.Shutdown) ShutdownSettings {
	out := ShutdownSettings{PreStopSleepSeconds: DefaultPreStopSleepSeconds, DrainSeconds: DefaultDrainSeconds}
	var grace *int32
	if s != nil {
		if s.PreStopSleepSeconds != nil && *s.PreStopSleepSeconds >= 0 {
			out.PreStopSleepSeconds = *s.PreStopSleepSeconds
		}
		if s.DrainSeconds != nil && *s.DrainSeconds >= 0 {
			out.DrainSeconds = *s.DrainSeconds
		}
		grace = s.TerminationGracePeriodSeconds
	}
	busy := out.PreStopSleepSeconds + out.DrainSeconds
	switch {
	case grace != nil:
		out.TerminationGracePeriodSeconds = max(*grace, busy+exitMargin+1)
	default:
		out.TerminationGracePeriodSeconds = max(DefaultTerminationGracePeriodSeconds, busy+minGraceMargin)
	}
	return out
}

// orDefault treats the zero value (an Effective built without Resolve) as
// the defaults.
func (s ShutdownSettings) orDefault() ShutdownSettings {
	if s == (ShutdownSettings{}) {
		return DefaultShutdown()
	}
	return s
}

// inFlightSeconds is what the grace period leaves for in-flight requests
// after the preStop sleep and the drain: the proxy's --shutdown-timeout.
func (s ShutdownSettings) inFlightSeconds() int32 {
	return max(1, s.TerminationGracePeriodSeconds-s.PreStopSleepSeconds-s.DrainSeconds-exitMargin)
}

// proxyArgs are the proxy flags that make its termination fit the pod's:
// the drain window after SIGTERM and the bound on in-flight requests.
func (s ShutdownSettings) proxyArgs() []string {
	return []string{
		"--shutdown-drain-window", seconds(s.DrainSeconds),
		"--shutdown-timeout", seconds(s.inFlightSeconds()),
	}
}

// lifecycle is the proxy container's preStop sleep (the kubelet's own
// sleep action: no binary in the image needed); nil when the sleep is 0.
func (s ShutdownSettings) lifecycle() *corev1.Lifecycle {
	if s.PreStopSleepSeconds <= 0 {
		return nil
	}
	return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Sleep: &corev1.SleepAction{Seconds: int64(s.PreStopSleepSeconds)},
	}}
}

// gracePeriod is the pod's terminationGracePeriodSeconds.
func (s ShutdownSettings) gracePeriod() *int64 {
	return ptrTo(int64(s.TerminationGracePeriodSeconds))
}

func seconds(n int32) string { return strconv.Itoa(int(n)) + "s" }
