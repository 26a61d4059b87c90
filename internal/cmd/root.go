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

// Package cmd holds the cobra command tree of the coxswain binary and the
// wiring of each role. cmd/coxswain/main.go only calls Execute.
package cmd

import (
	"github.com/spf13/cobra"
	crlog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/coxswain-go/coxswain/internal/cli"
	"github.com/coxswain-go/coxswain/internal/proxycmd"
)

// Execute runs the command line and returns the process exit code.
func Execute() int {
	return cli.Execute(NewRootCommand())
}

// NewRootCommand builds the `coxswain` command tree.
func NewRootCommand() *cobra.Command {
	return cli.Root("coxswain", "Coxswain: a Kubernetes Gateway API and Ingress controller",
		cli.Serve(newControllerCommand(), proxyCommand(), newInfraProberCommand(), newRelayCommand()),
		newInfraCommand(), newUninstallCommand(), newTranslateCommand(), newDescribeCommand())
}

// proxyCommand is `serve proxy`, handed over to the data-plane binary
// beside this one when there is one (proxycmd.HandOff).
func proxyCommand() *cobra.Command {
	c := proxycmd.Command()
	run := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		proxycmd.HandOff(cmd.Context(), crlog.Log.WithName("proxy"))
		return run(cmd, args)
	}
	return c
}
