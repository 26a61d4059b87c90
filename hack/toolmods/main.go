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

// Command toolmods keeps the modules that build the test tools (the
// envtest control plane in hack/envtest, OLM in hack/olm, helm in
// hack/helm, the conformance suite, the local cluster's echo-basic and
// CoreDNS) at the root module's versions of every module they share with
// it. The Go build cache shares a compiled package only when the
// package and everything it imports are the same source; a tool built
// against client-go, grpc or protobuf one version apart compiles all of
// them a second time, which on a cold two-core machine costs minutes.
//
// Without -write it lists what lags and fails (`make verify`); with
// -write it raises what lags (go get, then go mod tidy) and then checks
// again (`make tool-modules`). A module a replace directive pins must be
// raised by hand; toolmods names it. A tool module that needs a newer
// version than the root module is left alone: it only compiles that
// module twice.
//
//	go run ./hack/toolmods hack/envtest hack/olm hack/helm    # make verify
//	go run ./hack/toolmods -write hack/envtest hack/olm ...  # make tool-modules
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

	"golang.org/x/mod/semver"
)

// lag is a module a tool module builds at an older version than the root.
type lag struct {
	Path     string
	Have     string // the tool module's version
	Want     string // the root module's version
	Replaced bool   // a replace directive pins Have
}

func (l lag) String() string {
	s := fmt.Sprintf("%s %s < %s", l.Path, l.Have, l.Want)
	if l.Replaced {
		s += " (pinned by a replace directive: raise it by hand)"
	}
	return s
}

// versions maps each module whose packages a build compiles to the version
// they come from.
type versions map[string]string

// replaced lists the modules of a build that a replace directive pins.
type replaced map[string]bool

// lagging lists, by path, the modules tool compiles packages of that root
// compiles at a newer version. Modules root does not compile, and modules
// replaced by a local directory (no version), are not compared.
func lagging(root, tool versions, pinned replaced) []lag {
	var out []lag
	for path, have := range tool {
		want, ok := root[path]
		if !ok || have == "" || want == "" {
			continue
		}
		if semver.Compare(have, want) < 0 {
			out = append(out, lag{Path: path, Have: have, Want: want, Replaced: pinned[path]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// listFormat prints, for each package a build compiles, its module:
// path|version|replacement version|r (the last two for a replaced module).
const listFormat = `{{with .Module}}{{if not .Main}}{{.Path}}|{{.Version}}|{{with .Replace}}{{.Version}}|r{{end}}{{end}}{{end}}`

// decode reads the output of go list -deps -f listFormat: the modules whose
// packages a build compiles, each at the version its packages come from
// (a replacement's version where one is set; "" for a local directory).
func decode(out string) (versions, replaced, error) {
	vs, pinned := versions{}, replaced{}
	for _, line := range strings.Split(out, "\n") {
		if line == "" {
			continue // a standard-library or main-module package
		}
		f := strings.Split(line, "|")
		if len(f) != 3 && len(f) != 4 {
			return nil, nil, fmt.Errorf("unexpected go list line %q", line)
		}
		path, version := f[0], f[1]
		if len(f) == 4 {
			version = f[2]
			pinned[path] = true
		}
		vs[path] = version
	}
	return vs, pinned, nil
}

// goCmd runs the go command in dir, with the workspace off (each module
// is built on its own).
func goCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	cmd.Stderr = os.Stderr
	return cmd
}

// buildList lists the modules of the packages go list -deps finds for
// args in dir.
func buildList(dir string, args ...string) (versions, replaced, error) {
	out, err := goCmd(dir, append([]string{"list", "-deps", "-f", listFormat}, args...)...).Output()
	if err != nil {
		return nil, nil, fmt.Errorf("go list -deps in %s: %w", dir, err)
	}
	return decode(string(out))
}

// toolPackages lists what a tool module builds: its commands, and what its
// other packages and their tests import (a tools.go with build tag tools
// imports the commands it pins).
func toolPackages(dir string) ([]string, error) {
	const format = `{{if eq .Name "main"}}{{.ImportPath}}{{else}}{{join .Imports "\n"}}
{{join .TestImports "\n"}}
{{join .XTestImports "\n"}}{{end}}`
	out, err := goCmd(dir, "list", "-e", "-tags", "tools", "-f", format, "./...").Output()
	if err != nil {
		return nil, fmt.Errorf("go list in %s: %w", dir, err)
	}
	return strings.Fields(string(out)), nil
}

// toolBuildList is buildList for what a tool module builds.
func toolBuildList(dir string) (versions, replaced, error) {
	pkgs, err := toolPackages(dir)
	if err != nil {
		return nil, nil, err
	}
	return buildList(dir, pkgs...)
}

// raise brings the lagging modules that no replace directive pins up to
// the root's versions, then tidies the module. It reports false, and does
// nothing, when a replace directive pins every one of them.
func raise(dir string, lags []lag) (bool, error) {
	args := []string{"get"}
	for _, l := range lags {
		if !l.Replaced {
			args = append(args, l.Path+"@"+l.Want)
		}
	}
	if len(args) == 1 {
		return false, nil
	}
	if err := goCmd(dir, args...).Run(); err != nil {
		return false, fmt.Errorf("go get in %s: %w", dir, err)
	}
	if err := goCmd(dir, "mod", "tidy").Run(); err != nil {
		return false, fmt.Errorf("go mod tidy in %s: %w", dir, err)
	}
	return true, nil
}

func main() {
	write := flag.Bool("write", false, "raise what lags (go get, go mod tidy), then check")
	flag.Usage = func() {
		fmt.Fprintln(flag.CommandLine.Output(), "usage: toolmods [-write] DIR...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*write, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(write bool, dirs []string) error {
	// What the root module compiles: every package and its tests.
	root, _, err := buildList(".", "-test", "./...")
	if err != nil {
		return err
	}
	var failed []string
	for _, dir := range dirs {
		tool, pinned, err := toolBuildList(dir)
		if err != nil {
			return err
		}
		lags := lagging(root, tool, pinned)
		// A raise can bring in what lags anew (a module raised to the
		// root's version may pull another one in at an older version),
		// so raise again, up to five times, while there is something a
		// raise can move.
		for round := 0; write && len(lags) > 0 && round < 5; round++ {
			raised, err := raise(dir, lags)
			if err != nil {
				return err
			}
			if !raised {
				break
			}
			if tool, pinned, err = toolBuildList(dir); err != nil {
				return err
			}
			lags = lagging(root, tool, pinned)
		}
		if len(lags) == 0 {
			continue
		}
		lines := make([]string, len(lags))
		for i, l := range lags {
			lines[i] = "  " + l.String()
		}
		failed = append(failed, fmt.Sprintf("%s builds %d modules older than the root module does:\n%s",
			dir, len(lags), strings.Join(lines, "\n")))
	}
	if len(failed) > 0 {
		return fmt.Errorf("%s\nthe tools then compile those modules a second time; run 'make tool-modules'",
			strings.Join(failed, "\n"))
	}
	return nil
}
