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

package discovery

import "github.com/coxswain-go/coxswain/internal/snapshot"

// SetWireVersionForTest makes a server speak another wire version, to test
// how clients handle a mismatch.
func SetWireVersionForTest(s *Server, v uint32) { s.wireVersion = v }

// SetMaxSendForTest lowers the server→proxy message cap.
func SetMaxSendForTest(s *Server, n int) { s.maxSend = n }

// SetRichestLayoutForTest makes a server serve at most layout l, as a
// controller that predates richer layouts does.
func SetRichestLayoutForTest(s *Server, l snapshot.Layout) { s.richest = l }
