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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/translator"
)

// newTranslateCommand is `coxswain translate -f PATH`: the pure translator
// run offline over manifests, printing the snapshots and statuses the
// controller would produce, for users' CI pipelines. It exits 1 when an
// object would get a condition that says something is wrong.
func newTranslateCommand() *cobra.Command {
	var (
		files    []string
		output   string
		ns       string
		channel  string
		problems bool
	)
	c := &cobra.Command{
		Use:   "translate -f PATH [-f PATH...]",
		Short: "Translate manifests offline: print the routing snapshots and statuses the controller would produce",
		Long: `translate reads Gateway API, Ingress, Service, EndpointSlice, Secret and Coxswain
objects from YAML or JSON files (a directory is read recursively; "-" is standard
input), runs the controller's translator over them, without a cluster, and prints
what it would publish: the snapshot of each scope and the status of every object.
It exits with status 1 when an object would get Accepted, ResolvedRefs or
Programmed False (use --fail-on-problems=false to only print).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(files) == 0 {
				return errors.New("name at least one file or directory with -f")
			}
			data, err := readManifests(cmd.InOrStdin(), files)
			if err != nil {
				return err
			}
			res, err := translator.Decode(data, translator.DecodeOptions{InstallNamespace: ns})
			if err != nil {
				return err
			}
			res.GatewayAPIChannel = channel
			// A user's Deployments are not dedicated proxies.
			sel := labels.SelectorFromSet(names.DedicatedProxySelector())
			kept := res.DedicatedDeployments[:0]
			for _, d := range res.DedicatedDeployments {
				if sel.Matches(labels.Set(d.Labels)) {
					kept = append(kept, d)
				}
			}
			res.DedicatedDeployments = kept
			out := translator.Translate(res)
			var b []byte
			switch output {
			case "yaml":
				b, err = yaml.Marshal(out)
			case "json":
				b, err = json.MarshalIndent(out, "", "  ")
				b = append(b, '\n')
			default:
				return fmt.Errorf("--output %q: want yaml or json", output)
			}
			if err != nil {
				return err
			}
			if _, err := cmd.OutOrStdout().Write(b); err != nil {
				return err
			}
			if found := resultProblems(out); len(found) > 0 {
				for _, p := range found {
					_, _ = fmt.Fprintln(cmd.ErrOrStderr(), p)
				}
				if problems {
					return errProblems
				}
			}
			return nil
		},
	}
	f := c.Flags()
	f.StringArrayVarP(&files, "filename", "f", nil, `Manifest file or directory (recursive; "-" for standard input); repeatable.`)
	f.StringVarP(&output, "output", "o", "yaml", "Output format: yaml or json.")
	f.StringVar(&ns, "install-namespace", names.DefaultInstallNamespace, "Namespace the controller would run in (its shared pool and VIP Services).")
	f.StringVar(&channel, "gateway-api-channel", "experimental", "Gateway API release channel the cluster has installed (standard or experimental).")
	f.BoolVar(&problems, "fail-on-problems", true, "Exit with status 1 when an object would get a condition that says something is wrong.")
	c.SilenceUsage = true
	return c
}

// errProblems is translate's failure when it printed problems.
var errProblems = errors.New("some objects would not be served as written (see above)")

// readManifests concatenates the YAML documents of paths.
func readManifests(stdin io.Reader, paths []string) ([]byte, error) {
	var out bytes.Buffer
	add := func(b []byte) {
		out.Write(b)
		out.WriteString("\n---\n")
	}
	for _, p := range paths {
		if p == "-" {
			b, err := io.ReadAll(stdin)
			if err != nil {
				return nil, fmt.Errorf("reading standard input: %w", err)
			}
			add(b)
			continue
		}
		var found []string
		err := filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				return nil
			}
			switch strings.ToLower(filepath.Ext(path)) {
			case ".yaml", ".yml", ".json":
				found = append(found, path)
			default:
				if path == p { // a file named on the command line
					found = append(found, path)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		for _, f := range found {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			add(b)
		}
	}
	return out.Bytes(), nil
}

// resultProblems lists, one line each, the conditions of a result that
// say an object will not be served as written.
func resultProblems(r *translator.Result) []string {
	var out []string
	bad := func(kind, ns, name, where string, conds []metav1.Condition) {
		for _, c := range conds {
			if c.Status == metav1.ConditionFalse && (c.Type == "Accepted" || c.Type == "ResolvedRefs" || c.Type == "Programmed") {
				out = append(out, fmt.Sprintf("%s %s/%s%s: %s=False %s: %s", kind, ns, name, where, c.Type, c.Reason, c.Message))
			}
		}
	}
	for _, g := range r.Gateways {
		bad("Gateway", g.Namespace, g.Name, "", g.Status.Conditions)
		for _, l := range g.Status.Listeners {
			bad("Gateway", g.Namespace, g.Name, " listener "+string(l.Name), l.Conditions)
		}
	}
	for kind, routes := range map[string][]translator.RouteStatus{"HTTPRoute": r.HTTPRoutes, "GRPCRoute": r.GRPCRoutes, "TLSRoute": r.TLSRoutes, "TCPRoute": r.TCPRoutes, "UDPRoute": r.UDPRoutes} {
		for _, rt := range routes {
			for _, p := range rt.Parents {
				bad(kind, rt.Namespace, rt.Name, " parent "+string(p.ParentRef.Name), p.Conditions)
			}
		}
	}
	for _, p := range r.Policies {
		for _, a := range p.Status.Ancestors {
			bad(p.Kind, p.Namespace, p.Name, " ancestor "+string(a.AncestorRef.Name), a.Conditions)
		}
	}
	for _, e := range r.Events {
		if e.Type == "Warning" {
			out = append(out, fmt.Sprintf("%s %s/%s: %s: %s", e.Kind, e.Namespace, e.Name, e.Reason, e.Message))
		}
	}
	sort.Strings(out)
	return out
}
