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

package controller

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gatewayparamsv1alpha1 "github.com/coxswain-go/coxswain/api/gateway/v1alpha1"
	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
)

const testPEM = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"

// mutation edits a valid object into the case under test.
type mutation func(u *unstructured.Unstructured)

func set(value any, path ...string) mutation {
	return func(u *unstructured.Unstructured) {
		Expect(unstructured.SetNestedField(u.Object, value, path...)).To(Succeed())
	}
}

func unset(path ...string) mutation {
	return func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, path...) }
}

func setLabel(key, value string) mutation {
	return func(u *unstructured.Unstructured) {
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[key] = value
		u.SetLabels(labels)
	}
}

func apply(u *unstructured.Unstructured, ms ...mutation) *unstructured.Unstructured {
	for _, m := range ms {
		m(u)
	}
	return u
}

// validProject is a Project every validation accepts: a UUID name and a
// shard label that matches spec.shardID.
func validProject(ms ...mutation) *unstructured.Unstructured {
	shard := uuid.NewString()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": infrav1alpha1.GroupVersion.String(),
		"kind":       "Project",
		"metadata": map[string]any{
			"name":   uuid.NewString(),
			"labels": map[string]any{infrav1alpha1.ShardIDLabel: shard},
		},
		"spec": map[string]any{
			"shardID":           shard,
			"apiServerEndpoint": "p-1.shard-a.svc:6443",
			"agentCA": map[string]any{
				"certificates":   testPEM,
				"sealedKey":      "c2VhbGVk",
				"wrappedDataKey": "d3JhcHBlZA==",
			},
			"relayRoots": testPEM,
			"trustSignature": map[string]any{
				"keyID":     "cosmos-1",
				"signedAt":  "2026-11-01T00:00:00Z",
				"signature": "c2ln",
			},
		},
	}}
	return apply(u, ms...)
}

func validGatewayParameters(ms ...mutation) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gatewayparamsv1alpha1.GroupVersion.String(),
		"kind":       "CoxswainGatewayParameters",
		"metadata":   map[string]any{"name": "p-" + uuid.NewString()[:8], "namespace": "default"},
		"spec": map[string]any{
			"replicas":    int64(2),
			"serviceType": "ClusterIP",
			"logLevel":    "debug",
			"autoscaling": map[string]any{"enabled": false, "minReplicas": int64(2), "maxReplicas": int64(4)},
			"podTemplate": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "coxswain"}}}},
		},
	}}
	return apply(u, ms...)
}

func validIngressClassParameters(ms ...mutation) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "ingress.coxswain-labs.dev/v1alpha1",
		"kind":       "CoxswainIngressClassParameters",
		"metadata":   map[string]any{"name": "p-" + uuid.NewString()[:8], "namespace": "default"},
		"spec": map[string]any{
			"defaultAnnotations": map[string]any{"ingress.coxswain-labs.dev/read-timeout": "30s"},
			"accessLog":          false,
		},
	}}
	return apply(u, ms...)
}

// validPolicy is a policy of ours (gateway.coxswain-labs.dev) of kind with
// spec.
func validPolicy(kind string, spec map[string]any, ms ...mutation) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gatewayparamsv1alpha1.GroupVersion.String(),
		"kind":       kind,
		"metadata":   map[string]any{"name": "p-" + uuid.NewString()[:8], "namespace": "default"},
		"spec":       spec,
	}}
	return apply(u, ms...)
}

func validRateLimit(ms ...mutation) *unstructured.Unstructured {
	return validPolicy(gatewayparamsv1alpha1.KindRateLimit, map[string]any{
		"targetRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "api"}},
		"requests":   int64(100),
		"period":     "1m",
		"key":        map[string]any{"type": "Header", "header": "X-Api-Key"},
	}, ms...)
}

func validJWTAuth(ms ...mutation) *unstructured.Unstructured {
	return validPolicy(gatewayparamsv1alpha1.KindJWTAuth, map[string]any{
		"issuer":  "https://issuer.example.com",
		"jwksURI": "https://issuer.example.com/.well-known/jwks.json",
	}, ms...)
}

func validBackendPolicy(ms ...mutation) *unstructured.Unstructured {
	return validPolicy(gatewayparamsv1alpha1.KindBackendPolicy, map[string]any{
		"targetRefs":   []any{map[string]any{"group": "", "kind": "Service", "name": "api"}},
		"loadBalancer": map[string]any{"type": "ConsistentHash", "consistentHash": map[string]any{"header": "X-User"}},
	}, ms...)
}

// createRejected creates obj and returns the apiserver's error. An object the
// apiserver accepted is deleted again and reported as an error, so the
// caller can retry while an admission policy is still being loaded.
func createRejected(obj *unstructured.Unstructured) error {
	err := k8sClient.Create(ctx, obj.DeepCopy())
	if err == nil {
		_ = k8sClient.Delete(ctx, obj.DeepCopy())
		return fmt.Errorf("%s %s was accepted", obj.GetKind(), obj.GetName())
	}
	return err
}

var _ = Describe("API validation", func() {
	It("accepts the valid base objects the rejection table starts from", func() {
		for _, obj := range []*unstructured.Unstructured{
			validProject(), validGatewayParameters(), validIngressClassParameters(),
			validRateLimit(), validJWTAuth(), validBackendPolicy(),
		} {
			Expect(k8sClient.Create(ctx, obj)).To(Succeed(), "%s", obj.GetKind())
			Expect(k8sClient.Delete(ctx, obj)).To(Succeed())
		}
	})

	DescribeTable("rejects invalid objects with a clear message",
		func(obj *unstructured.Unstructured, want string) {
			// Admission policies load asynchronously after they are created,
			// so a rejection that comes from one may take a moment to appear.
			var err error
			Eventually(func() error {
				err = createRejected(obj)
				return err
			}).WithTimeout(20 * time.Second).WithPolling(200 * time.Millisecond).Should(
				Satisfy(func(e error) bool { return apierrors.IsInvalid(e) || apierrors.IsForbidden(e) }))
			Expect(err.Error()).To(ContainSubstring(want))
		},
		Entry("Project name is not a UUID",
			validProject(func(u *unstructured.Unstructured) { u.SetName("my-project") }),
			"metadata.name must be a lowercase UUID"),
		Entry("Project name is an uppercase UUID",
			validProject(func(u *unstructured.Unstructured) { u.SetName("5F0C8A7E-3B7D-4D8E-9A51-0C2F6B1E9D43") }),
			"metadata.name must be a lowercase UUID"),
		Entry("Project shardID is not a UUID",
			validProject(set("shard-a", "spec", "shardID"), setLabel(infrav1alpha1.ShardIDLabel, "shard-a")),
			"spec.shardID: Invalid value"),
		Entry("Project has no shard label",
			validProject(func(u *unstructured.Unstructured) { u.SetLabels(nil) }),
			"label infra.apoxy.dev/shard-id must equal spec.shardID"),
		Entry("Project shard label differs from spec.shardID",
			validProject(setLabel(infrav1alpha1.ShardIDLabel, "0b6f5c2a-8e4d-4f1a-b3c9-7d2e1a6f4b58")),
			"label infra.apoxy.dev/shard-id must equal spec.shardID"),
		Entry("Project sets nextCertificate alone",
			validProject(set(testPEM, "spec", "agentCA", "nextCertificate")),
			"nextCertificate, nextSealedKey and nextWrappedDataKey must be set together"),
		Entry("Project sets the next keys without nextCertificate",
			validProject(set("a2V5", "spec", "agentCA", "nextSealedKey"), set("a2V5", "spec", "agentCA", "nextWrappedDataKey")),
			"nextCertificate, nextSealedKey and nextWrappedDataKey must be set together"),
		Entry("Project endpoint has a scheme",
			validProject(set("https://p-1.shard-a.svc:6443", "spec", "apiServerEndpoint")),
			"apiServerEndpoint must be host[:port]"),
		Entry("Project endpoint has a path",
			validProject(set("p-1.shard-a.svc/readyz", "spec", "apiServerEndpoint")),
			"apiServerEndpoint must be host[:port]"),
		Entry("Project endpoint is an unbracketed IPv6 address",
			validProject(set("2001:db8::1", "spec", "apiServerEndpoint")),
			"apiServerEndpoint must be host[:port]"),
		Entry("Project endpoint port is out of range",
			validProject(set("p-1.shard-a.svc:70000", "spec", "apiServerEndpoint")),
			"apiServerEndpoint port must be between 1 and 65535"),
		Entry("Project endpoint port is zero",
			validProject(set("10.0.0.1:0", "spec", "apiServerEndpoint")),
			"apiServerEndpoint port must be between 1 and 65535"),
		Entry("Project endpoint is missing",
			validProject(unset("spec", "apiServerEndpoint")),
			"spec.apiServerEndpoint: Required value"),
		Entry("Project agent CA is not PEM",
			validProject(set("not a certificate", "spec", "agentCA", "certificates")),
			"certificates must be PEM certificates"),
		Entry("Project trust signature has no signature",
			validProject(unset("spec", "trustSignature", "signature")),
			"spec.trustSignature.signature: Required value"),
		Entry("CoxswainGatewayParameters autoscaling minReplicas > maxReplicas",
			validGatewayParameters(set(int64(5), "spec", "autoscaling", "minReplicas"), set(int64(3), "spec", "autoscaling", "maxReplicas")),
			"minReplicas must be less than or equal to maxReplicas"),
		Entry("CoxswainGatewayParameters autoscaling enabled without maxReplicas",
			validGatewayParameters(set(map[string]any{"enabled": true, "minReplicas": int64(2)}, "spec", "autoscaling")),
			"maxReplicas is required when autoscaling is enabled"),
		Entry("CoxswainGatewayParameters autoscaling CPU target above 100",
			validGatewayParameters(set(int64(150), "spec", "autoscaling", "targetCPUUtilizationPercentage")),
			"spec.autoscaling.targetCPUUtilizationPercentage: Invalid value"),
		Entry("CoxswainGatewayParameters negative replicas",
			validGatewayParameters(set(int64(-1), "spec", "replicas")),
			"spec.replicas: Invalid value: -1"),
		Entry("CoxswainGatewayParameters unknown serviceType",
			validGatewayParameters(set("ExternalName", "spec", "serviceType")),
			`spec.serviceType: Unsupported value: "ExternalName"`),
		Entry("CoxswainGatewayParameters unknown logLevel",
			validGatewayParameters(set("verbose", "spec", "logLevel")),
			`spec.logLevel: Unsupported value: "verbose"`),
		Entry("CoxswainGatewayParameters empty image",
			validGatewayParameters(set("", "spec", "image")),
			"spec.image: Invalid value"),
		Entry("CoxswainGatewayParameters shutdown grace period not above preStop + drain + 1",
			validGatewayParameters(set(map[string]any{"preStopSleepSeconds": int64(3), "drainSeconds": int64(10), "terminationGracePeriodSeconds": int64(14)}, "spec", "shutdown")),
			"terminationGracePeriodSeconds must be greater than preStopSleepSeconds + drainSeconds + 1"),
		Entry("CoxswainGatewayParameters shutdown grace period within the default preStop + drain",
			validGatewayParameters(set(map[string]any{"terminationGracePeriodSeconds": int64(8)}, "spec", "shutdown")),
			"terminationGracePeriodSeconds must be greater than preStopSleepSeconds + drainSeconds + 1"),
		Entry("CoxswainGatewayParameters negative drainSeconds",
			validGatewayParameters(set(map[string]any{"drainSeconds": int64(-1)}, "spec", "shutdown")),
			"spec.shutdown.drainSeconds: Invalid value: -1"),
		Entry("CoxswainGatewayParameters streams idleTimeout below 1s",
			validGatewayParameters(set("500ms", "spec", "streams", "idleTimeout")),
			"idleTimeout must be between 1s and 168h"),
		Entry("CoxswainGatewayParameters streams udpSessionIdleTimeout above 1h",
			validGatewayParameters(set("2h", "spec", "streams", "udpSessionIdleTimeout")),
			"udpSessionIdleTimeout must be between 1s and 1h"),
		Entry("CoxswainGatewayParameters maxResponseHeaderBytes below 4 KiB",
			validGatewayParameters(set(int64(4095), "spec", "maxResponseHeaderBytes")),
			"spec.maxResponseHeaderBytes: Invalid value: 4095"),
		Entry("CoxswainGatewayParameters maxResponseHeaderBytes above 64 MiB",
			validGatewayParameters(set(int64(64<<20+1), "spec", "maxResponseHeaderBytes")),
			"spec.maxResponseHeaderBytes: Invalid value: 67108865"),
		Entry("CoxswainGatewayParameters podTemplate.spec is not an object",
			validGatewayParameters(set("hostNetwork", "spec", "podTemplate", "spec")),
			"spec.podTemplate.spec: Invalid value: \"string\": spec.podTemplate.spec in body must be of type object"),
		Entry("CoxswainIngressClassParameters annotation key outside our prefix",
			validIngressClassParameters(set(map[string]any{"nginx.ingress.kubernetes.io/rewrite-target": "/"}, "spec", "defaultAnnotations")),
			"defaultAnnotations keys must start with ingress.coxswain-labs.dev/"),
		Entry("CoxswainIngressClassParameters annotation key that is only the prefix",
			validIngressClassParameters(set(map[string]any{"ingress.coxswain-labs.dev/": "x"}, "spec", "defaultAnnotations")),
			"defaultAnnotations keys must start with ingress.coxswain-labs.dev/"),
		Entry("CoxswainIngressClassParameters accessLog is not a boolean",
			validIngressClassParameters(set("no", "spec", "accessLog")),
			"spec.accessLog: Invalid value"),
		Entry("RateLimit key of type Header without a header",
			validRateLimit(unset("spec", "key", "header")),
			"header is set exactly for type Header"),
		Entry("RateLimit key of type ClientIP with a header",
			validRateLimit(set("ClientIP", "spec", "key", "type")),
			"header is set exactly for type Header"),
		Entry("RateLimit targeting a Service",
			validRateLimit(set([]any{map[string]any{"group": "", "kind": "Service", "name": "api"}}, "spec", "targetRefs")),
			"targetRefs must be Gateways, HTTPRoutes or GRPCRoutes of gateway.networking.k8s.io"),
		Entry("JwtAuth with both jwks and jwksURI",
			validJWTAuth(set(`{"keys":[]}`, "spec", "jwks")),
			"set exactly one of jwks and jwksURI"),
		Entry("JwtAuth with neither jwks nor jwksURI",
			validJWTAuth(unset("spec", "jwksURI")),
			"set exactly one of jwks and jwksURI"),
		Entry("JwtAuth jwksURI that is not http(s)",
			validJWTAuth(set("ftp://issuer.example.com/jwks.json", "spec", "jwksURI")),
			"jwksURI must be an http or https URL"),
		Entry("CoxswainBackendPolicy targeting an HTTPRoute",
			validBackendPolicy(set([]any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "HTTPRoute", "name": "api"}}, "spec", "targetRefs")),
			"targetRefs must be core Services"),
		Entry("CoxswainBackendPolicy ConsistentHash with two keys",
			validBackendPolicy(set(true, "spec", "loadBalancer", "consistentHash", "sourceIP")),
			"set exactly one of header, cookie and sourceIP"),
		Entry("CoxswainBackendPolicy consistentHash without type ConsistentHash",
			validBackendPolicy(set("RoundRobin", "spec", "loadBalancer", "type")),
			"consistentHash is set exactly for type ConsistentHash"),
	)

	It("keeps spec.shardID immutable", func() {
		p := validProject()
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, p))).To(Succeed()) })

		other := uuid.NewString()
		moved := p.DeepCopy()
		apply(moved, set(other, "spec", "shardID"), setLabel(infrav1alpha1.ShardIDLabel, other))
		err := k8sClient.Update(ctx, moved)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("shardID is immutable"))

		// Other spec fields stay editable.
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), p)).To(Succeed())
		Expect(unstructured.SetNestedField(p.Object, "p-1.shard-b.svc:443", "spec", "apiServerEndpoint")).To(Succeed())
		Expect(k8sClient.Update(ctx, p)).To(Succeed())
	})

	It("accepts a shutdown block whose grace period leaves time after preStop and drain, and the header cap bounds", func() {
		for _, u := range []*unstructured.Unstructured{
			validGatewayParameters(set(map[string]any{"preStopSleepSeconds": int64(3), "drainSeconds": int64(10), "terminationGracePeriodSeconds": int64(15)}, "spec", "shutdown")),
			validGatewayParameters(set(map[string]any{"preStopSleepSeconds": int64(0), "drainSeconds": int64(0), "terminationGracePeriodSeconds": int64(2)}, "spec", "shutdown")),
			validGatewayParameters(set(map[string]any{"drainSeconds": int64(60)}, "spec", "shutdown")),
			validGatewayParameters(set(int64(4096), "spec", "maxResponseHeaderBytes")),
			validGatewayParameters(set(int64(64<<20), "spec", "maxResponseHeaderBytes")),
		} {
			Expect(k8sClient.Create(ctx, u)).To(Succeed())
			Expect(k8sClient.Delete(ctx, u)).To(Succeed())
		}
	})

	It("defaults only inside the autoscaling block, so unset fields can fall back to the class", func() {
		u := validGatewayParameters(
			unset("spec", "replicas"), unset("spec", "serviceType"), unset("spec", "logLevel"),
			set(map[string]any{"maxReplicas": int64(3)}, "spec", "autoscaling"))
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(ctx, u)).To(Succeed()) })

		got := &gatewayparamsv1alpha1.CoxswainGatewayParameters{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(u), got)).To(Succeed())
		Expect(got.Spec.Replicas).To(BeNil())
		Expect(got.Spec.ServiceType).To(BeNil())
		Expect(got.Spec.LogLevel).To(BeNil())
		Expect(got.Spec.AccessLog).To(BeNil())
		Expect(got.Spec.Autoscaling).NotTo(BeNil())
		Expect(got.Spec.Autoscaling.Enabled).To(BeFalse())
		Expect(got.Spec.Autoscaling.TargetCPUUtilizationPercentage).To(Equal(ptr.To[int32](80)))
		Expect(got.Spec.Autoscaling.MinReplicas).To(BeNil())
	})

	It("keeps podTemplate fields it does not know, for the strategic merge", func() {
		u := validGatewayParameters(set(map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"team": "edge"}},
			"spec": map[string]any{
				"tolerations": []any{map[string]any{"key": "dedicated", "operator": "Exists"}},
				"containers":  []any{map[string]any{"name": "sidecar", "image": "busybox", "futureField": "kept"}},
			},
		}, "spec", "podTemplate"))
		Expect(k8sClient.Create(ctx, u)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(ctx, u)).To(Succeed()) })

		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(u.GroupVersionKind())
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(u), got)).To(Succeed())
		v, found, err := unstructured.NestedSlice(got.Object, "spec", "podTemplate", "spec", "containers")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue())
		Expect(v[0]).To(HaveKeyWithValue("futureField", "kept"))
	})

	It("round-trips the sealed key bytes and status fields of a Project", func() {
		p := validProject()
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(ctx, p)).To(Succeed()) })

		got := &infrav1alpha1.Project{}
		Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		Expect(got.Spec.AgentCA.SealedKey).To(Equal([]byte("sealed")))
		Expect(got.Spec.TrustSignature.Signature).To(Equal([]byte("sig")))

		now := metav1.NewTime(time.Now().Truncate(time.Second))
		got.Status = infrav1alpha1.ProjectStatus{
			ObservedGeneration:   got.Generation,
			ObservedEndpoint:     got.Spec.APIServerEndpoint,
			LastHealthyProbeTime: &now,
			Conditions: []metav1.Condition{{
				Type: infrav1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "ProbeSucceeded",
				Message: "readyz answered 200", LastTransitionTime: now, ObservedGeneration: got.Generation,
			}},
		}
		Expect(k8sClient.Status().Update(ctx, got)).To(Succeed())

		got.Status.ConsecutiveFailures = -1
		err := k8sClient.Status().Update(ctx, got)
		Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		Expect(err.Error()).To(ContainSubstring("status.consecutiveFailures"))
	})

	It("prints shard, endpoint and Ready columns for Projects", func() {
		p := validProject()
		Expect(k8sClient.Create(ctx, p)).To(Succeed())
		DeferCleanup(func() { Expect(k8sClient.Delete(ctx, p)).To(Succeed()) })

		clientset, err := kubernetes.NewForConfig(cfg)
		Expect(err).NotTo(HaveOccurred())
		body, err := clientset.Discovery().RESTClient().Get().
			AbsPath("/apis/infra.apoxy.dev/v1alpha1/projects", p.GetName()).
			SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").
			DoRaw(ctx)
		Expect(err).NotTo(HaveOccurred(), string(body))

		var table metav1.Table
		Expect(json.Unmarshal(body, &table)).To(Succeed())
		var names []string
		for _, c := range table.ColumnDefinitions {
			names = append(names, c.Name)
		}
		Expect(names).To(Equal([]string{"Name", "Shard", "Endpoint", "Ready", "Age"}))
		Expect(table.Rows).To(HaveLen(1))
		Expect(table.Rows[0].Cells[1]).To(Equal(p.Object["spec"].(map[string]any)["shardID"]))
		Expect(table.Rows[0].Cells[2]).To(Equal("p-1.shard-a.svc:6443"))
	})
})
