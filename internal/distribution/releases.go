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

package distribution

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/blang/semver/v4"
)

// ReleasesFile is the checked-in record of every release, relative to the
// repository root. Tags do not always reach a clone (CI clones shallowly),
// so what a release needs to know about the previous one is read here.
const ReleasesFile = "hack/release/releases.txt"

// Release is one line of ReleasesFile: "v<semver> <commit>".
type Release struct {
	Version semver.Version
	Commit  string
}

// Tag is the release's git tag and image tag, v<semver>.
func (r Release) Tag() string { return "v" + r.Version.String() }

var fullCommit = regexp.MustCompile(`^[0-9a-f]{40}$`)

// ParseReleases reads ReleasesFile's content: one release a line, oldest
// first, each strictly newer than the one before; blank lines and lines
// starting with # are skipped.
func ParseReleases(data []byte) ([]Release, error) {
	var out []Release
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		r, err := parseReleaseLine(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if len(out) > 0 && !out[len(out)-1].Version.LT(r.Version) {
			return nil, fmt.Errorf("line %d: %s is not newer than %s above it; releases are listed oldest first", n, r.Tag(), out[len(out)-1].Tag())
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func parseReleaseLine(line string) (Release, error) {
	fields := strings.Fields(line)
	if len(fields) != 2 {
		return Release{}, fmt.Errorf("%q: want \"v<semver> <commit>\"", line)
	}
	if !strings.HasPrefix(fields[0], "v") {
		return Release{}, fmt.Errorf("%q: the tag must start with v", fields[0])
	}
	v, err := ParseReleaseVersion(strings.TrimPrefix(fields[0], "v"))
	if err != nil {
		return Release{}, err
	}
	if !fullCommit.MatchString(fields[1]) {
		return Release{}, fmt.Errorf("%q: want the full 40-character commit hash", fields[1])
	}
	return Release{Version: v, Commit: fields[1]}, nil
}

// ReadReleases reads and parses the ReleasesFile under root.
func ReadReleases(root string) ([]Release, error) {
	data, err := os.ReadFile(filepath.Join(root, ReleasesFile))
	if err != nil {
		return nil, fmt.Errorf("reading the release record: %w", err)
	}
	rs, err := ParseReleases(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ReleasesFile, err)
	}
	return rs, nil
}

// ParseReleaseVersion parses a release version given as semver without a
// leading v (0.2.0, 1.0.0-rc.1). Build metadata (+...) is refused: image
// tags cannot carry a +.
func ParseReleaseVersion(s string) (semver.Version, error) {
	switch {
	case s == "":
		return semver.Version{}, fmt.Errorf("no version given: want semver without a leading v, e.g. 0.2.0")
	case strings.HasPrefix(s, "v"):
		return semver.Version{}, fmt.Errorf("version %q: give it without the leading v (%s)", s, strings.TrimPrefix(s, "v"))
	}
	v, err := semver.Parse(s)
	if err != nil {
		return semver.Version{}, fmt.Errorf("version %q is not semver (x.y.z): %w", s, err)
	}
	if len(v.Build) > 0 {
		return semver.Version{}, fmt.Errorf("version %q: build metadata (+...) cannot be part of an image tag", s)
	}
	return v, nil
}

// NextRelease checks that version may be released after the recorded
// releases: it parses and is newer than the last one. It returns the
// parsed version and the release it follows (nil when none is recorded).
func NextRelease(releases []Release, version string) (semver.Version, *Release, error) {
	v, err := ParseReleaseVersion(version)
	if err != nil {
		return v, nil, err
	}
	if len(releases) == 0 {
		return v, nil, nil
	}
	last := releases[len(releases)-1]
	if !last.Version.LT(v) {
		return v, nil, fmt.Errorf("version %s is not newer than the last release %s (%s)", v, last.Tag(), ReleasesFile)
	}
	return v, &last, nil
}
