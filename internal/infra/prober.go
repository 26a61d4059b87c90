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

package infra

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
)

// Checker probes one project API server endpoint (host[:port]).
type Checker interface {
	Check(ctx context.Context, endpoint string) error
}

// HTTPChecker GETs https://<endpoint>/readyz and wants 200.
type HTTPChecker struct {
	Client *http.Client
}

// NewHTTPChecker returns a checker that verifies server certificates against
// tlsConfig (nil means the system roots).
func NewHTTPChecker(tlsConfig *tls.Config) *HTTPChecker {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsConfig
	tr.DisableKeepAlives = true
	return &HTTPChecker{Client: &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// Check implements Checker.
func (h *HTTPChecker) Check(ctx context.Context, endpoint string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+endpoint+"/readyz", nil)
	if err != nil {
		return err
	}
	resp, err := h.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("readyz returned HTTP %d", resp.StatusCode)
	}
	return nil
}

// ProberMetrics are the prober's Prometheus metrics.
type ProberMetrics struct {
	Probes  *prometheus.CounterVec
	Patches prometheus.Counter
}

// NewProberMetrics registers the metrics with reg (nil: not registered).
func NewProberMetrics(reg prometheus.Registerer) *ProberMetrics {
	m := &ProberMetrics{
		Probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "coxswain_infra_project_probes_total", Help: "Project API server readiness probes by result.",
		}, []string{"result"}),
		Patches: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "coxswain_infra_project_status_patches_total", Help: "Project status patches written by the prober.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.Probes, m.Patches)
	}
	return m
}

// Prober probes every Project's API server and records health in status.
// Its client needs get/list/watch on projects and patch on projects/status
// only; it never writes spec.
type Prober struct {
	Client      client.Client
	Checker     Checker
	Clock       clock.PassiveClock
	Interval    time.Duration
	Timeout     time.Duration
	Concurrency int
	Log         logr.Logger
	Metrics     *ProberMetrics

	// memory holds, per Project UID, what this process knows beyond the
	// persisted status: the failure count of an outage (persisted at most
	// once per DetailWritePeriod) and the time of its last write.
	mu     sync.Mutex
	memory map[types.UID]probeMemory
}

// probeMemory is the prober's in-process state of one Project.
type probeMemory struct {
	endpoint  string
	failures  int32
	lastWrite time.Time
}

func (p *Prober) defaults() error {
	if p.Client == nil || p.Checker == nil {
		return errors.New("prober needs a client and a checker")
	}
	if p.Clock == nil {
		p.Clock = clock.RealClock{}
	}
	if p.Interval <= 0 {
		p.Interval = 10 * time.Second
	}
	if p.Timeout <= 0 {
		p.Timeout = 5 * time.Second
	}
	if p.Concurrency <= 0 {
		p.Concurrency = 8
	}
	if p.Metrics == nil {
		p.Metrics = NewProberMetrics(nil)
	}
	p.mu.Lock()
	if p.memory == nil {
		p.memory = map[types.UID]probeMemory{}
	}
	p.mu.Unlock()
	return nil
}

// recall returns the memory of proj (zero when there is none).
func (p *Prober) recall(proj *infrav1alpha1.Project) probeMemory {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.memory[proj.UID]
}

func (p *Prober) remember(proj *infrav1alpha1.Project, m probeMemory) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.memory[proj.UID] = m
}

// forgetAllBut drops the memory of Projects that are gone.
func (p *Prober) forgetAllBut(list *infrav1alpha1.ProjectList) {
	keep := make(map[types.UID]bool, len(list.Items))
	for i := range list.Items {
		keep[list.Items[i].UID] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid := range p.memory {
		if !keep[uid] {
			delete(p.memory, uid)
		}
	}
}

// Run probes every Interval until ctx ends.
func (p *Prober) Run(ctx context.Context) error {
	if err := p.defaults(); err != nil {
		return err
	}
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	for {
		if _, err := p.RunOnce(ctx); err != nil && ctx.Err() == nil {
			p.Log.Error(err, "probe round failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// RunOnce probes every Project once (at most Concurrency at a time, each
// bounded by Timeout) and patches the status of those whose health changed,
// following WriteNeeded. It returns the number of status patches written.
func (p *Prober) RunOnce(ctx context.Context) (int, error) {
	if err := p.defaults(); err != nil {
		return 0, err
	}
	var list infrav1alpha1.ProjectList
	if err := p.Client.List(ctx, &list); err != nil {
		return 0, fmt.Errorf("listing projects: %w", err)
	}
	p.forgetAllBut(&list)
	sem := make(chan struct{}, p.Concurrency)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		patches int
		errs    []error
	)
	for i := range list.Items {
		proj := &list.Items[i]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			patched, err := p.probeOne(ctx, proj)
			mu.Lock()
			defer mu.Unlock()
			if patched {
				patches++
			}
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	return patches, errors.Join(errs...)
}

func (p *Prober) probeOne(ctx context.Context, proj *infrav1alpha1.Project) (bool, error) {
	target := Target{Generation: proj.Generation, Endpoint: proj.Spec.APIServerEndpoint}
	pctx, cancel := context.WithTimeout(ctx, p.Timeout)
	err := p.Checker.Check(pctx, target.Endpoint)
	cancel()
	if ctx.Err() != nil {
		return false, nil
	}
	result := "success"
	if err != nil {
		result = "failure"
		p.Log.V(1).Info("probe failed", "project", proj.Name, "endpoint", target.Endpoint, "error", err.Error())
	}
	p.Metrics.Probes.WithLabelValues(result).Inc()

	now := p.Clock.Now()
	mem := p.recall(proj)
	// Count failures from what this process saw, which is ahead of the
	// persisted count during an outage.
	working := *proj.Status.DeepCopy()
	if mem.endpoint == working.ObservedEndpoint && mem.failures > working.ConsecutiveFailures {
		working.ConsecutiveFailures = mem.failures
	}
	next := NextStatus(working, target, &ProbeResult{Target: target, Err: err}, now)
	SetAgentCACondition(&next, proj.Spec, proj.Generation, now)
	p.reportAgentCA(proj, next)
	// The probe happened whether or not the patch below lands.
	mem.endpoint, mem.failures = next.ObservedEndpoint, next.ConsecutiveFailures
	p.remember(proj, mem)
	if !WriteNeeded(proj.Status, next, mem.lastWrite, now) {
		return false, nil
	}
	patched := proj.DeepCopy()
	patched.Status = next
	// The optimistic lock makes a patch computed from a stale read fail
	// rather than overwrite a newer observation; the next round retries.
	if err := p.Client.Status().Patch(ctx, patched, client.MergeFromWithOptions(proj, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("patching status of project %s: %w", proj.Name, err)
	}
	mem.lastWrite = now
	p.remember(proj, mem)
	p.Metrics.Patches.Inc()
	return true, nil
}

// reportAgentCA logs when the AgentCAValid condition turns False.
func (p *Prober) reportAgentCA(proj *infrav1alpha1.Project, next infrav1alpha1.ProjectStatus) {
	c := meta.FindStatusCondition(next.Conditions, ConditionAgentCAValid)
	if c == nil || c.Status != metav1.ConditionFalse || meta.IsStatusConditionFalse(proj.Status.Conditions, ConditionAgentCAValid) {
		return
	}
	p.Log.Info("project agentCA.certificates is not valid PEM certificates; relays refuse it", "project", proj.Name, "error", c.Message)
}
