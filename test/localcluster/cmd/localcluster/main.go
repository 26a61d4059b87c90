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

// Command localcluster runs the container-free local cluster:
//
//	localcluster up    # start; runs until Ctrl-C (or SIGTERM), then stops cleanly
//	localcluster down  # remove what a crashed run left behind
//
// It needs root and iproute2. See docs/localcluster.md.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/coxswain-go/coxswain/test/localcluster"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "localcluster:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "localcluster",
		Short:         "A Kubernetes cluster without containers, for development and end-to-end tests",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newUpCommand(), newDownCommand(), newDevCommand())
	return root
}

func newUpCommand() *cobra.Command {
	var (
		cfg           localcluster.Config
		kubeconfigOut string
		readyFile     string
		startTimeout  time.Duration
		runFor        time.Duration
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start the cluster and run it until interrupted",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.StartTimeout = startTimeout
			for _, p := range []*string{&cfg.Binaries.EchoBasic, &cfg.Binaries.Coxswain, &cfg.Binaries.CoreDNS} {
				if *p != "" {
					abs, err := filepath.Abs(*p)
					if err != nil {
						return err
					}
					if _, err := os.Stat(abs); err != nil {
						return fmt.Errorf("binary %s: %w", abs, err)
					}
					*p = abs
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			c, err := localcluster.Start(ctx, cfg)
			if err != nil {
				return err
			}
			defer func() {
				fmt.Fprintln(os.Stderr, "localcluster: stopping")
				if err := c.Stop(); err != nil {
					fmt.Fprintln(os.Stderr, "localcluster: stop:", err)
				}
			}()
			if kubeconfigOut != "" {
				b, err := os.ReadFile(c.Kubeconfig)
				if err == nil {
					err = os.WriteFile(kubeconfigOut, b, 0o600)
				}
				if err != nil {
					return fmt.Errorf("writing %s: %w", kubeconfigOut, err)
				}
			}
			fmt.Printf("local cluster ready\n  export KUBECONFIG=%s\n  apiserver %s, node IP %s, logs in %s\n  Ctrl-C stops it\n",
				c.Kubeconfig, c.APIServer, c.NodeIP, c.LogDir())
			if readyFile != "" {
				if err := os.WriteFile(readyFile, []byte(c.Kubeconfig+"\n"), 0o644); err != nil {
					return err
				}
				defer func() { _ = os.Remove(readyFile) }()
			}
			if runFor > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(runFor):
				}
				return nil
			}
			<-ctx.Done()
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.AssetsDir, "assets", "", "directory with etcd, kube-apiserver and kube-controller-manager (default $KUBEBUILDER_ASSETS or the envtest asset directory)")
	f.StringVar(&cfg.Dir, "dir", "", "work directory, wiped at start (default "+filepath.Join(localcluster.StateDir(), "run")+")")
	f.StringVar(&cfg.Binaries.EchoBasic, "echo-basic", os.Getenv("LOCALCLUSTER_ECHO_BASIC"), "echo-basic binary for echo-basic images (env LOCALCLUSTER_ECHO_BASIC)")
	f.StringVar(&cfg.Binaries.Coxswain, "coxswain", os.Getenv("LOCALCLUSTER_COXSWAIN"), "coxswain binary for coxswain images (env LOCALCLUSTER_COXSWAIN)")
	f.StringVar(&cfg.Binaries.CoreDNS, "coredns", os.Getenv("LOCALCLUSTER_COREDNS"), "CoreDNS binary for coredns images, e.g. the conformance suite's UDP backend (env LOCALCLUSTER_COREDNS; make coredns builds bin/coredns)")
	f.StringVar(&kubeconfigOut, "kubeconfig-out", "", "also write the admin kubeconfig here")
	f.StringVar(&readyFile, "ready-file", "", "write the kubeconfig path to this file once ready (removed at stop)")
	f.DurationVar(&startTimeout, "start-timeout", 2*time.Minute, "bound on startup")
	f.DurationVar(&runFor, "run-for", 0, "stop after this long (0: until interrupted)")
	f.DurationVar(&cfg.LockWait, "lock-wait", 0, "wait this long for another local cluster on this machine to stop (0: fail at once)")
	return cmd
}

func newDownCommand() *cobra.Command {
	var bridge string
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Remove what a crashed run left behind (recorded processes, pod namespaces, the bridge)",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if err := localcluster.Down(bridge); err != nil {
				return err
			}
			fmt.Println("local cluster leftovers removed")
			return nil
		},
	}
	cmd.Flags().StringVar(&bridge, "bridge", "cxbr0", "pod bridge name")
	return cmd
}
