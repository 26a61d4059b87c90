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
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// fastWriter is the http.ResponseWriter of the fast path: HTTP/1.1 with
// Content-Length when the handler set one, else chunked.
type fastWriter struct {
	bw *bufio.Writer
	// conn is what bw writes to: the client's connection (splicebody.go).
	conn        net.Conn
	h           http.Header
	head        bool
	reqClose    bool
	wroteHeader bool
	noBody      bool
	chunked     bool
	remaining   int64
	closeAfter  bool
	err         error
	// expect is the 100 Continue the request may still be owed: an
	// answer that comes first withholds it and closes the connection
	// (expectcontinue.go).
	expect *continueOwed
}

func (w *fastWriter) reset(req *http.Request) {
	h := w.h
	if h == nil {
		h = make(http.Header, 8)
	} else {
		clear(h) // the previous exchange on this connection is over
	}
	*w = fastWriter{bw: w.bw, conn: w.conn, h: h, head: req.Method == http.MethodHead, reqClose: req.Close, remaining: -1}
}

func (w *fastWriter) Header() http.Header { return w.h }

var dateCache atomic.Pointer[dateValue]

type dateValue struct {
	unix int64
	s    string
}

func httpDate() string {
	now := time.Now()
	if d := dateCache.Load(); d != nil && d.unix == now.Unix() {
		return d.s
	}
	d := &dateValue{unix: now.Unix(), s: now.UTC().Format(http.TimeFormat)}
	dateCache.Store(d)
	return d.s
}

func (w *fastWriter) WriteHeader(code int) {
	if w.wroteHeader || code < 200 {
		return // informational answers are not relayed on the fast path
	}
	w.wroteHeader = true
	h := w.h
	delete(h, "Transfer-Encoding")
	delete(h, "Connection")
	w.noBody = w.head || code == http.StatusNoContent || code == http.StatusNotModified
	if code == http.StatusNoContent || code == http.StatusNotModified {
		delete(h, "Content-Length")
	} else if cl := h["Content-Length"]; len(cl) == 1 {
		if n, err := strconv.ParseInt(cl[0], 10, 64); err == nil && n >= 0 {
			w.remaining = n
		} else {
			delete(h, "Content-Length")
		}
	} else if len(cl) > 1 {
		delete(h, "Content-Length")
	}
	if !w.noBody && w.remaining < 0 {
		w.chunked = true
	}
	bw := w.bw
	_, _ = bw.WriteString("HTTP/1.1 ")
	_, _ = bw.WriteString(strconv.Itoa(code))
	_ = bw.WriteByte(' ')
	_, _ = bw.WriteString(http.StatusText(code))
	_, _ = bw.WriteString("\r\n")
	if _, ok := h["Date"]; !ok {
		_, _ = bw.WriteString("Date: ")
		_, _ = bw.WriteString(httpDate())
		_, _ = bw.WriteString("\r\n")
	}
	for k, vv := range h {
		if k == "Trailer" || len(k) > len(http.TrailerPrefix) && k[:len(http.TrailerPrefix)] == http.TrailerPrefix {
			continue
		}
		for _, v := range vv {
			_, _ = bw.WriteString(k)
			_, _ = bw.WriteString(": ")
			_, _ = bw.WriteString(v)
			_, _ = bw.WriteString("\r\n")
		}
	}
	if w.chunked {
		_, _ = bw.WriteString("Transfer-Encoding: chunked\r\n")
		if t := h["Trailer"]; len(t) > 0 {
			_, _ = bw.WriteString("Trailer: ")
			_, _ = bw.WriteString(t[0])
			_, _ = bw.WriteString("\r\n")
		}
	}
	if w.expect.withhold() {
		w.reqClose = true // the client may not have sent its body
	}
	if w.reqClose {
		w.closeAfter = true
		_, _ = bw.WriteString("Connection: close\r\n")
	}
	_, _ = bw.WriteString("\r\n")
}

func (w *fastWriter) Write(p []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.err != nil {
		return 0, w.err
	}
	if w.noBody {
		return 0, http.ErrBodyNotAllowed
	}
	if len(p) == 0 {
		return 0, nil
	}
	if w.chunked {
		_, _ = w.bw.WriteString(strconv.FormatInt(int64(len(p)), 16))
		_, _ = w.bw.WriteString("\r\n")
		n, err := w.bw.Write(p)
		_, _ = w.bw.WriteString("\r\n")
		w.err = err
		return n, err
	}
	if int64(len(p)) > w.remaining {
		n, _ := w.bw.Write(p[:w.remaining])
		w.remaining = 0
		w.closeAfter = true
		return n, http.ErrContentLength
	}
	n, err := w.bw.Write(p)
	w.remaining -= int64(n)
	w.err = err
	return n, err
}

func (w *fastWriter) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if err := w.bw.Flush(); err != nil {
		w.err = err
	}
}

// finish ends the response (last chunk and trailers) and flushes it.
func (w *fastWriter) finish() error {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.chunked {
		_, _ = w.bw.WriteString("0\r\n")
		announced := map[string]bool{}
		for _, t := range w.h["Trailer"] {
			for _, k := range bytes.Split([]byte(t), []byte(",")) {
				announced[http.CanonicalHeaderKey(string(bytes.TrimSpace(k)))] = true
			}
		}
		for k, vv := range w.h {
			name := k
			if len(k) > len(http.TrailerPrefix) && k[:len(http.TrailerPrefix)] == http.TrailerPrefix {
				name = k[len(http.TrailerPrefix):]
			} else if !announced[k] {
				continue
			}
			for _, v := range vv {
				_, _ = w.bw.WriteString(name + ": " + v + "\r\n")
			}
		}
		_, _ = w.bw.WriteString("\r\n")
	} else if w.remaining > 0 && !w.noBody {
		w.closeAfter = true // the body was short: the framing is broken
	}
	if err := w.bw.Flush(); err != nil {
		return err
	}
	if w.err != nil {
		return w.err
	}
	return nil
}

var _ io.Writer = (*fastWriter)(nil)
