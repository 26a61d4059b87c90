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
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// kubelet is the harness's node agent: it registers one Ready Node, binds
// every unscheduled pod to it and runs each pod as local processes in a
// network namespace of its own.
type kubelet struct {
	client      kubernetes.Interface
	nodeName    string
	net         *network
	binaries    Binaries
	podsDir     string // volumes and launch files, per pod
	logsDir     string // container logs, kept after the pod is gone
	apiHost     string // what pods use to reach the apiserver
	apiPort     string
	shimPath    string
	hostMountNS string
	reg         *pidRegistry
	logf        func(format string, args ...any)
	// The kubelet API (logs.go): serving certificate and the CA its
	// clients' certificates must chain to.
	servingCert, servingKey string
	caPEM                   []byte
	apiPortNum              int
	// mountsRecord lists the mount targets created on the host, so a run
	// after a crash removes them (removeRecordedMountTargets).
	mountsRecord string

	ctx     context.Context
	cancel  context.CancelFunc
	factory informers.SharedInformerFactory

	mu       sync.Mutex
	stopping bool
	runners  map[types.UID]*podRunner
	binding  map[types.UID]bool
	wg       sync.WaitGroup

	targets *mountTargets

	proxy      *serviceProxy
	hostsDirty chan struct{}
	svcAddrs   map[string]string // "<ns>/<svc>" -> endpoint address, for pods' /etc/hosts
}

func (k *kubelet) start(ctx context.Context) error {
	k.ctx, k.cancel = context.WithCancel(context.Background())
	k.runners = map[types.UID]*podRunner{}
	k.binding = map[types.UID]bool{}
	k.targets = &mountTargets{refs: map[string]int{}, record: k.mountsRecord}
	for _, d := range []string{k.podsDir, k.logsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	port, err := k.serveAPI()
	if err != nil {
		return fmt.Errorf("kubelet API: %w", err)
	}
	k.apiPortNum = port
	if err := k.registerNode(ctx); err != nil {
		return fmt.Errorf("registering node %s: %w", k.nodeName, err)
	}
	k.factory = informers.NewSharedInformerFactory(k.client, 0)
	inf := k.factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { k.handle(obj) },
		UpdateFunc: func(_, obj any) { k.handle(obj) },
		DeleteFunc: func(obj any) { k.handleDelete(obj) },
	}); err != nil {
		return err
	}
	// Services and EndpointSlices feed the pods' /etc/hosts (hosts.go).
	k.hostsDirty = make(chan struct{}, 1)
	dirty := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { k.markHostsDirty() },
		UpdateFunc: func(any, any) { k.markHostsDirty() },
		DeleteFunc: func(any) { k.markHostsDirty() },
	}
	svcInf := k.factory.Core().V1().Services().Informer()
	sliceInf := k.factory.Discovery().V1().EndpointSlices().Informer()
	for _, i := range []cache.SharedIndexInformer{svcInf, sliceInf} {
		if _, err := i.AddEventHandler(dirty); err != nil {
			return err
		}
	}
	k.factory.Start(k.ctx.Done())
	syncCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced, svcInf.HasSynced, sliceInf.HasSynced) {
		return errors.New("informers did not sync within 30s")
	}
	k.proxy = newServiceProxy(k.ctx, k.client, k.net, k.logf)
	k.syncServices()
	go k.hostsLoop()
	return nil
}

func (k *kubelet) markHostsDirty() {
	select {
	case k.hostsDirty <- struct{}{}:
	default:
	}
}

// syncServices reconciles the service proxy and recomputes the Service
// address table (for pods' /etc/hosts) from the informer caches; it reports
// whether the table changed.
func (k *kubelet) syncServices() bool {
	svcs, err1 := k.factory.Core().V1().Services().Lister().List(labels.Everything())
	slices, err2 := k.factory.Discovery().V1().EndpointSlices().Lister().List(labels.Everything())
	if err1 != nil || err2 != nil {
		return false
	}
	k.proxy.reconcile(svcs, slices)
	addrs := serviceAddresses(svcs, slices)
	k.mu.Lock()
	defer k.mu.Unlock()
	if maps.Equal(addrs, k.svcAddrs) {
		return false
	}
	k.svcAddrs = addrs
	return true
}

// hostsFor renders a pod's /etc/hosts from the current table.
func (k *kubelet) hostsFor(namespace, name, ip string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return hostsFile(namespace, name, ip, k.svcAddrs)
}

// hostsLoop rewrites every pod's /etc/hosts when Services or EndpointSlices
// change (debounced).
func (k *kubelet) hostsLoop() {
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-k.hostsDirty:
		}
		select {
		case <-k.ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
		if !k.syncServices() {
			continue
		}
		k.mu.Lock()
		runners := make([]*podRunner, 0, len(k.runners))
		for _, r := range k.runners {
			runners = append(runners, r)
		}
		k.mu.Unlock()
		for _, r := range runners {
			r.writeHosts()
		}
	}
}

// registerNode creates (or refreshes) the Node with a Ready status.
func (k *kubelet) registerNode(ctx context.Context) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: k.nodeName,
			Labels: map[string]string{
				"kubernetes.io/hostname": k.nodeName,
				"kubernetes.io/os":       "linux",
				"kubernetes.io/arch":     "amd64",
			},
		},
	}
	created, err := k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		created, err = k.client.CoreV1().Nodes().Get(ctx, k.nodeName, metav1.GetOptions{})
	}
	if err != nil {
		return err
	}
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("500"),
	}
	created.Status = corev1.NodeStatus{
		Capacity:    capacity,
		Allocatable: capacity,
		Phase:       corev1.NodeRunning,
		DaemonEndpoints: corev1.NodeDaemonEndpoints{
			KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(k.apiPortNum)},
		},
		Conditions: []corev1.NodeCondition{{
			Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
			Message: "local kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: now,
		}},
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: k.net.gateway.String()},
			{Type: corev1.NodeHostName, Address: k.nodeName},
		},
		NodeInfo: corev1.NodeSystemInfo{
			OperatingSystem: "linux", Architecture: "amd64",
			KubeletVersion: "v" + KubernetesVersion, ContainerRuntimeVersion: "localcluster://processes",
		},
	}
	_, err = k.client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{})
	return err
}

func (k *kubelet) handle(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.Spec.NodeName == "" {
		if pod.DeletionTimestamp == nil {
			k.bind(pod)
		}
		return
	}
	if pod.Spec.NodeName != k.nodeName {
		return
	}
	k.mu.Lock()
	if k.stopping {
		k.mu.Unlock()
		return
	}
	r := k.runners[pod.UID]
	if r == nil {
		switch {
		case pod.DeletionTimestamp != nil:
			// Nothing runs for it: finish the graceful deletion.
			k.mu.Unlock()
			go k.forceDelete(pod.Namespace, pod.Name, pod.UID)
			return
		case pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed:
			k.mu.Unlock()
			return
		}
		r = newPodRunner(k, pod)
		k.runners[pod.UID] = r
		k.wg.Add(1)
		go func() {
			defer k.wg.Done()
			r.run()
			k.mu.Lock()
			delete(k.runners, pod.UID)
			k.mu.Unlock()
		}()
	}
	k.mu.Unlock()
	r.update(pod)
}

func (k *kubelet) handleDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	k.mu.Lock()
	r := k.runners[pod.UID]
	k.mu.Unlock()
	if r != nil {
		r.requestStop(0, stopObjectGone)
	}
}

// bind schedules an unscheduled pod onto the node.
func (k *kubelet) bind(pod *corev1.Pod) {
	k.mu.Lock()
	if k.binding[pod.UID] || k.stopping {
		k.mu.Unlock()
		return
	}
	k.binding[pod.UID] = true
	k.mu.Unlock()
	go func() {
		defer func() {
			k.mu.Lock()
			delete(k.binding, pod.UID)
			k.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(k.ctx, 10*time.Second)
		defer cancel()
		b := &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
			Target:     corev1.ObjectReference{Kind: "Node", Name: k.nodeName},
		}
		err := k.client.CoreV1().Pods(pod.Namespace).Bind(ctx, b, metav1.CreateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			k.logf("binding pod %s/%s: %v", pod.Namespace, pod.Name, err)
		}
	}()
}

// forceDelete removes a pod object whose containers are gone.
func (k *kubelet) forceDelete(namespace, name string, uid types.UID) {
	ctx, cancel := context.WithTimeout(k.ctx, 10*time.Second)
	defer cancel()
	err := k.client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
		k.logf("deleting pod %s/%s: %v", namespace, name, err)
	}
}

// stop kills every pod (without API calls: the cluster is going away) and
// waits, bounded, for the runners to finish.
func (k *kubelet) stop(timeout time.Duration) error {
	k.mu.Lock()
	k.stopping = true
	runners := make([]*podRunner, 0, len(k.runners))
	for _, r := range k.runners {
		runners = append(runners, r)
	}
	k.mu.Unlock()
	for _, r := range runners {
		r.requestStop(2*time.Second, stopShutdown)
	}
	done := make(chan struct{})
	go func() { k.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-time.After(timeout):
		err = fmt.Errorf("pods did not stop within %s", timeout)
	}
	if k.cancel != nil {
		k.cancel()
	}
	if k.proxy != nil {
		k.proxy.close()
	}
	if k.factory != nil {
		k.factory.Shutdown()
	}
	return err
}

// PodSandbox is what the local kubelet runs for one pod.
type PodSandbox struct {
	Netns string // network namespace name ("" for hostNetwork pods)
	IP    string
	PIDs  []int // container processes running now
}

// sandboxes snapshots every running pod by UID.
func (k *kubelet) sandboxes() map[types.UID]PodSandbox {
	k.mu.Lock()
	runners := make([]*podRunner, 0, len(k.runners))
	for _, r := range k.runners {
		runners = append(runners, r)
	}
	k.mu.Unlock()
	out := make(map[types.UID]PodSandbox, len(runners))
	for _, r := range runners {
		out[r.uid] = r.sandbox()
	}
	return out
}

// objects reads Secrets and ConfigMaps from the API.
type apiObjects struct {
	ctx    context.Context
	client kubernetes.Interface
}

func (o apiObjects) Secret(ns, name string) (*corev1.Secret, bool, error) {
	s, err := o.client.CoreV1().Secrets(ns).Get(o.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return s, err == nil, err
}

func (o apiObjects) ConfigMap(ns, name string) (*corev1.ConfigMap, bool, error) {
	cm, err := o.client.CoreV1().ConfigMaps(ns).Get(o.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return cm, err == nil, err
}

// token issues a bound service-account token (TokenRequest API).
func (k *kubelet) token(pod *corev1.Pod, audience string, exp int64) (string, error) {
	ctx, cancel := context.WithTimeout(k.ctx, 10*time.Second)
	defer cancel()
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(exp),
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	tr, err := k.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for service account %s/%s: %w", pod.Namespace, sa, err)
	}
	return tr.Status.Token, nil
}

// mountTargets creates missing mountPath directories (or files) on the host
// - bind mounts need an existing target - and removes the ones it created
// once no pod uses them any more. Existing paths are never removed.
type mountTargets struct {
	mu     sync.Mutex
	refs   map[string]int // paths this harness created -> pods using them
	record string         // file listing every path created ("" for none)
}

// forbiddenTarget reports mount targets the harness refuses.
func forbiddenTarget(target string) bool {
	if target == "/" {
		return true
	}
	for _, p := range []string{"/proc", "/sys", "/dev"} {
		if target == p || strings.HasPrefix(target, p+"/") {
			return true
		}
	}
	return false
}

// ensure makes target exist; it returns the created paths this caller now
// holds a reference on (release them with release).
func (m *mountTargets) ensure(target string, dir bool) ([]string, error) {
	target = filepath.Clean(target)
	if !filepath.IsAbs(target) || forbiddenTarget(target) {
		return nil, fmt.Errorf("mountPath %q is not supported by the local kubelet", target)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	// Walk from the root down; every component we created (now or for
	// another pod) gets a reference.
	parts := strings.Split(strings.TrimPrefix(target, "/"), "/")
	var held []string
	cur := "/"
	for i, part := range parts {
		cur = filepath.Join(cur, part)
		last := i == len(parts)-1
		if _, ok := m.refs[cur]; ok {
			m.refs[cur]++
			held = append(held, cur)
			continue
		}
		if _, err := os.Lstat(cur); err == nil {
			continue
		}
		var err error
		if last && !dir {
			err = os.WriteFile(cur, nil, 0o644)
		} else {
			err = os.Mkdir(cur, 0o755)
		}
		if err != nil {
			m.releaseLocked(held)
			return nil, fmt.Errorf("creating mount target %s: %w", cur, err)
		}
		m.refs[cur] = 1
		m.recordLocked(cur)
		held = append(held, cur)
	}
	return held, nil
}

// recordLocked appends a created path to the record file.
func (m *mountTargets) recordLocked(path string) {
	if m.record == "" {
		return
	}
	f, err := os.OpenFile(m.record, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return
	}
	_, _ = f.WriteString(path + "\n")
	_ = f.Close()
}

// removeRecordedMountTargets removes the mount targets an earlier run
// recorded - only empty directories and empty files, deepest first - and
// then the record.
func removeRecordedMountTargets(record string) []string {
	b, err := os.ReadFile(record)
	if err != nil {
		return nil
	}
	paths := strings.Split(strings.TrimSpace(string(b)), "\n")
	sort.Sort(sort.Reverse(sort.StringSlice(paths)))
	var removed []string
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) || forbiddenTarget(p) {
			continue
		}
		st, err := os.Lstat(p)
		if err != nil || (!st.IsDir() && st.Size() != 0) || (!st.IsDir() && !st.Mode().IsRegular()) {
			continue
		}
		if os.Remove(p) == nil { // fails on non-empty directories
			removed = append(removed, p)
		}
	}
	_ = os.Remove(record)
	return removed
}

func (m *mountTargets) release(held []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releaseLocked(held)
}

func (m *mountTargets) releaseLocked(held []string) {
	for i := len(held) - 1; i >= 0; i-- {
		p := held[i]
		m.refs[p]--
		if m.refs[p] <= 0 {
			delete(m.refs, p)
			_ = os.Remove(p) // only when empty
		}
	}
}

// podNetNames derives the namespace and veth names from the pod UID.
func podNetNames(uid types.UID) (netns, veth string) {
	id := strings.ReplaceAll(string(uid), "-", "")
	if len(id) > 11 {
		id = id[:11]
	}
	return netnsPrefix + id, vethPrefix + id
}
