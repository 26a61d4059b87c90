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
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sort"
)

// WriteTree writes files (relative path → content) under dir, replacing
// exactly the set of files in the subdirectories it owns: every existing
// file under one of owned (relative to dir) that is not in files is removed.
func WriteTree(dir string, files map[string][]byte, owned []string) error {
	onDisk, err := ownedFiles(dir, owned)
	if err != nil {
		return err
	}
	for _, rel := range onDisk {
		if _, keep := files[rel]; !keep {
			if err := os.Remove(filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
				return err
			}
		}
	}
	for rel, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { //nolint:gosec // G301: a directory of the repository, world-readable like every other
			return err
		}
		if err := os.WriteFile(path, data, 0o644); err != nil { //nolint:gosec // G306: a file of the repository, world-readable like every other
			return err
		}
	}
	return nil
}

// DiffTree compares files with what is on disk under dir and lists every
// difference: files missing, different, or present on disk (under one of
// owned) but not generated. An empty result means dir is up to date.
func DiffTree(dir string, files map[string][]byte, owned []string) ([]string, error) {
	var diffs []string
	for rel, want := range files {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		switch {
		case errors.Is(err, os.ErrNotExist):
			diffs = append(diffs, "missing: "+rel)
		case err != nil:
			return nil, err
		case !bytes.Equal(got, want):
			diffs = append(diffs, "stale: "+rel)
		}
	}
	onDisk, err := ownedFiles(dir, owned)
	if err != nil {
		return nil, err
	}
	for _, rel := range onDisk {
		if _, ok := files[rel]; !ok {
			diffs = append(diffs, "not generated: "+rel)
		}
	}
	sort.Strings(diffs)
	return diffs, nil
}

// ownedFiles lists the files on disk under the owned subdirectories of dir,
// as slash-separated paths relative to dir. A missing subdirectory holds
// none.
func ownedFiles(dir string, owned []string) ([]string, error) {
	var out []string
	for _, sub := range owned {
		err := filepath.WalkDir(filepath.Join(dir, sub), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, os.ErrNotExist) {
					return nil
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}
