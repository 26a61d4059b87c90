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
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/serializer"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/coxswain-go/coxswain/internal/names"
)

// cachedObjects are objects as the apiserver sends them (defaults
// applied; a route with the status the controller writes; a Service and
// EndpointSlice as a chart and the endpointslice controller write them),
// %[1]d standing for the object's number.
var cachedObjects = map[string]string{
	"HTTPRoute": `{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute","metadata":{"name":"pre-%[1]d","namespace":"default",
"uid":"6f1c2a1e-0000-4000-8000-%012[1]d","resourceVersion":"%[1]d","generation":1,"creationTimestamp":"2026-12-07T09:00:00Z"},
"spec":{"parentRefs":[{"group":"gateway.networking.k8s.io","kind":"Gateway","name":"web"}],"hostnames":["pre-%[1]d.example.com"],
"rules":[{"matches":[{"path":{"type":"PathPrefix","value":"/"}}],"filters":[{"type":"RequestRedirect","requestRedirect":{"hostname":"moved-pre-%[1]d.example.com","statusCode":301}}]},
{"matches":[{"path":{"type":"PathPrefix","value":"/backend"}}],"backendRefs":[{"group":"","kind":"Service","name":"pre-%[1]d","port":80,"weight":1}]}]},
"status":{"parents":[{"parentRef":{"group":"gateway.networking.k8s.io","kind":"Gateway","name":"web"},"controllerName":"coxswain-labs.dev/gateway-controller",
"conditions":[{"type":"Accepted","status":"True","observedGeneration":1,"lastTransitionTime":"2026-12-07T09:00:01Z","reason":"Accepted","message":"route is accepted"},
{"type":"ResolvedRefs","status":"True","observedGeneration":1,"lastTransitionTime":"2026-12-07T09:00:01Z","reason":"ResolvedRefs","message":"all references resolved"}]}]}}`,
	"Service": `{"apiVersion":"v1","kind":"Service","metadata":{"name":"pre-%[1]d","namespace":"default","uid":"6f1c2a1e-0000-4000-8001-%012[1]d","resourceVersion":"%[1]d",
"creationTimestamp":"2026-12-07T09:00:00Z","labels":{"app.kubernetes.io/name":"pre-%[1]d","app.kubernetes.io/instance":"pre-%[1]d","app.kubernetes.io/managed-by":"Helm","helm.sh/chart":"app-1.4.2"},
"annotations":{"meta.helm.sh/release-name":"pre-%[1]d","meta.helm.sh/release-namespace":"default"}},
"spec":{"type":"ClusterIP","clusterIP":"10.96.1.1","clusterIPs":["10.96.1.1"],"ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack","internalTrafficPolicy":"Cluster","sessionAffinity":"None",
"selector":{"app.kubernetes.io/name":"pre-%[1]d","app.kubernetes.io/instance":"pre-%[1]d"},"ports":[{"name":"http","port":80,"targetPort":8080,"protocol":"TCP"}]},"status":{"loadBalancer":{}}}`,
	"EndpointSlice": `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"pre-%[1]d-8kq2x","generateName":"pre-%[1]d-","namespace":"default",
"uid":"6f1c2a1e-0000-4000-8002-%012[1]d","resourceVersion":"%[1]d","generation":1,"creationTimestamp":"2026-12-07T09:00:00Z",
"labels":{"kubernetes.io/service-name":"pre-%[1]d","endpointslice.kubernetes.io/managed-by":"endpointslice-controller.k8s.io","app.kubernetes.io/name":"pre-%[1]d","app.kubernetes.io/instance":"pre-%[1]d"},
"annotations":{"endpoints.kubernetes.io/last-change-trigger-time":"2026-12-07T09:00:00Z"},
"ownerReferences":[{"apiVersion":"v1","kind":"Service","name":"pre-%[1]d","uid":"6f1c2a1e-0000-4000-8001-%012[1]d","controller":true,"blockOwnerDeletion":true}]},
"addressType":"IPv4","ports":[{"name":"http","port":8080,"protocol":"TCP"}],"endpoints":[
{"addresses":["10.64.0.1"],"conditions":{"ready":true,"serving":true,"terminating":false},"nodeName":"node-1","zone":"zone-0","targetRef":{"kind":"Pod","namespace":"default","name":"pre-%[1]d-7d9f8b6c5-00000","uid":"6f1c2a1e-0000-4000-8003-%012[1]d"}},
{"addresses":["10.72.0.1"],"conditions":{"ready":true,"serving":true,"terminating":false},"nodeName":"node-2","zone":"zone-1","targetRef":{"kind":"Pod","namespace":"default","name":"pre-%[1]d-7d9f8b6c5-00001","uid":"6f1c2a1e-0000-4000-8004-%012[1]d"}},
{"addresses":["10.80.0.1"],"conditions":{"ready":true,"serving":true,"terminating":false},"nodeName":"node-3","zone":"zone-2","targetRef":{"kind":"Pod","namespace":"default","name":"pre-%[1]d-7d9f8b6c5-00002","uid":"6f1c2a1e-0000-4000-8005-%012[1]d"}}]}`,
}

// BenchmarkCachedObjectMemory reports the heap a cached object keeps
// (bytes and objects, after a collection), decoded as the informers decode
// it, whole and as the cache keeps it (CacheOptions' transform), for each
// kind of cachedObjects. It measures memory, not time.
func BenchmarkCachedObjectMemory(b *testing.B) {
	codecs := serializer.NewCodecFactory(NewScheme())
	decoder := codecs.UniversalDeserializer()
	const n = 2000
	for _, kind := range []string{"HTTPRoute", "Service", "EndpointSlice"} {
		docs := make([][]byte, n)
		for i := range docs {
			docs[i] = []byte(strings.ReplaceAll(fmt.Sprintf(cachedObjects[kind], i+1), "\n", ""))
		}
		for _, way := range []struct {
			name      string
			transform toolscache.TransformFunc
		}{{"whole", nil}, {"cached", CacheOptions(names.DefaultInstallNamespace).DefaultTransform}} {
			b.Run(kind+"/"+way.name, func(b *testing.B) {
				var perObject, objects float64
				for range b.N {
					kept := make([]any, n)
					var before, after runtime.MemStats
					settle()
					runtime.ReadMemStats(&before)
					for i, doc := range docs {
						obj, _, err := decoder.Decode(doc, nil, nil)
						if err != nil {
							b.Fatal(err)
						}
						kept[i] = obj
						if way.transform != nil {
							if kept[i], err = way.transform(obj); err != nil {
								b.Fatal(err)
							}
						}
					}
					settle()
					runtime.ReadMemStats(&after)
					perObject = float64(after.HeapAlloc-before.HeapAlloc) / n
					objects = float64(after.HeapObjects-before.HeapObjects) / n
					runtime.KeepAlive(kept)
				}
				b.ReportMetric(perObject, "B/object")
				b.ReportMetric(objects, "allocs/object")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// settle collects the heap twice, a moment apart: unique's map drops the
// entries of strings no longer interned in the background after a
// collection, and the second one frees them.
func settle() {
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	runtime.GC()
}
