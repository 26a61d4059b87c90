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

// Command coredns is CoreDNS with the plugins the Gateway API conformance
// suite's coredns backend uses (its Corefile: forward, log, errors,
// whoami), the binary behind coredns images on the local cluster
// (docs/localcluster.md). It is built the way CoreDNS documents builds
// with a custom plugin set: coremain with dnsserver.Directives set to the
// chosen plugins, each imported for its registration. It is a module of
// its own so CoreDNS's dependencies stay out of the main module.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/whoami"
)

// directives are the enabled plugins in CoreDNS's execution order (the
// order of its plugin.cfg).
var directives = []string{
	"errors",
	"log",
	"forward",
	"whoami",
}

func init() {
	dnsserver.Directives = directives
}

func main() {
	coremain.Run()
}
