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
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// accessLogger writes one JSON object per request, per finished stream
// connection and per ended UDP session.
type accessLogger struct {
	mu sync.Mutex
	w  io.Writer
}

var logBufPool = sync.Pool{New: func() any { b := make([]byte, 0, 512); return &b }}

func (a *accessLogger) log(start time.Time, listener string, r *http.Request, ex *exchange, routeID string) {
	bp := logBufPool.Get().(*[]byte)
	b := (*bp)[:0]
	b = append(b, `{"time":`...)
	b = appendJSONString(b, start.UTC().Format(time.RFC3339Nano))
	b = append(b, `,"listener":`...)
	b = appendJSONString(b, listener)
	b = append(b, `,"host":`...)
	b = appendJSONString(b, r.Host)
	b = append(b, `,"method":`...)
	b = appendJSONString(b, r.Method)
	b = append(b, `,"path":`...)
	b = appendJSONString(b, r.URL.Path)
	b = append(b, `,"protocol":`...)
	b = appendJSONString(b, r.Proto)
	b = append(b, `,"status":`...)
	b = strconv.AppendInt(b, int64(ex.status), 10)
	b = append(b, `,"client_ip":`...)
	if ex.clientIP.IsValid() {
		// The detected client (clientip.go); a zoneless address needs no
		// JSON escaping.
		b = append(b, '"')
		b = ex.clientIP.WithZone("").AppendTo(b)
		b = append(b, '"')
	} else {
		b = appendJSONString(b, clientIP(r.RemoteAddr))
	}
	b = append(b, `,"route_id":`...)
	b = appendJSONString(b, routeID)
	b = append(b, `,"upstream":`...)
	b = appendJSONString(b, ex.upstreamName)
	b = append(b, `,"upstream_addr":`...)
	b = appendJSONString(b, ex.upstream)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(time.Since(start).Microseconds())/1000, 'f', 3, 64)
	b = append(b, `,"bytes_sent":`...)
	b = strconv.AppendInt(b, ex.bytes, 10)
	b = append(b, `,"error":`...)
	b = appendJSONString(b, ex.errKind)
	b = append(b, `,"retries":`...)
	b = strconv.AppendInt(b, int64(ex.retries), 10)
	b = append(b, `,"request_id":`...)
	b = appendJSONString(b, ex.requestID)
	b = append(b, `,"trace_id":`...)
	b = appendTraceID(b, r, ex)
	b = append(b, "}\n"...)
	a.mu.Lock()
	_, _ = a.w.Write(b)
	a.mu.Unlock()
	*bp = b
	logBufPool.Put(bp)
}

// streamLog is what the access log says about one connection of a TLS or
// TCP listener, or one session of a UDP listener. rx counts the bytes
// from the client, tx those to it.
type streamLog struct {
	start    time.Time
	listener string
	protocol string
	routeID  string
	clientIP string
	sni      string
	upstream string
	rx, tx   int64
	outcome  streamOutcome
}

func (a *accessLogger) logStream(e *streamLog) {
	bp := logBufPool.Get().(*[]byte)
	b := (*bp)[:0]
	b = append(b, `{"time":`...)
	b = appendJSONString(b, e.start.UTC().Format(time.RFC3339Nano))
	b = append(b, `,"listener":`...)
	b = appendJSONString(b, e.listener)
	b = append(b, `,"protocol":`...)
	b = appendJSONString(b, e.protocol)
	b = append(b, `,"route_id":`...)
	b = appendJSONString(b, e.routeID)
	b = append(b, `,"client_ip":`...)
	b = appendJSONString(b, e.clientIP)
	b = append(b, `,"sni":`...)
	b = appendJSONString(b, e.sni)
	b = append(b, `,"upstream_addr":`...)
	b = appendJSONString(b, e.upstream)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendFloat(b, float64(time.Since(e.start).Microseconds())/1000, 'f', 3, 64)
	b = append(b, `,"bytes_rx":`...)
	b = strconv.AppendInt(b, e.rx, 10)
	b = append(b, `,"bytes_tx":`...)
	b = strconv.AppendInt(b, e.tx, 10)
	b = append(b, `,"outcome":`...)
	b = appendJSONString(b, e.outcome.String())
	// A stream carries no trace context: the field is there for one
	// schema across the access log's lines, always empty.
	b = append(b, `,"trace_id":""`...)
	b = append(b, "}\n"...)
	a.mu.Lock()
	_, _ = a.w.Write(b)
	a.mu.Unlock()
	*bp = b
	logBufPool.Put(bp)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaping what JSON requires
// and replacing invalid UTF-8.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
