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
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
)

func TestOptions(t *testing.T) {
	var o Options
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--shard-id", "0b6f5c2a-8e4d-4f1a-b3c9-7d2e1a6f4b58", "--infra-addr", "infra.svc:6443", "--infra-insecure"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	var logged []string
	log := funcr.New(func(_, args string) { logged = append(logged, args) }, funcr.Options{})
	base := &rest.Config{Host: "https://other:1", TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca")}, BearerToken: "tok"}
	cfg, err := o.RESTConfig(base, log)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://infra.svc:6443" || !cfg.Insecure || cfg.CAData != nil || cfg.BearerToken != "tok" {
		t.Fatalf("rest config %+v", cfg)
	}
	if base.Host != "https://other:1" || base.CAData == nil {
		t.Fatal("base config modified")
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "WARNING") {
		t.Fatalf("no insecure warning: %v", logged)
	}

	for _, bad := range []Options{{ShardID: ""}, {ShardID: "0B6F5C2A-8E4D-4F1A-B3C9-7D2E1A6F4B58"}, {ShardID: "shard-a"}} {
		if bad.Validate() == nil {
			t.Errorf("accepted shard ID %q", bad.ShardID)
		}
	}
	secure := Options{ShardID: o.ShardID, InfraAddr: "https://infra.svc"}
	cfg, err = secure.RESTConfig(base, log)
	if err != nil || cfg.Insecure || string(cfg.CAData) != "ca" {
		t.Fatalf("secure config %+v %v", cfg, err)
	}
	if _, err := (Options{ShardID: o.ShardID}).RESTConfig(&rest.Config{}, log); err == nil {
		t.Fatal("no address accepted")
	}
	if _, err := New(Config{ShardID: "nope", RESTConfig: base}); err == nil {
		t.Fatal("bad shard accepted by New")
	}
}
