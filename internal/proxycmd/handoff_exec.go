//go:build linux || darwin

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

package proxycmd

import (
	"context"
	"os"
	"path/filepath"
	"syscall"

	"github.com/go-logr/logr"

	"github.com/coxswain-go/coxswain/internal/names"
)

// HandOff replaces this process with the proxy binary beside its own
// executable (names.ProxyBinaryName), run with the same arguments, when
// there is one: coxswain's image holds both, and a proxy Pod that runs
// `/coxswain serve proxy` then runs the data plane without the
// controller's packages (half the binary, a fraction of the start-up
// work, about 20 MiB less resident). It returns only when there is no
// such binary, the exec failed (logged), or ctx is already done (a
// SIGTERM this process caught would not reach the new image): the caller
// then runs the proxy itself.
func HandOff(ctx context.Context, log logr.Logger) {
	if ctx.Err() != nil {
		return
	}
	self, err := os.Executable()
	if err != nil {
		return
	}
	path := filepath.Join(filepath.Dir(self), names.ProxyBinaryName)
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 || path == self {
		return
	}
	log.Info("handing over to the data-plane binary", "path", path)
	err = syscall.Exec(path, append([]string{path}, os.Args[1:]...), os.Environ()) //nolint:gosec // G204: our own binary, beside this one, with our own arguments
	log.Error(err, "the data-plane binary did not start; running the proxy in this one", "path", path)
}
