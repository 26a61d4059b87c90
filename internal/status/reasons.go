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

// Package status holds the condition types, reasons and constructors the
// translator uses for desired status, and the one merge helper the status
// writer applies before patching. Everything here is pure.
package status

import (
	gwv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Condition types. Gateway API types are re-exported as plain strings so
// callers need one import.
const (
	TypeAccepted     = string(gwv1.GatewayConditionAccepted)
	TypeProgrammed   = string(gwv1.GatewayConditionProgrammed)
	TypeResolvedRefs = string(gwv1.ListenerConditionResolvedRefs)
	TypeConflicted   = string(gwv1.ListenerConditionConflicted)
	// TypeDedicatedProxyReady is set on dedicated Gateways: True once the
	// dedicated proxy Deployment's current rollout has begun and a pod is
	// ready; until then the shared pool keeps serving the Gateway
	// (make-before-break). provision.DedicatedProxyReady decides it.
	TypeDedicatedProxyReady = "gateway.coxswain-labs.dev/DedicatedProxyReady"
)

// Reasons. Gateway API reasons where the spec names one; ours otherwise.
const (
	ReasonAccepted           = string(gwv1.GatewayReasonAccepted)
	ReasonInvalidParameters  = string(gwv1.GatewayReasonInvalidParameters)
	ReasonProgrammed         = string(gwv1.GatewayReasonProgrammed)
	ReasonInvalid            = string(gwv1.GatewayReasonInvalid)
	ReasonPending            = string(gwv1.GatewayReasonPending)
	ReasonNoResources        = string(gwv1.GatewayReasonNoResources)
	ReasonListenersNotValid  = string(gwv1.GatewayReasonListenersNotValid)
	ReasonAddressNotAssigned = string(gwv1.GatewayReasonAddressNotAssigned)

	// Listener reasons.
	ReasonUnsupportedProtocol   = string(gwv1.ListenerReasonUnsupportedProtocol)
	ReasonUnsupportedValue      = string(gwv1.ListenerReasonUnsupportedValue)
	ReasonResolvedRefs          = string(gwv1.ListenerReasonResolvedRefs)
	ReasonInvalidCertificateRef = string(gwv1.ListenerReasonInvalidCertificateRef)
	ReasonInvalidRouteKinds     = string(gwv1.ListenerReasonInvalidRouteKinds)
	ReasonRefNotPermitted       = string(gwv1.ListenerReasonRefNotPermitted)
	ReasonNoConflicts           = string(gwv1.ListenerReasonNoConflicts)
	ReasonHostnameConflict      = string(gwv1.ListenerReasonHostnameConflict)
	ReasonProtocolConflict      = string(gwv1.ListenerReasonProtocolConflict)

	// Route reasons.
	ReasonNotAllowedByListeners      = string(gwv1.RouteReasonNotAllowedByListeners)
	ReasonNoMatchingListenerHostname = string(gwv1.RouteReasonNoMatchingListenerHostname)
	ReasonNoMatchingParent           = string(gwv1.RouteReasonNoMatchingParent)
	ReasonBackendNotFound            = string(gwv1.RouteReasonBackendNotFound)
	ReasonInvalidKind                = string(gwv1.RouteReasonInvalidKind)

	// ReasonNameConflict: Accepted=False on a Gateway whose dedicated object
	// names ({gateway}-{gatewayclass}) an older Gateway of its namespace
	// already has.
	ReasonNameConflict = "NameConflict"

	// ReasonReady is the DedicatedProxyReady=True reason.
	ReasonReady = "Ready"
	// ReasonProvisioning is the DedicatedProxyReady=False reason: the
	// dedicated proxies are being created or rolled out.
	ReasonProvisioning = "Provisioning"
	// ReasonSnapshotRejected is our Programmed=False reason when a proxy of
	// the Gateway's scope refused the snapshot holding its current
	// generation. None of the spec's reasons fits: Invalid blames the
	// Gateway's spec, which may be fine (a port the node cannot bind, a
	// proxy older than the controller), and Pending promises progress that
	// will not come, since the refused snapshot is not resent.
	ReasonSnapshotRejected = "SnapshotRejected"

	// Event reasons (Warning Events recorded by the controller).
	EventInvalidAnnotation       = "InvalidAnnotation"
	EventRouteConflict           = "RouteConflict"
	EventNoInternalPortAvailable = "NoInternalPortAvailable"
	// EventInternalPortRemapped: a shared Gateway listener's persisted
	// internal port could not be kept and was reassigned.
	EventInternalPortRemapped = "InternalPortRemapped"
	EventInvalidTLSSecret     = "InvalidTLSSecret"
	EventInvalidPath          = "InvalidPath"
	EventInvalidBackend       = "InvalidBackend"
	// EventSnapshotRejected: a proxy refused the snapshot holding a
	// Gateway's current generation (Warning on that Gateway).
	EventSnapshotRejected = ReasonSnapshotRejected
)
