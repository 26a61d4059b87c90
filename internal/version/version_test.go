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

package version

import (
	"reflect"
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	installed := &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}}
	checkout := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	for _, tt := range []struct {
		name                    string
		version, commit         string
		info                    *debug.BuildInfo
		wantVersion, wantCommit string
	}{
		{"go install module@version", "dev", "unknown", installed, "v0.2.0", "unknown"},
		{"go build in a dirty checkout", "dev", "unknown", checkout, "dev", "0123456789ab-dirty"},
		{"make build stamps both", "v0.1.0", "abc1234", checkout, "v0.1.0", "abc1234"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v, c := fromBuildInfo(tt.version, tt.commit, tt.info)
			if v != tt.wantVersion || c != tt.wantCommit {
				t.Errorf("got %s %s, want %s %s", v, c, tt.wantVersion, tt.wantCommit)
			}
		})
	}
}

type marker struct{}

// TestLinkerFlagsNameThisPackage: -X with a wrong path links silently and
// stamps nothing, so the path LinkerFlags names must be this package's.
func TestLinkerFlagsNameThisPackage(t *testing.T) {
	if got := reflect.TypeFor[marker]().PkgPath(); got != pkgPath {
		t.Fatalf("pkgPath is %q, the package is %q", pkgPath, got)
	}
	want := []string{"-X", pkgPath + ".Version=1.2.3", "-X", pkgPath + ".Commit=abc"}
	if got := LinkerFlags("1.2.3", "abc"); !reflect.DeepEqual(got, want) {
		t.Fatalf("LinkerFlags = %q, want %q", got, want)
	}
}
