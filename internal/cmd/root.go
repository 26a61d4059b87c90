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
	"context"
	goflag "flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/coxswain-go/coxswain/internal/version"
)

// Execute runs the command line and returns the process exit code.
func Execute() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := NewRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

// NewRootCommand builds the `coxswain` command tree.
func NewRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "coxswain",
		Short:         "Coxswain: a Kubernetes Gateway API and Ingress controller",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Version,
	}
	root.SetVersionTemplate(version.String() + "\n")
	root.AddCommand(newServeCommand(), newVersionCommand(), newInfraCommand(), newUninstallCommand(), newTranslateCommand(), newDescribeCommand())
	// Flags are spelled with dashes (--shard-id); the underscore spelling
	// of older docs and scripts (--shard_id) means the same flag.
	root.SetGlobalNormalizationFunc(dashedFlagNames)
	return root
}

// dashedFlagNames makes "_" and "-" interchangeable in flag names.
func dashedFlagNames(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
}

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version.String())
		},
	}
}

func newServeCommand() *cobra.Command {
	zapOpts := zap.Options{}
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Run one Coxswain role",
		PersistentPreRun: func(*cobra.Command, []string) {
			ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
		},
	}
	logFlags := goflag.NewFlagSet("log", goflag.ContinueOnError)
	zapOpts.BindFlags(logFlags)
	serve.PersistentFlags().AddGoFlagSet(logFlags)
	serve.AddCommand(newControllerCommand(), newProxyCommand(), newInfraProberCommand(), newRelayCommand())
	return serve
}
