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

package provision

import "strconv"

// proxyArgs are the proxy flags the effective parameters set, after the
// mode and discovery flags.
func (e Effective) proxyArgs() []string {
	args := e.Shutdown.orDefault().proxyArgs()
	// Only when set: the proxy's own default is the field's built-in
	// default, and proxies of an older image keep starting.
	if e.MaxResponseHeaderBytes != nil {
		args = append(args, "--max-response-header-bytes", strconv.Itoa(int(*e.MaxResponseHeaderBytes)))
	}
	if st := e.Streams; st != nil && st.IdleTimeout != nil {
		args = append(args, "--stream-idle-timeout", st.IdleTimeout.Duration.String())
	}
	if rl := e.RateLimit; rl != nil && rl.RedisAddress != "" {
		args = append(args, "--rate-limit-redis", rl.RedisAddress)
	}
	if tr := e.Tracing; tr != nil && tr.OTLPEndpoint != "" {
		ratio := ""
		if tr.SamplingRatio != nil {
			ratio = *tr.SamplingRatio
		}
		args = append(args, TracingArgs(tr.OTLPEndpoint, tr.Insecure, ratio)...)
	}
	return args
}

// TracingArgs are the proxy's tracing flags: an OTLP/gRPC endpoint, in
// plaintext or not, and a sampling ratio ("" keeps the proxy's default).
func TracingArgs(endpoint string, insecure bool, ratio string) []string {
	if endpoint == "" {
		return nil
	}
	args := []string{"--tracing-otlp-endpoint", endpoint}
	if insecure {
		args = append(args, "--tracing-otlp-insecure")
	}
	if ratio != "" {
		args = append(args, "--tracing-sampling-ratio", ratio)
	}
	return args
}
