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

package infra

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1alpha1 "github.com/coxswain-go/coxswain/api/infra/v1alpha1"
	"github.com/coxswain-go/coxswain/internal/infra/trust"
)

// The AgentCAValid condition and its reasons (see api/infra/v1alpha1).
const (
	ConditionAgentCAValid = infrav1alpha1.ConditionAgentCAValid
	ReasonAgentCAParsed   = infrav1alpha1.ReasonAgentCAParsed
	ReasonInvalidAgentCA  = infrav1alpha1.ReasonInvalidAgentCA
)

// SetAgentCACondition sets (or removes) the AgentCAValid condition of s from
// spec. Like NextStatus it is pure and only writes status.
func SetAgentCACondition(s *infrav1alpha1.ProjectStatus, spec infrav1alpha1.ProjectSpec, gen int64, at time.Time) {
	if spec.AgentCA == nil {
		meta.RemoveStatusCondition(&s.Conditions, ConditionAgentCAValid)
		return
	}
	cond := metav1.Condition{Type: ConditionAgentCAValid, Status: metav1.ConditionTrue, Reason: ReasonAgentCAParsed,
		ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(at.UTC().Truncate(time.Second))}
	certs, err := trust.ParseAgentCA(spec.AgentCA.Certificates)
	if err != nil {
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonInvalidAgentCA
		cond.Message = fmt.Sprintf("relays refuse this agent CA: %v", err)
		if len(cond.Message) > maxMessage {
			cond.Message = cond.Message[:maxMessage]
		}
	} else {
		cond.Message = fmt.Sprintf("%d CA certificate(s) parsed", len(certs))
	}
	meta.SetStatusCondition(&s.Conditions, cond)
}
