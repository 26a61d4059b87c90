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
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
	"github.com/coxswain-go/coxswain/internal/names"
)

// serverStream is the controller's end of one proxy's discovery stream.
type serverStream = grpc.BidiStreamingServer[discoveryv1.ClientMessage, discoveryv1.ServerMessage]

// reject counts and returns a status error.
func (s *Server) reject(code codes.Code, format string, args ...any) error {
	s.metrics.rejections.WithLabelValues(code.String()).Inc()
	return status.Errorf(code, format, args...)
}

// peerIdentity returns the verified SPIFFE ID of the stream's peer, its
// address and when its SVID expires.
func peerIdentity(ctx context.Context) (spiffeid.ID, peerInfo, error) {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return spiffeid.ID{}, peerInfo{}, errors.New("no peer")
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(info.State.PeerCertificates) == 0 {
		return spiffeid.ID{}, peerInfo{}, errors.New("no client certificate")
	}
	leaf := info.State.PeerCertificates[0]
	pi := peerInfo{svidExpiry: leaf.NotAfter}
	if p.Addr != nil {
		pi.addr = p.Addr.String()
	}
	id, err := x509svid.IDFromCert(leaf)
	return id, pi, err
}

// peerInfo is what the fleet view shows of a stream's peer.
type peerInfo struct {
	addr       string
	svidExpiry time.Time
}

// Stream serves one proxy: Subscribe, then snapshots out and acks in.
func (s *Server) Stream(stream serverStream) error {
	if !s.opts.IsLeader() {
		return s.reject(codes.FailedPrecondition, "%s: this controller replica is a standby; dial the %s Service", NotLeaderMessage, names.DiscoveryStreamServiceName)
	}
	id, pi, err := peerIdentity(stream.Context())
	if err != nil {
		return s.reject(codes.Unauthenticated, "peer identity: %v", err)
	}
	ns, sa, err := ServiceAccountFromID(id)
	if err != nil {
		return s.reject(codes.PermissionDenied, "%v", err)
	}
	first, err := recvFirst(stream, subscribeTimeout)
	if err != nil {
		return err
	}
	sub := first.GetSubscribe()
	if sub == nil {
		return s.reject(codes.InvalidArgument, "the first message must be a Subscribe")
	}
	if sub.GetWireVersion() != s.wireVersion {
		return s.reject(codes.FailedPrecondition, "%s: client speaks wire version %d, server speaks %d", WireMismatchMessage, sub.GetWireVersion(), s.wireVersion)
	}
	if sub.GetNodeId() == "" {
		return s.reject(codes.InvalidArgument, "node_id is required")
	}
	scope, err := ScopeFromProto(sub.GetScope())
	if err != nil {
		return s.reject(codes.InvalidArgument, "%v", err)
	}
	if err := s.opts.Authorizer.Authorize(ns, sa, scope); err != nil {
		s.metrics.rejections.WithLabelValues(status.Code(err).String()).Inc()
		return err
	}
	ctx, cancel := context.WithCancelCause(stream.Context())
	defer cancel(nil)
	c := &conn{
		nodeID: sub.GetNodeId(), identity: id.String(), scope: scope, layout: min(LayoutFromProto(sub.GetLayout()), s.richest),
		notify: make(chan struct{}, 1), cancel: cancel,
		connected: time.Now(), peer: pi.addr, svidExpiry: pi.svidExpiry,
	}
	if err := s.register(c); err != nil {
		return err
	}
	defer s.unregister(c)
	log := s.log.WithValues("node", c.nodeID, "identity", c.identity, "scope", scope.String())
	log.V(1).Info("proxy subscribed")
	return s.serveConn(ctx, stream, c, log)
}

// subscribeTimeout bounds the wait for a stream's Subscribe.
const subscribeTimeout = 10 * time.Second

// recvFirst waits at most timeout for the stream's first message.
func recvFirst(stream serverStream, timeout time.Duration) (*discoveryv1.ClientMessage, error) {
	type result struct {
		m   *discoveryv1.ClientMessage
		err error
	}
	ch := make(chan result, 1)
	go func() {
		m, err := stream.Recv()
		ch <- result{m, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-ch:
		return r.m, r.err
	case <-t.C:
		// Returning ends the stream, which unblocks the Recv.
		return nil, status.Errorf(codes.DeadlineExceeded, "no Subscribe within %s", timeout)
	}
}
