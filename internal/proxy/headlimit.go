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
	"errors"
	"fmt"
	"io"
)

// errResponseHeadTooLarge: an upstream sent a response head larger than
// Options.MaxResponseHeaderBytes; the client gets a 502.
var errResponseHeadTooLarge = errors.New("upstream response head too large")

// headLimit caps the bytes the lean client reads from an upstream
// connection while it reads response heads, the way http.Transport's
// MaxResponseHeaderBytes does: one budget for every head of an exchange
// (informational ones included), counted on what the buffered reader
// pulls from the connection, lifted for the body. Without it a hostile or
// broken upstream could grow one header line without bound.
type headLimit struct {
	r    io.Reader
	max  int64
	left int64 // < 0: unlimited
}

// arm starts the budget of one exchange's heads.
func (l *headLimit) arm() { l.left = l.max }

// exhausted reports whether the heads used up the whole budget.
func (l *headLimit) exhausted() bool { return l.left == 0 }

// disarm lifts the limit for the body.
func (l *headLimit) disarm() { l.left = -1 }

func (l *headLimit) Read(p []byte) (int, error) {
	if l.left < 0 {
		return l.r.Read(p)
	}
	if l.left == 0 {
		return 0, fmt.Errorf("%w: more than %d bytes", errResponseHeadTooLarge, l.max)
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}
