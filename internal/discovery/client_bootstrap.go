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
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spiffe/go-spiffe/v2/bundle/x509bundle"
	"github.com/spiffe/go-spiffe/v2/spiffeid"
	"github.com/spiffe/go-spiffe/v2/spiffetls/tlsconfig"
	"github.com/spiffe/go-spiffe/v2/svid/x509svid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	discoveryv1 "github.com/coxswain-go/coxswain/api/discovery/v1"
)

// GetX509SVID implements x509svid.Source with the current SVID.
func (c *Client) GetX509SVID() (*x509svid.SVID, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.svid == nil {
		return nil, errors.New("no SVID yet")
	}
	return c.svid, nil
}

// GetX509BundleForTrustDomain implements x509bundle.Source: the roots from
// the trust bundle file plus those the controller returned at bootstrap.
func (c *Client) GetX509BundleForTrustDomain(td spiffeid.TrustDomain) (*x509bundle.Bundle, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.bundle == nil || td != c.bundle.TrustDomain() {
		return nil, fmt.Errorf("no trust bundle for %q", td)
	}
	return c.bundle, nil
}

func (c *Client) loadBundleFile() (*x509bundle.Bundle, error) {
	b, err := x509bundle.Load(c.opts.ServerID.TrustDomain(), c.opts.TrustBundlePath)
	if err != nil {
		return nil, fmt.Errorf("trust bundle %s: %w", c.opts.TrustBundlePath, err)
	}
	return b, nil
}

// postponeRenewal moves the renewal a quarter of the remaining lifetime
// ahead (at least 1s) when the current SVID is still valid, and reports
// whether it did.
func (c *Client) postponeRenewal() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.svid == nil {
		return false
	}
	now := time.Now()
	left := c.svid.Certificates[0].NotAfter.Sub(now)
	if left < 2*time.Second {
		return false
	}
	c.renewAt = now.Add(max(left/4, time.Second))
	return true
}

// doBootstrap exchanges the token and a CSR for an SVID over server-auth
// TLS, then schedules the renewal.
func (c *Client) doBootstrap(ctx context.Context) error {
	fileBundle, err := c.loadBundleFile()
	if err != nil {
		return err
	}
	resp, err := c.requestSVID(ctx, fileBundle)
	if err != nil {
		return err
	}
	svid, bundle, err := c.acceptSVID(resp, fileBundle)
	if err != nil {
		return err
	}
	leaf := svid.Certificates[0]
	c.mu.Lock()
	c.svid, c.bundle = svid, bundle
	// Renew at half of the remaining lifetime (NotBefore is backdated for
	// clock skew, so it does not count).
	now := time.Now()
	c.renewAt = now.Add(leaf.NotAfter.Sub(now) / 2)
	renewAt := c.renewAt
	c.mu.Unlock()
	c.metrics.svidExpiry.Set(float64(leaf.NotAfter.Unix()))
	c.log.Info("bootstrapped SVID", "id", svid.ID.String(), "notAfter", leaf.NotAfter, "renewAt", renewAt)
	return nil
}

// requestSVID sends the projected token (re-read every time) and a CSR for
// the client's key to the bootstrap endpoint, which must present the
// controller's SVID chaining to the trust bundle file.
func (c *Client) requestSVID(ctx context.Context, fileBundle *x509bundle.Bundle) (*discoveryv1.BootstrapResponse, error) {
	token, err := os.ReadFile(c.opts.TokenPath)
	if err != nil {
		return nil, fmt.Errorf("reading the ServiceAccount token: %w", err)
	}
	csrDER, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, c.key)
	if err != nil {
		return nil, fmt.Errorf("creating the CSR: %w", err)
	}
	tlsCfg := tlsconfig.TLSClientConfig(fileBundle, tlsconfig.AuthorizeID(c.opts.ServerID))
	cc, err := grpc.NewClient(c.bootstrap, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxClientMessageBytes), grpc.MaxCallSendMsgSize(MaxClientMessageBytes)))
	if err != nil {
		return nil, fmt.Errorf("bootstrap at %s: %w", c.bootstrap, err)
	}
	defer func() { _ = cc.Close() }()
	cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	resp, err := discoveryv1.NewDiscoveryClient(cc).Bootstrap(cctx, &discoveryv1.BootstrapRequest{
		SaToken:     strings.TrimSpace(string(token)),
		CsrPem:      string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: csrDER})),
		WireVersion: WireVersion,
		Scope:       ScopeToProto(c.opts.Scope),
	})
	if err != nil {
		if werr := wireMismatch(err); werr != nil {
			return nil, werr
		}
		return nil, fmt.Errorf("bootstrap at %s: %w", c.bootstrap, err)
	}
	return resp, nil
}

// acceptSVID pairs the issued certificates with the client's key and
// checks that they chain to the trust bundle file's roots plus the roots the
// controller returned; it returns the SVID and that combined bundle.
func (c *Client) acceptSVID(resp *discoveryv1.BootstrapResponse, fileBundle *x509bundle.Bundle) (*x509svid.SVID, *x509bundle.Bundle, error) {
	keyDER, err := x509.MarshalPKCS8PrivateKey(c.key)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the client key: %w", err)
	}
	svid, err := x509svid.Parse([]byte(resp.GetSvidCertPem()), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		return nil, nil, fmt.Errorf("bootstrap returned an unusable SVID: %w", err)
	}
	bundle := fileBundle.Clone()
	if extra, err := x509bundle.Parse(bundle.TrustDomain(), []byte(resp.GetTrustBundlePem())); err == nil {
		for _, a := range extra.X509Authorities() {
			bundle.AddX509Authority(a)
		}
	}
	if _, _, err := x509svid.Verify(svid.Certificates, bundle); err != nil {
		return nil, nil, fmt.Errorf("bootstrap returned an SVID that does not chain to the trust bundle: %w", err)
	}
	return svid, bundle, nil
}
