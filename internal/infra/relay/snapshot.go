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

package relay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/membership"
)

// SnapshotVersion is the version of the snapshot file format the relay
// writes. Version 2 added removedProjects; version 1 files still load.
const SnapshotVersion = 2

// Snapshot is the relay's snapshot file: the accepted trust of each project
// in membership, and the newest accepted signedAt of removed projects (so
// that a relay restart does not forget them, see membership.Removal). It
// holds no private key material: never sealedKey, wrappedDataKey or any
// next* field.
type Snapshot struct {
	Version         int                  `json:"version"`
	ShardID         string               `json:"shardID"`
	Projects        []SnapshotProject    `json:"projects"`
	RemovedProjects []membership.Removal `json:"removedProjects,omitempty"`
}

// SnapshotProject is one project's accepted trust.
type SnapshotProject struct {
	Name              string                        `json:"name"`
	APIServerEndpoint string                        `json:"apiServerEndpoint"`
	AgentCACerts      string                        `json:"agentCACertificates,omitempty"`
	RelayRoots        string                        `json:"relayRoots,omitempty"`
	TrustSignature    *infrav1alpha1.TrustSignature `json:"trustSignature,omitempty"`
}

// SnapshotOf builds a snapshot from the membership and its remembered
// removals.
func SnapshotOf(shardID string, members []membership.Member, removed []membership.Removal) Snapshot {
	s := Snapshot{Version: SnapshotVersion, ShardID: shardID, Projects: []SnapshotProject{}, RemovedProjects: removed}
	for _, m := range members {
		s.Projects = append(s.Projects, SnapshotProject{Name: m.Name, APIServerEndpoint: m.APIServerEndpoint,
			AgentCACerts: m.Certificates, RelayRoots: m.RelayRoots, TrustSignature: m.TrustSignature})
	}
	sort.Slice(s.Projects, func(i, j int) bool { return s.Projects[i].Name < s.Projects[j].Name })
	return s
}

// Members converts the snapshot back into a membership seed.
func (s Snapshot) Members() []membership.Member {
	out := make([]membership.Member, 0, len(s.Projects))
	for _, p := range s.Projects {
		out = append(out, membership.Member{Name: p.Name, ShardID: s.ShardID, APIServerEndpoint: p.APIServerEndpoint,
			Certificates: p.AgentCACerts, RelayRoots: p.RelayRoots, TrustSignature: p.TrustSignature})
	}
	return out
}

// WriteSnapshot writes s to path atomically: a temporary file in the same
// directory is written and fsynced, renamed over path, and the directory is
// fsynced, so a crash leaves either the old or the new file.
func WriteSnapshot(path string, s Snapshot) error {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing relay snapshot: %w", err)
	}
	tmpName := tmp.Name()
	defer func() {
		if tmpName != "" {
			_ = os.Remove(tmpName)
		}
	}()
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing relay snapshot: %w", err)
	}
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("writing relay snapshot: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("syncing relay snapshot: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing relay snapshot: %w", err)
	}
	if err := os.Rename(tmpName, path); err != nil {
		return fmt.Errorf("replacing relay snapshot: %w", err)
	}
	tmpName = ""
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing relay snapshot directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing relay snapshot directory: %w", err)
	}
	return nil
}

// LoadSnapshot reads path. A missing file is an empty snapshot (ok=false).
func LoadSnapshot(path string) (s Snapshot, ok bool, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Snapshot{}, false, nil
	}
	if err != nil {
		return Snapshot{}, false, fmt.Errorf("reading relay snapshot: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Snapshot{}, false, fmt.Errorf("parsing relay snapshot %s: %w", path, err)
	}
	if s.Version < 1 || s.Version > SnapshotVersion {
		return Snapshot{}, false, fmt.Errorf("relay snapshot %s has version %d, want 1 to %d", path, s.Version, SnapshotVersion)
	}
	return s, true, nil
}
