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

// Package lifecycle is the Project lifecycle tooling run as the lifecycle
// identity: setup (idempotent upsert that creates the agent CA only when
// none exists), agent CA rotation (start, finish) and teardown. Every change
// of a signed field is re-signed.
//
// Certificate order convention: the first PEM block of
// spec.agentCA.certificates is the CA whose key is in sealedKey; other
// blocks are the next CA (during a rotation) or retired CAs (during the grace
// period after one).
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
)

const (
	// AnnotationRotationStartedAt records when rotate-ca start ran.
	AnnotationRotationStartedAt = "infra.apoxy.dev/agent-ca-rotation-started-at"
	// AnnotationRetireAfter records when rotate-ca finish may drop the
	// retired CA certificates.
	AnnotationRetireAfter = "infra.apoxy.dev/agent-ca-retire-after"

	// DefaultCAValidity is the lifetime of a new agent CA.
	DefaultCAValidity = 10 * 365 * 24 * time.Hour
)

var (
	// ErrShardMove means setup was asked to assign an existing Project to
	// another shard. Moves go through the shard migration workflow.
	ErrShardMove = errors.New("project setup refuses to move a project to another shard")
	// ErrBrokenCA means the Project has CA certificates but no sealed key.
	ErrBrokenCA = errors.New("agent CA has certificates but no sealed key")
	// ErrNoRotation means rotate-ca finish found no rotation to finish.
	ErrNoRotation = errors.New("no agent CA rotation in progress")

	uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

// Tool performs lifecycle operations as the lifecycle identity.
type Tool struct {
	Client     client.Client
	Signer     trust.Signer
	KEK        KEK
	Clock      clock.PassiveClock
	CAValidity time.Duration
	Log        logr.Logger
}

// Outcome says what an operation did.
type Outcome string

// The outcomes of an operation: what it did to the Project.
const (
	Created   Outcome = "created"
	Updated   Outcome = "updated"
	Unchanged Outcome = "unchanged"
	Deleted   Outcome = "deleted"
	// Pending means rotate-ca finish promoted earlier and the grace period
	// has not ended; nothing changed.
	Pending Outcome = "pending"
)

// Result is the outcome of an operation.
type Result struct {
	Outcome   Outcome
	CACreated bool
	// RetireAfter is when the retired CA certificates may be dropped.
	RetireAfter *time.Time
	Project     *infrav1alpha1.Project
}

// SetupInput are the lifecycle inputs of one Project.
type SetupInput struct {
	Name              string
	ShardID           string
	APIServerEndpoint string
	RelayRoots        string
}

func (t *Tool) now() time.Time {
	if t.Clock == nil {
		return time.Now()
	}
	return t.Clock.Now()
}

func (in SetupInput) validate() error {
	if !uuidRE.MatchString(in.Name) {
		return fmt.Errorf("project name must be a lowercase UUID, got %q", in.Name)
	}
	if !uuidRE.MatchString(in.ShardID) {
		return fmt.Errorf("shard ID must be a lowercase UUID, got %q", in.ShardID)
	}
	if in.APIServerEndpoint == "" {
		return errors.New("the API server endpoint is required")
	}
	return nil
}

// Setup upserts the Project: shard label, shardID, endpoint and relay roots;
// it creates an agent CA only when the Project has none (repairing a missing
// one, never replacing one), and re-signs when a signed field changed. It
// refuses a shard move. Rerunning it with the same inputs writes nothing.
func (t *Tool) Setup(ctx context.Context, in SetupInput) (Result, error) {
	if err := in.validate(); err != nil {
		return Result{}, err
	}
	var res Result
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		res = Result{}
		cur := &infrav1alpha1.Project{}
		err := t.Client.Get(ctx, types.NamespacedName{Name: in.Name}, cur)
		if apierrors.IsNotFound(err) {
			p := &infrav1alpha1.Project{ObjectMeta: metav1.ObjectMeta{Name: in.Name}}
			if err := t.applyInput(ctx, p, in, &res); err != nil {
				return err
			}
			if err := t.sign(p, nil); err != nil {
				return err
			}
			if err := t.Client.Create(ctx, p); err != nil {
				if apierrors.IsAlreadyExists(err) {
					// Raced with another writer: retry as an update.
					return apierrors.NewConflict(infrav1alpha1.GroupVersion.WithResource("projects").GroupResource(), in.Name, err)
				}
				return fmt.Errorf("creating project %s: %w", in.Name, err)
			}
			res.Outcome, res.Project = Created, p
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading project %s: %w", in.Name, err)
		}
		if cur.Spec.ShardID != in.ShardID {
			return fmt.Errorf("%w: project %s is assigned to shard %s and setup was asked for shard %s; use the shard migration workflow",
				ErrShardMove, in.Name, cur.Spec.ShardID, in.ShardID)
		}
		p := cur.DeepCopy()
		if err := t.applyInput(ctx, p, in, &res); err != nil {
			return err
		}
		return t.write(ctx, cur, p, &res)
	})
	return res, err
}

// applyInput sets the lifecycle inputs on p and creates a CA when p has none.
func (t *Tool) applyInput(ctx context.Context, p *infrav1alpha1.Project, in SetupInput, res *Result) error {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[infrav1alpha1.ShardIDLabel] = in.ShardID
	p.Spec.ShardID = in.ShardID
	p.Spec.APIServerEndpoint = in.APIServerEndpoint
	p.Spec.RelayRoots = in.RelayRoots
	ca := p.Spec.AgentCA
	switch {
	case ca == nil || ca.Certificates == "":
		certPEM, sealed, wrapped, err := t.newSealedCA(ctx, p.Name)
		if err != nil {
			return err
		}
		p.Spec.AgentCA = &infrav1alpha1.AgentCA{Certificates: certPEM, SealedKey: sealed, WrappedDataKey: wrapped}
		res.CACreated = true
		t.Log.Info("created agent CA", "project", p.Name)
	case len(ca.SealedKey) == 0 || len(ca.WrappedDataKey) == 0:
		return fmt.Errorf("%w: project %s; setup never replaces a CA: run rotate-ca start and finish", ErrBrokenCA, p.Name)
	}
	return nil
}

// keyAAD binds a sealed CA key to its project.
func keyAAD(project string) []byte { return []byte("coxswain.infra.agent-ca-key.v1\x00" + project) }

// OpenCAKey opens a sealed agent CA key of project (PKCS #8 DER).
func OpenCAKey(ctx context.Context, kek KEK, project string, sealed, wrapped []byte) ([]byte, error) {
	return Open(ctx, kek, sealed, wrapped, keyAAD(project))
}

func (t *Tool) newSealedCA(ctx context.Context, project string) (string, []byte, []byte, error) {
	validity := t.CAValidity
	if validity <= 0 {
		validity = DefaultCAValidity
	}
	certPEM, keyDER, err := NewAgentCA(project, t.now(), validity)
	if err != nil {
		return "", nil, nil, fmt.Errorf("creating agent CA: %w", err)
	}
	defer clear(keyDER)
	sealed, wrapped, err := Seal(ctx, t.KEK, keyDER, keyAAD(project))
	if err != nil {
		return "", nil, nil, fmt.Errorf("sealing agent CA key: %w", err)
	}
	return certPEM, sealed, wrapped, nil
}

// sign re-signs p when its signed fields differ from what its signature
// covers under the tool's key. signedAt never goes back before the previous
// signature's, so consumers never see a fresh change as stale.
func (t *Tool) sign(p *infrav1alpha1.Project, prev *infrav1alpha1.TrustSignature) error {
	f := trust.FieldsOf(p)
	ks := trust.KeySet{t.Signer.KeyID: t.Signer.Key.Public()}
	if ks.Verify(f, p.Spec.TrustSignature) == nil {
		return nil
	}
	at := t.now()
	if prev != nil && at.Before(prev.SignedAt.Time) {
		at = prev.SignedAt.Time
	}
	sig, err := t.Signer.Sign(f, at)
	if err != nil {
		return err
	}
	p.Spec.TrustSignature = sig
	return nil
}

// write re-signs and updates p if it differs from cur.
func (t *Tool) write(ctx context.Context, cur, p *infrav1alpha1.Project, res *Result) error {
	if err := t.sign(p, cur.Spec.TrustSignature); err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(cur.ObjectMeta, p.ObjectMeta) && equality.Semantic.DeepEqual(cur.Spec, p.Spec) {
		if res.Outcome == "" {
			res.Outcome = Unchanged
		}
		res.Project = cur
		return nil
	}
	if err := t.Client.Update(ctx, p); err != nil {
		return err
	}
	if res.Outcome == "" || res.Outcome == Unchanged {
		res.Outcome = Updated
	}
	res.Project = p
	return nil
}

func (t *Tool) get(ctx context.Context, name string) (*infrav1alpha1.Project, error) {
	p := &infrav1alpha1.Project{}
	if err := t.Client.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
		return nil, fmt.Errorf("reading project %s: %w", name, err)
	}
	if p.Spec.AgentCA == nil || p.Spec.AgentCA.Certificates == "" {
		return nil, fmt.Errorf("project %s has no agent CA: run setup first", name)
	}
	return p, nil
}

// RotateCAStart creates the next CA, stores it in next* and appends its
// certificate to certificates, so that agents of both CAs are accepted. It
// does nothing when a rotation is already in progress.
func (t *Tool) RotateCAStart(ctx context.Context, name string) (Result, error) {
	var res Result
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		res = Result{}
		cur, err := t.get(ctx, name)
		if err != nil {
			return err
		}
		if cur.Spec.AgentCA.NextCertificate != "" {
			res.Outcome, res.Project = Unchanged, cur
			return nil
		}
		p := cur.DeepCopy()
		certPEM, sealed, wrapped, err := t.newSealedCA(ctx, name)
		if err != nil {
			return err
		}
		ca := p.Spec.AgentCA
		ca.NextCertificate, ca.NextSealedKey, ca.NextWrappedDataKey = certPEM, sealed, wrapped
		ca.Certificates = joinPEM(append(SplitPEM(ca.Certificates), certPEM)...)
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[AnnotationRotationStartedAt] = t.now().UTC().Format(time.RFC3339)
		res.CACreated = true
		return t.write(ctx, cur, p, &res)
	})
	return res, err
}

// RotateCAFinish promotes the next CA (its key becomes sealedKey, its
// certificate comes first) and keeps the old certificates for grace; once
// grace has passed, a later run drops them. With grace 0 they are dropped at
// once.
func (t *Tool) RotateCAFinish(ctx context.Context, name string, grace time.Duration) (Result, error) {
	var res Result
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		res = Result{}
		cur, err := t.get(ctx, name)
		if err != nil {
			return err
		}
		p := cur.DeepCopy()
		ca := p.Spec.AgentCA
		now := t.now().UTC()
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		switch {
		case ca.NextCertificate != "":
			var others []string
			next := SplitPEM(ca.NextCertificate)
			for _, b := range SplitPEM(ca.Certificates) {
				if len(next) == 0 || b != next[0] {
					others = append(others, b)
				}
			}
			ca.SealedKey, ca.WrappedDataKey = ca.NextSealedKey, ca.NextWrappedDataKey
			ca.NextCertificate, ca.NextSealedKey, ca.NextWrappedDataKey = "", nil, nil
			delete(p.Annotations, AnnotationRotationStartedAt)
			if grace <= 0 {
				ca.Certificates = joinPEM(next...)
				delete(p.Annotations, AnnotationRetireAfter)
			} else {
				ca.Certificates = joinPEM(append(next, others...)...)
				retire := now.Add(grace).Truncate(time.Second)
				p.Annotations[AnnotationRetireAfter] = retire.Format(time.RFC3339)
				res.RetireAfter = &retire
			}
		case p.Annotations[AnnotationRetireAfter] != "":
			retire, err := time.Parse(time.RFC3339, p.Annotations[AnnotationRetireAfter])
			if err != nil {
				return fmt.Errorf("project %s: annotation %s: %w", name, AnnotationRetireAfter, err)
			}
			if now.Before(retire) {
				res.Outcome, res.Project, res.RetireAfter = Pending, cur, &retire
				return nil
			}
			blocks := SplitPEM(ca.Certificates)
			ca.Certificates = joinPEM(blocks[:1]...)
			delete(p.Annotations, AnnotationRetireAfter)
		default:
			return fmt.Errorf("%w for project %s", ErrNoRotation, name)
		}
		return t.write(ctx, cur, p, &res)
	})
	return res, err
}

// Teardown deletes the Project. A missing Project is not an error. When
// shardID is set, a Project of another shard is refused.
func (t *Tool) Teardown(ctx context.Context, name, shardID string) (Result, error) {
	p := &infrav1alpha1.Project{}
	if err := t.Client.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return Result{Outcome: Unchanged}, nil
		}
		return Result{}, fmt.Errorf("reading project %s: %w", name, err)
	}
	if shardID != "" && p.Spec.ShardID != shardID {
		return Result{}, fmt.Errorf("project %s is assigned to shard %s, not %s: refusing teardown", name, p.Spec.ShardID, shardID)
	}
	if err := t.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID}); err != nil && !apierrors.IsNotFound(err) {
		return Result{}, fmt.Errorf("deleting project %s: %w", name, err)
	}
	return Result{Outcome: Deleted}, nil
}
