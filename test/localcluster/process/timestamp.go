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

package process

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"time"
)

// timestampWriter writes each complete line as "<RFC3339Nano> <stream>
// <line>" (a partial line waits for its end). The kubelet's log endpoint
// reads this format back.
type timestampWriter struct {
	stream string
	w      io.Writer
	mu     *sync.Mutex
	buf    []byte
}

func (t *timestampWriter) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		err := t.writeLine(t.buf[:i])
		t.buf = t.buf[i+1:]
		if err != nil {
			return len(p), err
		}
	}
	if len(t.buf) > 64<<10 { // an endless line: flush it in pieces
		err := t.writeLine(t.buf)
		t.buf = t.buf[:0]
		if err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

func (t *timestampWriter) writeLine(line []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err := fmt.Fprintf(t.w, "%s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), t.stream, line)
	return err
}
