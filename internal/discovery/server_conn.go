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

package discovery

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// conn is one subscribed proxy stream: who it is and what it subscribed to,
// and, for status, what it has acked, rejected and bound.
type conn struct {
	nodeID   string
	identity string // SPIFFE ID
	scope    snapshot.Scope
	layout   snapshot.Layout // the resource layout of its messages
	notify   chan struct{}
	cancel   context.CancelCauseFunc

	// connected is when the stream subscribed; peer is the proxy's
	// address; svidExpiry is when its client SVID expires.
	connected  time.Time
	peer       string
	svidExpiry time.Time

	// Guarded by Server.mu.
	lastAck  time.Time
	bound    map[int32]bool
	reported bool // has sent a NodeStatus
	acked    *published
	// rejected is the proxy's NACK of a full snapshot, kept until it acks
	// one: the server does not resend that version, so status reports it.
	rejected *rejection
}

// register adds a subscribed stream. A node id belongs to one identity: the
// same identity reconnecting replaces its old stream, another is refused.
func (s *Server) register(c *conn) error {
	s.mu.Lock()
	old := s.nodes[c.nodeID]
	if old != nil && old.identity != c.identity {
		s.mu.Unlock()
		return s.reject(codes.AlreadyExists, "node_id %q is held by another identity", c.nodeID)
	}
	if old != nil {
		// The same proxy reconnected before its old stream was noticed dead.
		old.cancel(status.Error(codes.Aborted, "replaced by a newer stream of the same node"))
		delete(s.conns, old)
	}
	s.nodes[c.nodeID] = c
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.signalDataPlane()
	return nil
}

// unregister removes an ended stream.
func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	if s.nodes[c.nodeID] == c {
		delete(s.nodes, c.nodeID)
	}
	s.mu.Unlock()
	s.signalDataPlane()
}
