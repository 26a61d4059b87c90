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
	"fmt"
	"os"
	"strings"

	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	apierrors "github.com/operator-framework/api/pkg/validation/errors"
	interfaces "github.com/operator-framework/api/pkg/validation/interfaces"
)

// BundleValidators are what a Coxswain bundle must pass with neither errors
// nor warnings: operator-framework's default bundle validators (CSV, CRD,
// bundle), the OperatorHub ones (the CSV fields the catalogue shows, its
// capability levels and categories), its good practices, and Coxswain's own
// (PolicyValidator).
var BundleValidators = append(append(interfaces.Validators{}, validation.DefaultBundleValidators...),
	validation.OperatorHubV2Validator,
	validation.StandardCapabilitiesValidator,
	validation.StandardCategoriesValidator,
	validation.GoodPracticesValidator,
	PolicyValidator,
)

// Findings are what BundleValidators reported, by level.
type Findings struct {
	Errors   []apierrors.Error
	Warnings []apierrors.Error
}

// Empty reports whether nothing was found.
func (f Findings) Empty() bool { return len(f.Errors)+len(f.Warnings) == 0 }

// String lists the findings, errors first, one a line.
func (f Findings) String() string {
	var lines []string
	for _, e := range append(append([]apierrors.Error{}, f.Errors...), f.Warnings...) {
		lines = append(lines, e.Error())
	}
	return strings.Join(lines, "\n")
}

// ValidateBundleDir loads a bundle directory with operator-framework's
// loader (as `operator-sdk bundle validate` does) and runs BundleValidators
// on it. A bundle the loader cannot read is an error.
func ValidateBundleDir(dir string) (Findings, error) {
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return Findings{}, fmt.Errorf("loading bundle %s: %w", dir, err)
	}
	var f Findings
	for _, r := range BundleValidators.Validate(b.ObjectsToValidate()...) {
		f.Errors = append(f.Errors, r.Errors...)
		f.Warnings = append(f.Warnings, r.Warnings...)
	}
	return f, nil
}

// ValidateBundle validates a bundle in memory the way its checked-in copy is
// validated: its files are written to a temporary directory, which
// ValidateBundleDir loads.
func ValidateBundle(b *Bundle) (Findings, error) {
	files, err := b.Files()
	if err != nil {
		return Findings{}, err
	}
	dir, err := os.MkdirTemp("", "coxswain-bundle-")
	if err != nil {
		return Findings{}, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	if err := WriteTree(dir, files, nil); err != nil {
		return Findings{}, err
	}
	return ValidateBundleDir(dir)
}
