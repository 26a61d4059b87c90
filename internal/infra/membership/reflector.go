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

package membership

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
)

// Run keeps the membership in step with the shard's Projects until ctx ends;
// it returns nil on cancellation. A client-go Reflector does the list and
// watch: it resumes a watch from the last resourceVersion (kept fresh by
// bookmarks), lists again when that version has expired (410 Gone), streams
// the list as a watch (WatchList) where the server offers it, and waits
// between attempts, from MinBackoff doubling up to MaxBackoff. What a list or
// an event does to the membership is decided in its store (store.go).
func (c *Client) Run(ctx context.Context) error {
	log := c.cfg.Log.WithName("reflector")
	r := cache.NewReflectorWithOptions(c.instrumentedSource(), &infrav1alpha1.Project{}, reflectorStore{c: c}, cache.ReflectorOptions{
		Name:    "project-membership",
		Logger:  &log,
		Backoff: &wait.Backoff{Duration: c.cfg.MinBackoff, Cap: c.cfg.MaxBackoff, Factor: 2, Steps: backoffSteps(c.cfg.MinBackoff, c.cfg.MaxBackoff)},
	})
	r.RunWithContext(logr.NewContext(ctx, log))
	return nil
}

// backoffSteps gives the doubling enough steps to reach the cap (client-go
// sizes its default backoff the same way).
func backoffSteps(lo, hi time.Duration) int {
	return max(1, int(math.Ceil(float64(hi)/float64(lo))))
}

// projectSource lists and watches the Projects labelled with the shard on
// the infra-apiserver, through a REST client of the infra API group (what a
// generated clientset would build), so that every list option the Reflector
// sets (paging, WatchList's sendInitialEvents) reaches the server.
func projectSource(base *rest.Config, shardID string) (*cache.ListWatch, error) {
	scheme := runtime.NewScheme()
	if err := infrav1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(base)
	cfg.GroupVersion = &infrav1alpha1.GroupVersion
	cfg.APIPath = "/apis"
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	projects, err := rest.RESTClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("infra-apiserver client: %w", err)
	}
	selector := labels.SelectorFromSet(labels.Set{infrav1alpha1.ShardIDLabel: shardID}).String()
	return cache.NewFilteredListWatchFromClient(projects, "projects", metav1.NamespaceAll,
		func(o *metav1.ListOptions) { o.LabelSelector = selector }), nil
}

// instrumentedSource is the source as the Reflector sees it: failed lists
// and watches, which the Reflector retries on its own, are counted and
// logged on the way.
func (c *Client) instrumentedSource() *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			list, err := c.source.ListWithContext(ctx, o)
			if err != nil && ctx.Err() == nil {
				c.cfg.Metrics.ListErrors.Inc()
				c.cfg.Log.Info("listing projects failed; keeping the last known membership", "error", err.Error())
			}
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			report := func(err error) {
				if ctx.Err() == nil {
					c.cfg.Metrics.WatchErrors.Inc()
					c.cfg.Log.Info("watching projects failed; resuming or relisting, keeping the last known membership", "error", err.Error())
				}
			}
			w, err := c.source.WatchWithContext(ctx, o)
			if err != nil {
				report(err)
				return nil, err
			}
			return newReportingWatch(w, report), nil
		},
	}
}

// reportingWatch passes a watch's events on unchanged and reports its error
// events (410 Gone among them), which the Reflector acts on without telling.
// It is not watch.Filter because that one's goroutine blocks for good when
// the reader stops while an event is in flight.
type reportingWatch struct {
	source   watch.Interface
	events   chan watch.Event
	done     chan struct{}
	stopOnce sync.Once
}

func newReportingWatch(source watch.Interface, report func(error)) *reportingWatch {
	w := &reportingWatch{source: source, events: make(chan watch.Event), done: make(chan struct{})}
	go w.forward(report)
	return w
}

func (w *reportingWatch) ResultChan() <-chan watch.Event { return w.events }

func (w *reportingWatch) Stop() {
	w.stopOnce.Do(func() { close(w.done) })
	w.source.Stop()
}

func (w *reportingWatch) forward(report func(error)) {
	defer close(w.events)
	for ev := range w.source.ResultChan() {
		if ev.Type == watch.Error {
			report(apierrors.FromObject(ev.Object))
		}
		select {
		case w.events <- ev:
		case <-w.done:
			return
		}
	}
}
