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

package kubelet

import (
	"fmt"
	"net"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/coxswain-go/coxswain/test/localcluster/process"
)

// Bounds of the pod lifecycle.
const (
	readyGate        = 60 * time.Second // after this the pod shows Running even if not yet Ready
	configRetryLimit = 5 * time.Minute  // how long missing Secrets/ConfigMaps are waited for
	// maxGrace caps terminationGracePeriodSeconds, so a process that
	// ignores SIGTERM cannot hold a test for long; the proxies' default
	// (30 s: preStop sleep, drain window and in-flight bound) fits.
	maxGrace = 60 * time.Second
	// minGraceAfterPreStop is what the kubelet leaves a container after its
	// preStop hook, however long the hook took.
	minGraceAfterPreStop = 2 * time.Second
	maxBackoff           = 10 * time.Second // crash-restart backoff cap
	tick                 = 250 * time.Millisecond
)

// Reasons the local kubelet reports.
const (
	ReasonUnsupportedImage = "UnsupportedImage"
	ReasonConfigError      = "CreateContainerConfigError"
	ReasonSandboxFailed    = "SandboxCreationFailed"
	ReasonUnsupportedPod   = "UnsupportedPod"
)

type stopMode int

const (
	stopGraceful   stopMode = iota // deletionTimestamp set: kill, clean up, then remove the object
	stopObjectGone                 // the object is gone: kill and clean up only
	stopShutdown                   // the cluster stops: kill and clean up only
)

// podRunner owns one pod's lifecycle from sandbox creation to cleanup.
type podRunner struct {
	k   *Kubelet
	uid types.UID

	mu       sync.Mutex
	pod      *corev1.Pod
	stopCh   chan struct{}
	stopOnce sync.Once
	mode     stopMode
	grace    time.Duration
	// hurry is closed when a graceful stop must end sooner (the object is
	// gone, or the cluster stops): preStop sleeps end, grace shrinks to 2 s.
	hurry     chan struct{}
	hurryOnce sync.Once
	// terminating is set while a graceful stop runs: status reports go on.
	terminating bool

	// Owned by the run goroutine (read by sandbox() under mu).
	ip         net.IP
	netns      string
	veth       string
	dir        string
	containers []*containerState
	held       []string // mount targets referenced

	gate      bool // Running has been reported
	failPhase corev1.PodPhase
	reason    string
	message   string
	lastSig   string
	started   metav1.Time
	exits     chan exitEvent
}

type exitEvent struct {
	c *containerState
	p *process.Process
}

type containerState struct {
	spec       corev1.Container
	plan       launchPlan
	launch     shimSpec
	launchFile string
	logPath    string
	probe      probeTarget

	proc      *process.Process
	startedAt metav1.Time
	ready     bool
	restarts  int32
	backoff   time.Duration
	restartAt time.Time
	lastTerm  *corev1.ContainerStateTerminated
	done      bool // exited and will not restart
	waiting   string
	lastProbe time.Time
}

func newPodRunner(k *Kubelet, pod *corev1.Pod) *podRunner {
	return &podRunner{k: k, uid: pod.UID, pod: pod, stopCh: make(chan struct{}), hurry: make(chan struct{}), exits: make(chan exitEvent, 16)}
}

func (r *podRunner) update(pod *corev1.Pod) {
	r.mu.Lock()
	r.pod = pod
	r.mu.Unlock()
	if pod.DeletionTimestamp != nil {
		grace := 30 * time.Second
		if pod.DeletionGracePeriodSeconds != nil {
			grace = time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second
		}
		r.requestStop(grace, stopGraceful)
	}
}

func (r *podRunner) latest() *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pod
}

func (r *podRunner) requestStop(grace time.Duration, mode stopMode) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if grace > maxGrace {
		grace = maxGrace
	}
	select {
	case <-r.stopCh:
		// Already stopping: a later "gone" or "shutdown" drops API calls
		// and cuts a graceful stop short.
		if mode != stopGraceful {
			r.mode = mode
			r.hurryOnce.Do(func() { close(r.hurry) })
		}
		return
	default:
	}
	r.mode, r.grace = mode, grace
	r.stopOnce.Do(func() { close(r.stopCh) })
}

func (r *podRunner) stopping() bool {
	select {
	case <-r.stopCh:
		return true
	default:
		return false
	}
}

func (r *podRunner) logf(format string, args ...any) {
	pod := r.latest()
	r.k.logf("pod %s/%s: %s", pod.Namespace, pod.Name, fmt.Sprintf(format, args...))
}

// sandbox snapshots what runs for the pod.
func (r *podRunner) sandbox() PodSandbox {
	r.mu.Lock()
	defer r.mu.Unlock()
	sb := PodSandbox{Netns: r.netns}
	if r.ip != nil {
		sb.IP = r.ip.String()
	}
	for _, c := range r.containers {
		if c.proc != nil && !c.proc.Exited() {
			sb.PIDs = append(sb.PIDs, c.proc.PID())
		}
	}
	return sb
}

// run is the pod's lifecycle.
func (r *podRunner) run() {
	defer r.cleanup()
	pod := r.latest()
	r.started = metav1.Now()

	if len(pod.Spec.InitContainers) > 0 || len(pod.Spec.EphemeralContainers) > 0 {
		r.fail(ReasonUnsupportedPod, "the local kubelet does not run init or ephemeral containers")
		return
	}
	plans := make([]launchPlan, len(pod.Spec.Containers))
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		p, err := r.k.binaries.planLaunch(c.Image, c.Command, c.Args)
		if err != nil {
			r.fail(ReasonUnsupportedImage, fmt.Sprintf("container %s: %v", c.Name, err))
			return
		}
		plans[i] = p
	}

	if err := r.createSandbox(pod); err != nil {
		r.fail(ReasonSandboxFailed, err.Error())
		return
	}
	r.mu.Lock()
	for i := range pod.Spec.Containers {
		c := &containerState{spec: pod.Spec.Containers[i], plan: plans[i], waiting: "ContainerCreating"}
		c.logPath = filepath.Join(r.k.podLogDir(pod), c.spec.Name+".log")
		c.launchFile = filepath.Join(r.dir, c.spec.Name+".launch.json")
		r.containers = append(r.containers, c)
	}
	r.mu.Unlock()
	r.report()

	if !r.prepare() {
		return
	}
	for _, c := range r.containers {
		r.startContainer(c)
	}
	r.loop()
}

// fail reports an unrunnable pod and waits for it to be deleted. A bare
// pod fails (phase Failed); a pod a controller owns stays Pending with the
// reason, as with an image that cannot be pulled, so its ReplicaSet does
// not replace it in a loop.
func (r *podRunner) fail(reason, message string) {
	r.logf("%s: %s", reason, message)
	pod := r.latest()
	r.mu.Lock()
	r.reason, r.message = reason, message
	r.failPhase = corev1.PodPending
	if metav1.GetControllerOf(pod) == nil {
		r.failPhase = corev1.PodFailed
	}
	r.mu.Unlock()
	r.report()
	<-r.stopCh
}
