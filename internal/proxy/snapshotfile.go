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

package proxy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// LoadSnapshotFile reads and decodes a snapshot file (JSON or YAML).
func LoadSnapshotFile(path string) (*snapshot.Snapshot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := snapshot.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// WatchSnapshotFile applies the snapshot in path, then polls it every
// interval (modification time and size first, content hash to confirm) and
// applies each new content until ctx ends. A file that fails to read,
// decode or apply is logged and the last good snapshot stays in force. It
// returns the first load's error only if ctx ends before any success.
func WatchSnapshotFile(ctx context.Context, path string, interval time.Duration, apply func(*snapshot.Snapshot) error, log *slog.Logger) error {
	if interval <= 0 {
		interval = time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var (
		lastMod  time.Time
		lastSize int64 = -1
		lastSum  [32]byte
		applied  bool
		lastErr  error
		polls    int
	)
	check := func() {
		fi, err := os.Stat(path)
		if err != nil {
			if lastErr == nil || lastErr.Error() != err.Error() {
				log.Error("snapshot file unreadable; keeping the last good snapshot", "path", path, "error", err)
			}
			lastErr = err
			return
		}
		polls++
		// Modification time and size skip the read almost always; every
		// tenth poll hashes anyway, for filesystems with coarse timestamps.
		if fi.ModTime().Equal(lastMod) && fi.Size() == lastSize && polls%10 != 0 {
			return
		}
		data, err := os.ReadFile(path)
		if err != nil {
			lastErr = err
			log.Error("snapshot file unreadable; keeping the last good snapshot", "path", path, "error", err)
			return
		}
		lastMod, lastSize = fi.ModTime(), fi.Size()
		sum := sha256.Sum256(data)
		if applied && bytes.Equal(sum[:], lastSum[:]) {
			return
		}
		lastSum = sum
		s, err := snapshot.Decode(data)
		if err == nil {
			err = apply(s)
		}
		if err != nil {
			lastErr = err
			log.Error("snapshot file rejected; keeping the last good snapshot", "path", path, "error", err)
			return
		}
		applied, lastErr = true, nil
		log.Info("snapshot file applied", "path", path)
	}
	check()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if !applied && lastErr != nil {
				return lastErr
			}
			return nil
		case <-t.C:
			check()
		}
	}
}
