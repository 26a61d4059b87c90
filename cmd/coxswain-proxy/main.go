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

// Command coxswain-proxy is Coxswain's data plane alone: `serve proxy`
// built without the controller's packages. The image holds it beside
// coxswain, whose `serve proxy` hands over to it.
package main

import (
	"os"

	"github.com/coxswain-go/coxswain/internal/cli"
	"github.com/coxswain-go/coxswain/internal/proxycmd"
)

func main() {
	os.Exit(cli.Execute(proxycmd.Root()))
}
