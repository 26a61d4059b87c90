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

package proxy

import (
	"io"
	"net/http"
	"strings"
)

// upgradeType is the protocol a request asks to switch to, when the proxy
// relays that switch: WebSocket only. Any other Upgrade (h2c above all,
// which would tunnel later requests past the routes) is dropped with the
// other hop-by-hop headers and the request is forwarded as a plain one.
func upgradeType(h http.Header) string {
	conn := h["Connection"]
	for _, v := range conn {
		for _, f := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(f), "upgrade") {
				if u := h["Upgrade"]; len(u) == 1 && strings.EqualFold(strings.TrimSpace(u[0]), "websocket") {
					return u[0]
				}
			}
		}
	}
	return ""
}

// upgrade splices a client connection to an upstream that switched
// protocols (WebSocket).
func (d *DataPlane) upgrade(ex *exchange, r *http.Request, rt *route, resp *http.Response, reqUp string) {
	resUp := upgradeType(resp.Header)
	backConn, ok := resp.Body.(io.ReadWriteCloser)
	if reqUp == "" || !strings.EqualFold(reqUp, resUp) || !ok {
		ex.upstreamError(rt, "protocol")
		answer(ex, http.StatusBadGateway, "upstream switched to an unexpected protocol")
		return
	}
	conn, brw, err := http.NewResponseController(ex.w).Hijack()
	if err != nil {
		answer(ex, http.StatusInternalServerError, "cannot switch protocols on this connection")
		return
	}
	defer func() { _ = conn.Close() }()
	ex.status, ex.wroteHeader = http.StatusSwitchingProtocols, true
	rt.respHdr.apply(resp.Header)
	resp.Body = nil
	if err := resp.Write(brw); err != nil {
		return
	}
	if err := brw.Flush(); err != nil {
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		n, _ := io.Copy(conn, backConn)
		ex.bytes += n
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(backConn, brw)
		done <- struct{}{}
	}()
	<-done
	_ = backConn.Close()
	_ = conn.Close()
	<-done
}
