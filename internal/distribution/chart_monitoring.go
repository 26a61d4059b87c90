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

package distribution

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// The monitoring bundle (alerting rules and Grafana dashboards) lives in
// config/monitoring, its one source; the chart gets a copy under
// files/monitoring, which templates/monitoring.yaml wraps into a
// PrometheusRule and dashboard ConfigMaps (docs/monitoring.md).
const (
	monitoringInput = "config/monitoring"
	// ChartMonitoringDir is the chart's copy of config/monitoring.
	ChartMonitoringDir = ChartFilesDir + "/monitoring"
)

// MonitoringChartFiles copies every file under config/monitoring into
// files/monitoring, byte for byte.
func MonitoringChartFiles(root string) (map[string][]byte, error) {
	src := filepath.Join(root, monitoringInput)
	files := map[string][]byte{}
	err := fs.WalkDir(os.DirFS(src), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(filepath.Join(src, filepath.FromSlash(p)))
		if err != nil {
			return err
		}
		files[path.Join(ChartMonitoringDir, p)] = data
		return nil
	})
	return files, err
}
