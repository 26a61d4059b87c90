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

// Package version reports the build's version, stamped by the Makefile.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Set with -ldflags "-X github.com/coxswain-go/coxswain/internal/version.Version=..."
// (the Makefile does). A binary built without them, by `go install
// module@version` or `go build` in a checkout, reports what the Go
// toolchain recorded instead.
var (
	Version = "dev"
	Commit  = "unknown"
)

// pkgPath is this package's import path, which the linker's -X flag names.
const pkgPath = "github.com/coxswain-go/coxswain/internal/version"

// LinkerFlags are the -ldflags arguments that stamp version and commit
// into a binary (`make release` builds with them; the Makefile's
// GO_LDFLAGS spells out the same two).
func LinkerFlags(version, commit string) []string {
	return []string{"-X", pkgPath + ".Version=" + version, "-X", pkgPath + ".Commit=" + commit}
}

func init() {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	Version, Commit = fromBuildInfo(Version, Commit, info)
}

// fromBuildInfo fills what -ldflags left at its default: the module
// version (set by `go install module@version`), and the VCS revision and
// modification flag (set by `go build` in a checkout).
func fromBuildInfo(version, commit string, info *debug.BuildInfo) (string, string) {
	if version == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		version = info.Main.Version
	}
	if commit == "unknown" {
		rev, dirty := "", false
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" {
			commit = rev
			if dirty {
				commit += "-dirty"
			}
		}
	}
	return version, commit
}

// String is the one-line version report printed by `coxswain version`.
func String() string {
	return fmt.Sprintf("coxswain %s (commit %s, %s, %s/%s)", Version, Commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
