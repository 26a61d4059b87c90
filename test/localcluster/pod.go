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

package localcluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
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
	k   *kubelet
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
	p *process
}

type containerState struct {
	spec       corev1.Container
	plan       launchPlan
	launch     shimSpec
	launchFile string
	logPath    string
	probe      probeTarget

	proc      *process
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

type probeTarget struct {
	port     int32
	path     string // HTTP GET path; "" means a TCP connect
	https    bool
	period   time.Duration
	explicit bool // from a readinessProbe: keep probing after Ready
}

func newPodRunner(k *kubelet, pod *corev1.Pod) *podRunner {
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
		if c.proc != nil && !c.proc.exited() {
			sb.PIDs = append(sb.PIDs, c.proc.pid())
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
		c.logPath = filepath.Join(r.k.logsDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID), c.spec.Name+".log")
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

// createSandbox allocates the pod IP and creates its network namespace.
func (r *podRunner) createSandbox(pod *corev1.Pod) error {
	dir := filepath.Join(r.k.podsDir, string(pod.UID))
	if err := os.MkdirAll(filepath.Join(dir, "volumes"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(r.k.logsDir, fmt.Sprintf("%s_%s_%s", pod.Namespace, pod.Name, pod.UID)), 0o755); err != nil {
		return err
	}
	r.mu.Lock()
	r.dir = dir
	r.mu.Unlock()
	if pod.Spec.HostNetwork {
		r.mu.Lock()
		r.ip = r.k.net.gateway
		r.mu.Unlock()
		return nil
	}
	ip, err := r.k.net.allocate()
	if err != nil {
		return err
	}
	netns, veth := podNetNames(pod.UID)
	if err := r.k.net.addPod(netns, veth, ip); err != nil {
		r.k.net.release(ip)
		return err
	}
	r.mu.Lock()
	r.ip, r.netns, r.veth = ip, netns, veth
	r.mu.Unlock()
	if err := writeNetnsEtc(netns, r.k.hostsFor(pod.Namespace, pod.Name, ip.String())); err != nil {
		return fmt.Errorf("writing /etc/hosts of %s: %w", netns, err)
	}
	return nil
}

// writeHosts refreshes the pod's /etc/hosts (Service names).
func (r *podRunner) writeHosts() {
	r.mu.Lock()
	netns, ip := r.netns, r.ip
	r.mu.Unlock()
	if netns == "" || ip == nil || r.stopping() {
		return
	}
	pod := r.latest()
	if err := writeNetnsEtc(netns, r.k.hostsFor(pod.Namespace, pod.Name, ip.String())); err != nil {
		r.logf("writing /etc/hosts: %v", err)
	}
}

// prepare writes volumes and resolves env, retrying (bounded) while
// referenced objects are missing. It reports false when the pod must not
// start (stopping, or the wait ran out).
func (r *podRunner) prepare() bool {
	deadline := time.Now().Add(configRetryLimit)
	backoff := 250 * time.Millisecond
	for attempt := 0; ; attempt++ {
		err := r.prepareOnce()
		if err == nil {
			r.mu.Lock()
			r.reason, r.message = "", ""
			r.mu.Unlock()
			return true
		}
		if r.stopping() {
			return false
		}
		r.mu.Lock()
		r.reason, r.message = ReasonConfigError, err.Error()
		for _, c := range r.containers {
			c.waiting = ReasonConfigError
		}
		r.mu.Unlock()
		if attempt == 0 || attempt%10 == 0 {
			r.logf("waiting: %v", err)
		}
		r.report()
		if time.Now().After(deadline) {
			r.fail(ReasonConfigError, fmt.Sprintf("gave up after %s: %v", configRetryLimit, err))
			return false
		}
		select {
		case <-r.stopCh:
			return false
		case <-time.After(backoff):
		}
		if backoff < 5*time.Second {
			backoff *= 2
		}
	}
}

func (r *podRunner) prepareOnce() error {
	pod := r.latest()
	ctx, cancel := context.WithTimeout(r.k.ctx, 30*time.Second)
	defer cancel()
	src := apiObjects{ctx: ctx, client: r.k.client}
	facts := podFacts{podIP: r.ip.String(), hostIP: r.k.net.gateway.String()}
	vw := volumeWriter{dir: filepath.Join(r.dir, "volumes"), src: src, facts: facts, token: r.k.token}
	volumes, err := vw.write(pod)
	if err != nil {
		return err
	}
	hostMountNS := r.k.hostMountNS
	base := []corev1.EnvVar{
		{Name: "PATH", Value: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		{Name: "HOME", Value: "/root"},
		{Name: "HOSTNAME", Value: pod.Name},
		{Name: "KUBERNETES_SERVICE_HOST", Value: r.k.apiHost},
		{Name: "KUBERNETES_SERVICE_PORT", Value: r.k.apiPort},
		{Name: "KUBERNETES_SERVICE_PORT_HTTPS", Value: r.k.apiPort},
		{Name: "KUBERNETES_PORT", Value: "tcp://" + net.JoinHostPort(r.k.apiHost, r.k.apiPort)},
	}
	for _, c := range r.containers {
		env, err := resolveEnv(pod, &c.spec, facts, src, base)
		if err != nil {
			return fmt.Errorf("container %s: %w", c.spec.Name, err)
		}
		vals := envMap(env)
		spec := shimSpec{HostMountNS: hostMountNS, Env: env, Dir: r.dir}
		for _, vm := range c.spec.VolumeMounts {
			src, ok := volumes[vm.Name]
			if !ok {
				return fmt.Errorf("container %s: volumeMount %q names no volume", c.spec.Name, vm.Name)
			}
			if vm.SubPath != "" {
				if src, err = safeJoin(src, vm.SubPath); err != nil {
					return err
				}
			}
			spec.Mounts = append(spec.Mounts, shimMount{Source: src, Target: filepath.Clean(vm.MountPath), ReadOnly: vm.ReadOnly})
		}
		if c.plan.kind == launchPlaceholder {
			spec.Placeholder = &placeholderSpec{TCPPorts: placeholderPorts(&c.spec)}
		} else {
			spec.Path = c.plan.path
			for _, a := range c.plan.args {
				spec.Args = append(spec.Args, expandVars(a, vals))
			}
		}
		c.launch = spec
		c.probe = readinessTarget(&c.spec, c.plan, vals)
	}
	// Mount targets are created once everything else resolved.
	if r.held == nil {
		var held []string
		for _, c := range r.containers {
			for _, m := range c.launch.Mounts {
				st, err := os.Stat(m.Source)
				if err != nil {
					r.k.targets.release(held)
					return fmt.Errorf("volume source %s: %w", m.Source, err)
				}
				h, err := r.k.targets.ensure(m.Target, st.IsDir())
				if err != nil {
					r.k.targets.release(held)
					return err
				}
				held = append(held, h...)
			}
		}
		r.held = held
		if r.held == nil {
			r.held = []string{}
		}
	}
	return nil
}

// placeholderPorts are the TCP ports a placeholder serves: its declared
// container ports and its probe ports.
func placeholderPorts(c *corev1.Container) []int32 {
	seen := map[int32]bool{}
	var ports []int32
	add := func(p int32) {
		if p > 0 && !seen[p] {
			seen[p] = true
			ports = append(ports, p)
		}
	}
	for _, p := range c.Ports {
		if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
			add(p.ContainerPort)
		}
	}
	for _, pr := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
		if pr == nil {
			continue
		}
		switch {
		case pr.HTTPGet != nil:
			add(resolvePort(c, pr.HTTPGet.Port))
		case pr.TCPSocket != nil:
			add(resolvePort(c, pr.TCPSocket.Port))
		}
	}
	return ports
}

// readinessTarget picks what readiness waits for: the readinessProbe's
// HTTP/TCP port, else the first TCP container port, else the image's known
// port, else nothing (ready once running).
func readinessTarget(c *corev1.Container, plan launchPlan, env map[string]string) probeTarget {
	if pr := c.ReadinessProbe; pr != nil {
		period := 10 * time.Second
		if pr.PeriodSeconds > 0 {
			period = time.Duration(pr.PeriodSeconds) * time.Second
		}
		switch {
		case pr.HTTPGet != nil:
			path := pr.HTTPGet.Path
			if path == "" {
				path = "/"
			}
			return probeTarget{port: resolvePort(c, pr.HTTPGet.Port), path: path,
				https: pr.HTTPGet.Scheme == corev1.URISchemeHTTPS, period: period, explicit: true}
		case pr.TCPSocket != nil:
			return probeTarget{port: resolvePort(c, pr.TCPSocket.Port), period: period, explicit: true}
		case pr.GRPC != nil:
			return probeTarget{port: pr.GRPC.Port, period: period, explicit: true}
		}
	}
	for _, p := range c.Ports {
		if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
			return probeTarget{port: p.ContainerPort}
		}
	}
	if plan.defaultPort != 0 {
		port := plan.defaultPort
		if v, err := strconv.Atoi(env["HTTP_PORT"]); err == nil && v > 0 && v < 65536 {
			port = int32(v)
		}
		return probeTarget{port: port}
	}
	return probeTarget{}
}

func resolvePort(c *corev1.Container, p intstr.IntOrString) int32 {
	if p.Type == intstr.Int {
		return p.IntVal
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort
		}
	}
	return 0
}

// startContainer starts (or restarts) one container's process through the
// shim.
func (r *podRunner) startContainer(c *containerState) {
	b, err := json.Marshal(c.launch)
	if err == nil {
		err = os.WriteFile(c.launchFile, b, 0o600)
	}
	if err != nil {
		r.containerFailedToStart(c, err)
		return
	}
	spec := procSpec{
		name:        fmt.Sprintf("pod %s container %s", r.latest().Name, c.spec.Name),
		env:         []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", shimEnv + "=" + c.launchFile},
		dir:         r.dir,
		logPath:     c.logPath,
		timestamped: true,
	}
	if r.netns != "" {
		spec.path, spec.args = "ip", []string{"netns", "exec", r.netns, r.k.shimPath}
	} else {
		spec.path, spec.newMountNS = r.k.shimPath, true
	}
	p, err := startProcess(spec, r.k.reg)
	if err != nil {
		r.containerFailedToStart(c, err)
		return
	}
	r.mu.Lock()
	c.proc, c.startedAt, c.ready, c.waiting, c.restartAt = p, metav1.Now(), false, "", time.Time{}
	c.lastProbe = time.Time{}
	r.mu.Unlock()
	go func() {
		<-p.done
		select {
		case r.exits <- exitEvent{c: c, p: p}:
		case <-r.stopCh:
		}
	}()
}

func (r *podRunner) containerFailedToStart(c *containerState, err error) {
	r.logf("container %s failed to start: %v", c.spec.Name, err)
	r.mu.Lock()
	c.waiting = "RunContainerError"
	r.message = err.Error()
	r.mu.Unlock()
	r.scheduleRestart(c, 1)
}

// scheduleRestart applies the restart policy after an exit.
func (r *podRunner) scheduleRestart(c *containerState, exitCode int) {
	pod := r.latest()
	policy := pod.Spec.RestartPolicy
	r.mu.Lock()
	defer r.mu.Unlock()
	if policy == corev1.RestartPolicyNever || (policy == corev1.RestartPolicyOnFailure && exitCode == 0) {
		c.done = true
		return
	}
	switch {
	case c.backoff == 0:
		c.backoff = time.Second
	case !c.startedAt.IsZero() && time.Since(c.startedAt.Time) > 2*maxBackoff:
		c.backoff = time.Second // it ran for a while: start over
	default:
		c.backoff *= 2
	}
	if c.backoff > maxBackoff {
		c.backoff = maxBackoff
	}
	c.restartAt = time.Now().Add(c.backoff)
	c.waiting = "CrashLoopBackOff"
}

// loop supervises the containers until the pod stops.
func (r *podRunner) loop() {
	t := time.NewTicker(tick)
	defer t.Stop()
	gateAt := time.Now().Add(readyGate)
	for {
		select {
		case <-r.stopCh:
			return
		case ev := <-r.exits:
			if ev.c.proc != ev.p {
				continue // an older process of a restarted container
			}
			code := ev.p.exitCode()
			r.mu.Lock()
			ev.c.ready = false
			ev.c.lastTerm = &corev1.ContainerStateTerminated{
				ExitCode: int32(code), Reason: exitReason(code), StartedAt: ev.c.startedAt, FinishedAt: metav1.Now(),
				ContainerID: containerID(ev.p),
			}
			r.mu.Unlock()
			if n := ev.c.restarts; n < 3 || n%10 == 0 {
				r.logf("container %s (pid %d) exited with code %d (restarts so far: %d; log %s)", ev.c.spec.Name, ev.p.pid(), code, n, ev.c.logPath)
			}
			r.scheduleRestart(ev.c, code)
		case <-t.C:
			now := time.Now()
			for _, c := range r.containers {
				r.mu.Lock()
				due := !c.restartAt.IsZero() && now.After(c.restartAt)
				r.mu.Unlock()
				if due {
					r.mu.Lock()
					c.restarts++
					r.mu.Unlock()
					if c.restarts <= 3 {
						r.logf("restarting container %s (restart %d)", c.spec.Name, c.restarts)
					}
					r.startContainer(c)
					continue
				}
				r.probe(c, now)
			}
			if !r.gate && (r.allReady() || now.After(gateAt)) {
				r.mu.Lock()
				r.gate = true
				r.mu.Unlock()
			}
		}
		r.report()
	}
}

// probe checks readiness of a running container.
func (r *podRunner) probe(c *containerState, now time.Time) {
	r.mu.Lock()
	p, ready, last := c.proc, c.ready, c.lastProbe
	target := c.probe
	r.mu.Unlock()
	if p == nil || p.exited() {
		return
	}
	if ready && (!target.explicit || now.Sub(last) < target.period) {
		return
	}
	ok := true
	if target.port != 0 {
		ok = probeOnce(r.ip.String(), target)
	}
	r.mu.Lock()
	c.ready, c.lastProbe = ok, now
	r.mu.Unlock()
}

// probeOnce checks one HTTP or TCP target from the host through the bridge.
func probeOnce(ip string, t probeTarget) bool {
	addr := net.JoinHostPort(ip, strconv.Itoa(int(t.port)))
	if t.path == "" {
		conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err != nil {
			return false
		}
		_ = conn.Close()
		return true
	}
	scheme := "http"
	if t.https {
		scheme = "https"
	}
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // probes do not verify, as the kubelet's
		DisableKeepAlives: true,
	}}
	resp, err := client.Get(scheme + "://" + addr + t.path)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode >= 200 && resp.StatusCode < 400
}

func (r *podRunner) allReady() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.containers) == 0 {
		return false
	}
	for _, c := range r.containers {
		if !c.ready {
			return false
		}
	}
	return true
}

func exitReason(code int) string {
	if code == 0 {
		return "Completed"
	}
	return "Error"
}

func containerID(p *process) string { return "localcluster://" + strconv.Itoa(p.pid()) }

// buildStatus renders the pod status from the runner's state.
func (r *podRunner) buildStatus(prev corev1.PodStatus) corev1.PodStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := metav1.Now()
	st := corev1.PodStatus{QOSClass: prev.QOSClass, StartTime: &r.started}
	hostIP := r.k.net.gateway.String()
	cond := func(t corev1.PodConditionType, ok bool, reason, msg string) {
		s := corev1.ConditionFalse
		if ok {
			s = corev1.ConditionTrue
		}
		c := corev1.PodCondition{Type: t, Status: s, Reason: reason, Message: msg, LastTransitionTime: now}
		for _, old := range prev.Conditions {
			if old.Type == t && old.Status == s {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		st.Conditions = append(st.Conditions, c)
	}

	if r.failPhase != "" {
		st.Phase, st.Reason, st.Message = r.failPhase, r.reason, r.message
		cond(corev1.PodScheduled, true, "", "")
		cond(corev1.PodInitialized, true, "", "")
		cond(corev1.ContainersReady, false, r.reason, r.message)
		cond(corev1.PodReady, false, r.reason, r.message)
		for i := range r.pod.Spec.Containers {
			c := &r.pod.Spec.Containers[i]
			st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: r.reason, Message: r.message}},
			})
		}
		return st
	}

	allReady, allDone, anyFailed := len(r.containers) > 0, len(r.containers) > 0, false
	for _, c := range r.containers {
		cs := corev1.ContainerStatus{
			Name: c.spec.Name, Image: c.spec.Image, ImageID: "localcluster://" + c.plan.path,
			Ready: c.ready, RestartCount: c.restarts, LastTerminationState: corev1.ContainerState{Terminated: c.lastTerm},
		}
		running := c.proc != nil && !c.proc.exited()
		switch {
		case running:
			cs.ContainerID = containerID(c.proc)
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: c.startedAt}
			cs.Started = ptrBool(true)
		case c.done && c.lastTerm != nil:
			cs.State.Terminated = c.lastTerm
			cs.LastTerminationState = corev1.ContainerState{}
		default:
			reason := c.waiting
			if reason == "" {
				reason = "ContainerCreating"
			}
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: reason}
			if reason == ReasonConfigError || reason == "RunContainerError" {
				cs.State.Waiting.Message = r.message
			}
			cs.Started = ptrBool(false)
		}
		if !c.ready {
			allReady = false
		}
		if !c.done {
			allDone = false
		} else if c.lastTerm != nil && c.lastTerm.ExitCode != 0 {
			anyFailed = true
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}

	switch {
	case allDone && anyFailed:
		st.Phase = corev1.PodFailed
	case allDone:
		st.Phase = corev1.PodSucceeded
	case r.gate:
		st.Phase = corev1.PodRunning
	default:
		st.Phase = corev1.PodPending
	}
	if r.gate || allDone {
		st.PodIP = r.ip.String()
		st.PodIPs = []corev1.PodIP{{IP: st.PodIP}}
		st.HostIP = hostIP
		st.HostIPs = []corev1.HostIP{{IP: hostIP}}
	}
	notReady := ""
	if !allReady {
		var names []string
		for _, c := range r.containers {
			if !c.ready {
				names = append(names, c.spec.Name)
			}
		}
		notReady = fmt.Sprintf("containers with unready status: [%s]", strings.Join(names, " "))
	}
	cond(corev1.PodReadyToStartContainers, r.ip != nil, "", "")
	cond(corev1.PodScheduled, true, "", "")
	cond(corev1.PodInitialized, true, "", "")
	ready := allReady && r.gate
	reason := ""
	if !ready {
		reason = "ContainersNotReady"
		if r.reason != "" {
			reason = r.reason
		}
	}
	cond(corev1.ContainersReady, ready, reason, notReady)
	cond(corev1.PodReady, ready, reason, notReady)
	return st
}

func ptrBool(b bool) *bool { return &b }

// statusSignature is what decides whether a status write is needed.
func statusSignature(st corev1.PodStatus) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|%s|%s|", st.Phase, st.Reason, st.Message, st.PodIP, st.HostIP)
	for _, c := range st.Conditions {
		fmt.Fprintf(&b, "%s=%s/%s;", c.Type, c.Status, c.Reason)
	}
	for _, c := range st.ContainerStatuses {
		fmt.Fprintf(&b, "%s:%t:%d:%s:", c.Name, c.Ready, c.RestartCount, c.ContainerID)
		switch {
		case c.State.Running != nil:
			b.WriteString("running")
		case c.State.Waiting != nil:
			b.WriteString("waiting " + c.State.Waiting.Reason + " " + c.State.Waiting.Message)
		case c.State.Terminated != nil:
			fmt.Fprintf(&b, "terminated %d", c.State.Terminated.ExitCode)
		}
		b.WriteByte(';')
	}
	return b.String()
}

// report writes the status when it changed (while stopping, only during a
// graceful termination).
func (r *podRunner) report() {
	r.mu.Lock()
	terminating := r.terminating
	r.mu.Unlock()
	if r.stopping() && !terminating {
		return
	}
	pod := r.latest()
	want := r.buildStatus(pod.Status)
	sig := statusSignature(want)
	r.mu.Lock()
	same := sig == r.lastSig
	r.mu.Unlock()
	if same {
		return
	}
	ctx, cancel := context.WithTimeout(r.k.ctx, 10*time.Second)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := r.k.client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != r.uid {
			return apierrors.NewNotFound(corev1.Resource("pods"), pod.Name)
		}
		cur.Status = r.buildStatus(cur.Status)
		_, err = r.k.client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	switch {
	case err == nil:
		r.mu.Lock()
		r.lastSig = sig
		r.mu.Unlock()
	case apierrors.IsNotFound(err), errors.Is(err, context.Canceled), r.stopping():
	default:
		r.logf("updating status: %v", err)
	}
}

// cleanup stops the processes, removes the sandbox and, for a graceful
// deletion, removes the pod object.
func (r *podRunner) cleanup() {
	r.mu.Lock()
	grace, mode := r.grace, r.mode
	containers := append([]*containerState(nil), r.containers...)
	r.mu.Unlock()
	if mode == stopGraceful {
		r.terminate(containers, grace)
	} else {
		var wg sync.WaitGroup
		for _, c := range containers {
			if c.proc == nil {
				continue
			}
			wg.Add(1)
			go func(p *process) {
				defer wg.Done()
				if err := p.stop(grace); err != nil {
					r.logf("%v", err)
				}
			}(c.proc)
		}
		wg.Wait()
	}
	if r.netns != "" {
		if err := r.k.net.deletePod(r.netns, r.veth); err != nil {
			r.logf("removing network namespace: %v", err)
		}
		r.k.net.release(r.ip)
	}
	r.k.targets.release(r.held)
	if r.dir != "" {
		_ = os.RemoveAll(r.dir)
	}
	r.mu.Lock()
	mode = r.mode
	r.mu.Unlock()
	if mode == stopGraceful {
		pod := r.latest()
		r.k.forceDelete(pod.Namespace, pod.Name, pod.UID)
	}
}
