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

package status

import (
	"fmt"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Programmed conditions the status writer derives from the data plane.
// Each message states what the data plane reported, with its counts.

// ProgrammedAcked is Programmed=True once every connected proxy of scope
// (ready of proxies) bound the Gateway's ports and acked generation.
func ProgrammedAcked(scope string, ready, proxies int, generation int64) metav1.Condition {
	return Programmed(true, ReasonProgrammed,
		fmt.Sprintf("%d of %d %s of scope %s bound this Gateway's ports and acked its generation %d",
			ready, proxies, plural(proxies, "proxy", "proxies"), scope, generation), generation)
}

// ProgrammedPending is Programmed=False/Pending while the data plane has
// not confirmed generation: published says whether a snapshot of scope
// holds the Gateway yet, and ready of proxies are done.
func ProgrammedPending(scope string, published bool, ready, proxies int, generation int64) metav1.Condition {
	var msg string
	switch {
	case !published:
		msg = fmt.Sprintf("Waiting for the data plane: no published snapshot of scope %s holds this Gateway yet", scope)
	case proxies == 0:
		msg = fmt.Sprintf("Waiting for the data plane: no proxy of scope %s is connected", scope)
	default:
		msg = fmt.Sprintf("Waiting for %d of %d %s of scope %s to bind this Gateway's ports and ack its generation %d",
			proxies-ready, proxies, plural(proxies, "proxy", "proxies"), scope, generation)
	}
	return Programmed(false, ReasonPending, msg, generation)
}

// ProgrammedRejected is Programmed=False/SnapshotRejected: rejected of
// proxies of scope refused the snapshot holding generation; node is the
// first of them and detail its reason.
func ProgrammedRejected(scope string, rejected, proxies int, generation int64, node, detail string) metav1.Condition {
	return Programmed(false, ReasonSnapshotRejected,
		fmt.Sprintf("%d of %d %s of scope %s rejected the snapshot holding generation %d; proxy %s said: %s",
			rejected, proxies, plural(proxies, "proxy", "proxies"), scope, generation, node, TruncateDetail(detail)), generation)
}

// SnapshotRejectedMessage is the message of a SnapshotRejected Event.
func SnapshotRejectedMessage(scope, node, version string, generation int64, detail string) string {
	return fmt.Sprintf("proxy %s of scope %s rejected snapshot %s holding generation %d: %s",
		node, scope, version, generation, TruncateDetail(detail))
}

// MaxDetail bounds a proxy's reason in conditions and Events: the proxy
// may send up to 16 KiB, which would swamp a condition.
const MaxDetail = 512

// TruncateDetail cuts detail to at most MaxDetail bytes on a rune
// boundary, marking the cut.
func TruncateDetail(detail string) string {
	if len(detail) <= MaxDetail {
		return detail
	}
	cut := MaxDetail
	for cut > 0 && !utf8.RuneStart(detail[cut]) {
		cut--
	}
	return detail[:cut] + "… (truncated)"
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
