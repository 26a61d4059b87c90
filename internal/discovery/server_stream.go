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
	"errors"
	"io"
	"maps"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/lists"
	"github.com/coxswain-go/coxswain/internal/snapshot"
)

// inflight is the one un-acked message of a stream.
type inflight struct {
	nonce   string
	full    bool
	pub     *published
	version string // pub's version in the stream's layout, which the ack names
}

// streamState is what one stream knows of its proxy, owned by serveConn.
type streamState struct {
	baseline    *published // what the proxy holds (last acked); nil → next is full
	pending     *inflight
	nonce       uint64
	nackVersion string // a full snapshot of this version was nacked: wait for a new one
}

// serveConn runs a subscribed stream: it sends the scope's snapshot whenever
// nothing is in flight and the proxy lacks it, handles the proxy's
// messages, and ends the stream when the replica loses the lease, the
// server shuts down, or the proxy goes away.
func (s *Server) serveConn(ctx context.Context, stream serverStream, c *conn, log logr.Logger) error {
	in := make(chan *discoveryv1.ClientMessage)
	recvErr := make(chan error, 1)
	go forwardMessages(ctx, stream, in, recvErr)
	tick := time.NewTicker(s.opts.LeaderCheckInterval)
	defer tick.Stop()
	st := &streamState{}
	for {
		if st.pending == nil {
			if err := s.sendNext(stream, c, st); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			if cause := context.Cause(ctx); cause != nil && status.Code(cause) != codes.Unknown {
				return cause
			}
			return ctx.Err()
		case <-c.notify:
		case <-s.shutdown:
			return status.Error(codes.Unavailable, "the discovery server is shutting down")
		case <-tick.C:
			if !s.opts.IsLeader() {
				return s.reject(codes.FailedPrecondition, "%s: this controller replica lost the lease", NotLeaderMessage)
			}
		case err := <-recvErr:
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		case m := <-in:
			if err := s.handleClientMessage(c, st, m, log); err != nil {
				return err
			}
		}
	}
}

// forwardMessages forwards the proxy's messages to in until the stream fails (the
// error goes to recvErr) or ctx ends.
func forwardMessages(ctx context.Context, stream serverStream, in chan<- *discoveryv1.ClientMessage, recvErr chan<- error) {
	for {
		m, err := stream.Recv()
		if err != nil {
			recvErr <- err
			return
		}
		select {
		case in <- m:
		case <-ctx.Done():
			return
		}
	}
}

// handleClientMessage applies one message of a subscribed proxy.
func (s *Server) handleClientMessage(c *conn, st *streamState, m *discoveryv1.ClientMessage, log logr.Logger) error {
	switch msg := m.GetMsg().(type) {
	case *discoveryv1.ClientMessage_Ack:
		s.onAck(c, st, msg.Ack)
	case *discoveryv1.ClientMessage_Nack:
		s.onNack(c, st, msg.Nack, log)
	case *discoveryv1.ClientMessage_NodeStatus:
		s.onNodeStatus(c, msg.NodeStatus)
	case *discoveryv1.ClientMessage_Subscribe:
		return s.reject(codes.InvalidArgument, "Subscribe may only be sent once")
	default:
		return s.reject(codes.InvalidArgument, "unknown client message")
	}
	return nil
}

// onAck makes the message in flight the proxy's baseline; an Ack of any
// other message is stale and ignored.
func (s *Server) onAck(c *conn, st *streamState, ack *discoveryv1.Ack) {
	p := st.pending
	if p == nil || ack.GetNonce() != p.nonce || ack.GetVersion() != p.version {
		s.metrics.staleAcks.Inc()
		return
	}
	st.pending, st.baseline, st.nackVersion = nil, p.pub, ""
	s.metrics.acks.Inc()
	s.mu.Lock()
	// GatewayState reads of an ack the Gateways acked and whether a
	// refusal stands: an ack of a snapshot with the very same Gateways as
	// the one acked before (a route change) and no refusal to clear
	// changes no Gateway's state, and does not wake the status writer's
	// round over every Gateway.
	changed := c.acked == nil || c.rejected != nil || !lists.Same(c.acked.gateways, p.pub.gateways)
	c.acked, c.rejected, c.lastAck = p.pub, nil, time.Now()
	s.mu.Unlock()
	if changed {
		s.signalDataPlane()
	}
}

// onNack drops the baseline so that the next message is full; a rejected
// full snapshot is not resent and is reported to status.
func (s *Server) onNack(c *conn, st *streamState, nack *discoveryv1.Nack, log logr.Logger) {
	p := st.pending
	if p == nil || nack.GetNonce() != p.nonce {
		s.metrics.staleAcks.Inc()
		return
	}
	s.metrics.nacks.WithLabelValues(c.scope.String()).Inc()
	log.Info("proxy rejected a snapshot; its next snapshot is full", "version", p.pub.version, "full", p.full, "detail", nack.GetDetail())
	st.pending, st.baseline = nil, nil
	if p.full {
		// Final for this version (a rejected delta is retried at once
		// as a full snapshot, so only this one is reported).
		st.nackVersion = p.pub.version
		s.mu.Lock()
		c.rejected = &rejection{pub: p.pub, detail: nack.GetDetail()}
		s.mu.Unlock()
		s.signalDataPlane()
	}
}

// onNodeStatus records the ports the proxy has bound. A proxy reports
// them after every snapshot it applies; only a report that changes them
// wakes the status writer (at 1,000 Gateways every wake is a round over
// all of them).
func (s *Server) onNodeStatus(c *conn, ns *discoveryv1.NodeStatus) {
	bound := make(map[int32]bool, len(ns.GetBoundPorts()))
	for _, p := range ns.GetBoundPorts() {
		bound[p] = true
	}
	s.mu.Lock()
	same := c.reported && maps.Equal(c.bound, bound)
	c.bound, c.reported = bound, true
	s.mu.Unlock()
	if !same {
		s.signalDataPlane()
	}
}

// sendNext sends the scope's current snapshot when the proxy does not hold
// it: full when there is no baseline, else a delta against the baseline.
func (s *Server) sendNext(stream serverStream, c *conn, st *streamState) error {
	s.mu.Lock()
	cur := s.scopes[c.scope]
	s.mu.Unlock()
	msg, err := nextMessage(cur, st, c.layout)
	if err != nil {
		// The snapshot has no form in the proxy's layout: keep its current
		// state, as for a snapshot too large to send.
		s.log.Error(err, "snapshot cannot be sent in the proxy's resource layout", "scope", c.scope.String(), "layout", c.layout.String())
		st.baseline, st.nackVersion = nil, cur.version
		return nil
	}
	if msg == nil {
		return nil
	}
	st.nonce++
	msg.Nonce = strconv.FormatUint(st.nonce, 10)
	out := &discoveryv1.ServerMessage{Msg: &discoveryv1.ServerMessage_Snapshot{Snapshot: msg}}
	if size := proto.Size(out); size > s.maxSend {
		// Never send what the proxy must refuse: keep its current state and
		// wait for a smaller snapshot.
		s.metrics.oversize.Inc()
		s.log.Error(nil, "snapshot message exceeds the size cap; not sent", "scope", c.scope.String(), "bytes", size, "cap", s.maxSend, "full", msg.Full)
		if st.baseline == nil {
			st.nackVersion = cur.version
		} else {
			st.baseline, st.nackVersion = nil, cur.version
		}
		return nil
	}
	if err := stream.Send(out); err != nil {
		return err
	}
	kind := "delta"
	if msg.Full {
		kind = "full"
	}
	s.metrics.sent.WithLabelValues(kind).Inc()
	st.pending = &inflight{nonce: msg.Nonce, full: msg.Full, pub: cur, version: msg.Version}
	return nil
}

// nextMessage is the snapshot message (without its nonce) that brings the
// proxy to cur in layout, or nil when there is nothing to send: no snapshot
// yet, the proxy holds cur already, or cur is the full snapshot it
// rejected.
func nextMessage(cur *published, st *streamState, layout snapshot.Layout) (*discoveryv1.Snapshot, error) {
	if cur == nil {
		return nil, nil
	}
	if st.baseline == nil && cur.version == st.nackVersion {
		return nil, nil
	}
	if st.baseline != nil && cur.version == st.baseline.version {
		return nil, nil
	}
	f, err := cur.form(layout)
	if err != nil {
		return nil, err
	}
	msg := &discoveryv1.Snapshot{Version: f.version, Layout: LayoutToProto(layout)}
	if st.baseline == nil {
		msg.Full = true
		msg.Resources = f.fullResources()
		return msg, nil
	}
	base, err := st.baseline.form(layout)
	if err != nil {
		return nil, err
	}
	msg.Resources, msg.Removed = f.deltaFrom(base)
	return msg, nil
}
