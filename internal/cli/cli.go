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

// Package cli is the command-line skeleton both binaries share, coxswain
// (every role) and coxswain-proxy (the data plane alone): the root with
// its version and flag spelling, the serve command with its log flags,
// and the run with its signals.
package cli

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
	crlog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/coxswain-go/coxswain/internal/version"
)

// Execute runs root until SIGINT or SIGTERM and returns the process exit
// code.
func Execute(root *cobra.Command) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return 0
}

// Root is the root command named use, with subs and a version command.
// Flags are spelled with dashes (--shard-id); the underscore spelling of
// older docs and scripts (--shard_id) means the same flag.
func Root(use, short string, subs ...*cobra.Command) *cobra.Command {
	root := &cobra.Command{
		Use:           use,
		Short:         short,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version.Version,
	}
	root.SetVersionTemplate(version.String() + "\n")
	root.AddCommand(append([]*cobra.Command{versionCommand()}, subs...)...)
	root.SetGlobalNormalizationFunc(dashedFlagNames)
	return root
}

// dashedFlagNames makes "_" and "-" interchangeable in flag names.
func dashedFlagNames(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this binary",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), version.String())
		},
	}
}

// Serve is the serve command, the parent of every long-running role
// (roles): it takes the log flags (zap's) and sets the logger every role
// logs through.
func Serve(roles ...*cobra.Command) *cobra.Command {
	zapOpts := zap.Options{}
	serve := &cobra.Command{
		Use:   "serve",
		Short: "Run one Coxswain role",
		PersistentPreRun: func(*cobra.Command, []string) {
			crlog.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
		},
	}
	logFlags := goflag.NewFlagSet("log", goflag.ContinueOnError)
	zapOpts.BindFlags(logFlags)
	serve.PersistentFlags().AddGoFlagSet(logFlags)
	serve.AddCommand(roles...)
	return serve
}
