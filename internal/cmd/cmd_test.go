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

package cmd

import (
	"bytes"
	"maps"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/coxswain-go/coxswain/internal/proxycmd"
	"github.com/coxswain-go/coxswain/internal/version"
)

func run(args ...string) (string, error) {
	root := NewRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func TestVersion(t *testing.T) {
	out, err := run("version")
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != version.String() {
		t.Errorf("version printed %q, want %q", out, version.String())
	}
}

func TestProxyFlagErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve", "proxy"}, "exactly one of --shared or --dedicated is required"},
		{[]string{"serve", "proxy", "--shared", "--dedicated"}, "if any flags in the group [shared dedicated] are set none of the others can be"},
		{[]string{"serve", "proxy", "--dedicated", "--gateway-name", "edge"}, "--dedicated requires --gateway-name and --gateway-namespace"},
		{[]string{"serve", "proxy", "--shared", "--gateway-namespace", "ns"}, "only valid with --dedicated"},
		{[]string{"serve", "controller", "extra"}, `unknown command "extra"`},
		{[]string{"serve", "proxy", "--shared", "--tracing-otlp-endpoint", "127.0.0.1:4317", "--tracing-sampling-ratio", "2"}, "--tracing-sampling-ratio 2 is not between 0 and 1"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, err := run(tt.args...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// The Helm chart configures these two through the environment.
func TestControllerFlagDefaultsFromEnvironment(t *testing.T) {
	t.Setenv("COXSWAIN_DISCOVERY_CA_MODE", "external")
	t.Setenv("COXSWAIN_SHARED_PROXY_REPLICAS", "5")
	c := newControllerCommand()
	f := c.Flags()
	if got := f.Lookup("discovery-ca-mode").Value.String(); got != "external" {
		t.Errorf("--discovery-ca-mode = %q, want external from the environment", got)
	}
	if got := f.Lookup("shared-proxy-replicas").Value.String(); got != "5" {
		t.Errorf("--shared-proxy-replicas = %q, want 5 from the environment", got)
	}
	// An explicit flag still wins.
	if err := f.Parse([]string{"--shared-proxy-replicas=3"}); err != nil {
		t.Fatal(err)
	}
	if got := f.Lookup("shared-proxy-replicas").Value.String(); got != "3" {
		t.Errorf("--shared-proxy-replicas = %q, want the flag's 3", got)
	}
}

// TestFlagSpellings: "_" and "-" are interchangeable in flag names, so the
// relay's documented --shard-id and the older --shard_id are one flag.
func TestFlagSpellings(t *testing.T) {
	for _, spelling := range []string{"--shard-id", "--shard_id"} {
		root := NewRootCommand()
		relay, _, err := root.Find([]string{"serve", "relay"})
		if err != nil {
			t.Fatal(err)
		}
		if err := relay.ParseFlags([]string{spelling, "0b5f2a4e-1c9d-4e8a-9f1b-2d3c4e5f6a7b", "--infra_addr", "a:1"}); err != nil {
			t.Fatalf("%s: %v", spelling, err)
		}
		if got := relay.Flags().Lookup("shard-id").Value.String(); got != "0b5f2a4e-1c9d-4e8a-9f1b-2d3c4e5f6a7b" {
			t.Errorf("%s set shard-id to %q", spelling, got)
		}
		if got := relay.Flags().Lookup("infra-addr").Value.String(); got != "a:1" {
			t.Errorf("--infra_addr set infra-addr to %q", got)
		}
	}
}

// TestProxyDataPlaneFlags: the L4 and retry options of the data plane are
// flags with their documented defaults, spelled with "-" or "_".
func TestProxyDataPlaneFlags(t *testing.T) {
	defaults := map[string]string{"stream-idle-timeout": "1h0m0s", "udp-max-sessions": "16384", "retry-body-buffer-bytes": "65536"}
	proxyCmd := func(t *testing.T) *cobra.Command {
		t.Helper()
		c, _, err := NewRootCommand().Find([]string{"serve", "proxy"})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := proxyCmd(t)
	for name, want := range defaults {
		f := c.Flags().Lookup(name)
		if f == nil {
			t.Fatalf("serve proxy has no --%s", name)
		}
		if f.DefValue != want {
			t.Errorf("--%s defaults to %q, want %q", name, f.DefValue, want)
		}
	}
	for _, sep := range []string{"-", "_"} {
		c := proxyCmd(t)
		args := []string{"--stream" + sep + "idle" + sep + "timeout=5m", "--udp" + sep + "max" + sep + "sessions=7", "--retry" + sep + "body" + sep + "buffer" + sep + "bytes=1024"}
		if err := c.ParseFlags(args); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		for name, want := range map[string]string{"stream-idle-timeout": "5m0s", "udp-max-sessions": "7", "retry-body-buffer-bytes": "1024"} {
			if got := c.Flags().Lookup(name).Value.String(); got != want {
				t.Errorf("%v set --%s to %q, want %q", args, name, got, want)
			}
		}
	}
}

// TestTracingFlags: both the proxy and the controller take the tracing
// flags, off by default, sampling every trace once on.
func TestTracingFlags(t *testing.T) {
	for _, path := range [][]string{{"serve", "proxy"}, {"serve", "controller"}} {
		c, _, err := NewRootCommand().Find(path)
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]string{"tracing-otlp-endpoint": "", "tracing-otlp-insecure": "false", "tracing-sampling-ratio": "1"} {
			if f := c.Flags().Lookup(name); f == nil || f.DefValue != want {
				t.Errorf("%v --%s: %v, want default %q", path, name, f, want)
			}
		}
	}
}

func TestIngressProxyProtocolFlags(t *testing.T) {
	for _, tc := range []struct {
		on      bool
		sources []string
		want    []string
		err     string
	}{
		{},
		{on: true, sources: []string{"10.0.0.0/8", "192.0.2.1"}, want: []string{"10.0.0.0/8", "192.0.2.1"}},
		{on: true, err: "needs --ingress-proxy-trusted-sources"},
		{sources: []string{"10.0.0.0/8"}, err: "needs --ingress-accept-proxy-protocol"},
		{on: true, sources: []string{"not-an-ip"}, err: "is not a CIDR"},
	} {
		got, err := ingressProxyProtocol(controllerOptions{ingressProxyProtocol: tc.on, ingressTrustedSources: tc.sources})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: error %v, want one containing %q", tc, err, tc.err)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%+v: %v %v, want %v", tc, got, err, tc.want)
		}
	}
}

// TestProxyBinaryTakesTheSameCommandLine: coxswain-proxy's `serve proxy`
// has every flag of coxswain's, its own and those it inherits (the log
// flags), with the same defaults and the same "_" spelling: coxswain hands
// a proxy Pod's command line over to it unchanged (proxycmd.HandOff).
func TestProxyBinaryTakesTheSameCommandLine(t *testing.T) {
	flags := func(root *cobra.Command) (*cobra.Command, map[string]string) {
		t.Helper()
		c, _, err := root.Find([]string{"serve", "proxy"})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		add := func(f *pflag.Flag) { out[f.Name] = f.DefValue }
		c.NonInheritedFlags().VisitAll(add)
		c.InheritedFlags().VisitAll(add)
		return c, out
	}
	_, want := flags(NewRootCommand())
	c, got := flags(proxycmd.Root())
	if !maps.Equal(got, want) {
		for name, def := range want {
			if g, ok := got[name]; !ok || g != def {
				t.Errorf("coxswain-proxy serve proxy --%s: %q (present %v), coxswain's default is %q", name, g, ok, def)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("coxswain-proxy serve proxy has --%s, coxswain's has not", name)
			}
		}
	}
	for _, name := range []string{"shared", "snapshot-file", "zap-log-level"} {
		if _, ok := want[name]; !ok {
			t.Fatalf("coxswain's serve proxy has no --%s: %v", name, want)
		}
	}
	if err := c.ParseFlags([]string{"--stream_idle_timeout=5m", "--zap-log-level=debug"}); err != nil {
		t.Fatal(err)
	}
	if got := c.Flags().Lookup("stream-idle-timeout").Value.String(); got != "5m0s" {
		t.Errorf("--stream_idle_timeout set --stream-idle-timeout to %q", got)
	}
}
