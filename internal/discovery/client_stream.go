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
	"slices"
	"sync"
	"time"

	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
)

// stream runs one stream until it fails or the SVID needs renewal; got says
// whether it delivered at least one snapshot message.
func (c *Client) stream(ctx context.Context, endpoint string) (got bool, err error) {
	c.mu.Lock()
	renewAt := c.renewAt
	c.mu.Unlock()
	cc, err := c.dialStream(endpoint)
	if err != nil {
		return false, err
	}
	defer func() { _ = cc.Close() }()
	sctx, cancel := context.WithDeadlineCause(ctx, renewAt, errRenew)
	defer cancel()
	st, err := discoveryv1.NewDiscoveryClient(cc).Stream(sctx)
	if err != nil {
		return false, err
	}
	out := &streamSender{stream: st}
	if err := out.send(&discoveryv1.ClientMessage{Msg: &discoveryv1.ClientMessage_Subscribe{Subscribe: &discoveryv1.Subscribe{
		NodeId: c.opts.NodeID, WireVersion: WireVersion, Scope: ScopeToProto(c.opts.Scope),
		Layout: LayoutToProto(RichestLayout),
	}}}); err != nil {
		return false, streamErr(sctx, sendFailure(st, err))
	}
	if err := c.sendPorts(out); err != nil {
		return false, streamErr(sctx, sendFailure(st, err))
	}
	// Bound-port reports on every change, for the stream's lifetime.
	portsDone := make(chan struct{})
	defer func() { cancel(); <-portsDone }()
	go func() {
		defer close(portsDone)
		c.reportPorts(sctx, out)
	}()
	return c.receive(sctx, st, out)
}

// dialStream prepares the mTLS connection to a stream endpoint: the client
// presents its current SVID and accepts only the controller's.
func (c *Client) dialStream(endpoint string) (*grpc.ClientConn, error) {
	tlsCfg := tlsconfig.MTLSClientConfig(c, c, tlsconfig.AuthorizeID(c.opts.ServerID))
	return grpc.NewClient(endpoint,
		grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxServerMessageBytes), grpc.MaxCallSendMsgSize(MaxClientMessageBytes)),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}),
	)
}

// clientStream is the proxy's end of a discovery stream.
type clientStream = grpc.BidiStreamingClient[discoveryv1.ClientMessage, discoveryv1.ServerMessage]

// streamSender serialises the sends of the receive loop and of the port
// reporter: a gRPC stream allows one sender at a time.
type streamSender struct {
	mu     sync.Mutex
	stream clientStream
}

func (s *streamSender) send(m *discoveryv1.ClientMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stream.Send(m)
}

// sendPorts reports the ports bound now, sorted.
func (c *Client) sendPorts(out *streamSender) error {
	ports := slices.Clone(c.opts.Applier.BoundPorts())
	slices.Sort(ports)
	return out.send(&discoveryv1.ClientMessage{Msg: &discoveryv1.ClientMessage_NodeStatus{NodeStatus: &discoveryv1.NodeStatus{BoundPorts: ports}}})
}

// reportPorts sends a NodeStatus on every change of the bound ports until
// ctx ends or a send fails.
func (c *Client) reportPorts(ctx context.Context, out *streamSender) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.portsChanged:
			if err := c.sendPorts(out); err != nil {
				return
			}
		}
	}
}

// receive applies every snapshot message and answers it with an Ack or a
// Nack until the stream fails; got says whether a snapshot arrived.
func (c *Client) receive(ctx context.Context, st clientStream, out *streamSender) (got bool, err error) {
	for {
		m, err := st.Recv()
		if err != nil {
			return got, streamErr(ctx, err)
		}
		snap := m.GetSnapshot()
		if snap == nil {
			continue
		}
		if !got {
			got = true
			c.setReadiness(true, "")
		}
		reply := c.handle(snap)
		if err := out.send(reply); err != nil {
			return got, streamErr(ctx, sendFailure(st, err))
		}
		c.setReadiness(true, "")
	}
}

// sendFailure is why a send failed. A send answers io.EOF when the server
// has already ended the stream; the server's status (a wire version
// mismatch, a standby's refusal) is then what Recv returns, as grpc-go
// documents for SendMsg. Only the goroutine that receives may call it.
func sendFailure(st clientStream, err error) error {
	if !errors.Is(err, io.EOF) {
		return err
	}
	for {
		if _, rerr := st.Recv(); rerr != nil {
			return rerr
		}
	}
}

// streamErr says why a stream ended: errRenew when the SVID reached its
// renewal time, ErrWireVersion on a version mismatch, else err.
func streamErr(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errRenew) {
		return errRenew
	}
	if werr := wireMismatch(err); werr != nil {
		return werr
	}
	return err
}
