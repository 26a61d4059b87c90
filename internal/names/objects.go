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

package names

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	maxLabelValueLength      = validation.LabelValueMaxLength
	maxDNSLabelLength        = validation.DNS1035LabelMaxLength
	vipNamePrefix            = "gw-"
	vipNameReadableMaxLength = 50
)

// DedicatedName is the name of every dedicated object of a Gateway (and of
// the ServiceAccount its proxies present): "{gateway}-{gatewayclass}".
func DedicatedName(gatewayName, className string) string {
	return gatewayName + "-" + className
}

// DedicatedServiceName is the name of a Gateway's dedicated Service. It is
// DedicatedName when that is a valid DNS-1035 label (Service names must be);
// otherwise a readable prefix plus a short hash of DedicatedName.
func DedicatedServiceName(gatewayName, className string) string {
	n := DedicatedName(gatewayName, className)
	if len(validation.IsDNS1035Label(n)) == 0 {
		return n
	}
	return hashedLabel("gw-", n, n)
}

// VIPServiceName is the deterministic name (a DNS-1035 label of at most 63
// characters) of the shared VIP Service of Gateway namespace/name.
func VIPServiceName(namespace, name string) string {
	return hashedLabel(vipNamePrefix, namespace+"-"+name, namespace+"/"+name)
}

// hashedLabel builds prefix + sanitized(readable) truncated so that the
// result with "-" and 8 hex characters of sha256(hashOf) is ≤ 63 characters.
func hashedLabel(prefix, readable, hashOf string) string {
	sum := sha256.Sum256([]byte(hashOf))
	h := hex.EncodeToString(sum[:])[:8]
	var b strings.Builder
	for _, r := range strings.ToLower(readable) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := b.String()
	maxReadable := maxDNSLabelLength - len(prefix) - 1 - len(h)
	if maxReadable > vipNameReadableMaxLength {
		maxReadable = vipNameReadableMaxLength
	}
	if len(s) > maxReadable {
		s = s[:maxReadable]
	}
	s = strings.Trim(s, "-")
	if prefix == "" && (s == "" || s[0] < 'a' || s[0] > 'z') {
		prefix = "x"
	}
	if s == "" {
		return prefix + h
	}
	return prefix + s + "-" + h
}
