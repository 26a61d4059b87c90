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

package cmd

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/coxswain-go/coxswain/internal/names"
	"github.com/coxswain-go/coxswain/internal/uninstall"
)

// newUninstallCommand is `coxswain uninstall`: after the controller was
// removed by its install path, delete what it created at run time
// (internal/uninstall, docs/upgrade.md).
func newUninstallCommand() *cobra.Command {
	var kubeconfig string
	o := uninstall.Options{}
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Delete what the controller created (proxies, VIP Services, discovery CA, Lease); run after removing the controller by its install path",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := restConfig(kubeconfig)
			if err != nil {
				return fmt.Errorf("loading kubeconfig: %w", err)
			}
			scheme := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(scheme); err != nil {
				return err
			}
			c, err := client.New(cfg, client.Options{Scheme: scheme})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			o.Logf = func(format string, args ...any) { _, _ = fmt.Fprintf(out, format+"\n", args...) }
			rep, err := uninstall.Run(cmd.Context(), c, o)
			if err != nil {
				return err
			}
			_, _ = fmt.Fprintf(out, "removed %d objects Coxswain created\n", len(rep.Deleted))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Default: $KUBECONFIG, the in-cluster config, then ~/.kube/config.")
	f.StringVar(&o.Namespace, "namespace", names.DefaultInstallNamespace, "Namespace the controller was installed in.")
	f.DurationVar(&o.Timeout, "timeout", 3*time.Minute, "How long to wait for the controller to stop and every deleted object and pod to be gone.")
	return cmd
}
