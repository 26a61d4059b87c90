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

package main

import (
	"reflect"
	"testing"
)

func TestDecode(t *testing.T) {
	out := "\n" + // a standard-library package
		"k8s.io/client-go|v0.37.2|\n" +
		"k8s.io/api|v0.0.0|v0.37.2|r\n" +
		"example.com/local|v1.0.0||r\n"
	vs, pinned, err := decode(out)
	if err != nil {
		t.Fatal(err)
	}
	wantVs := versions{"k8s.io/client-go": "v0.37.2", "k8s.io/api": "v0.37.2", "example.com/local": ""}
	if !reflect.DeepEqual(vs, wantVs) {
		t.Errorf("versions = %v, want %v", vs, wantVs)
	}
	wantPinned := replaced{"k8s.io/api": true, "example.com/local": true}
	if !reflect.DeepEqual(pinned, wantPinned) {
		t.Errorf("replaced = %v, want %v", pinned, wantPinned)
	}
	if _, _, err := decode("k8s.io/api v0.37.2\n"); err == nil {
		t.Error("a line without separators decoded")
	}
}

func TestLagging(t *testing.T) {
	root := versions{
		"google.golang.org/grpc":     "v1.85.0",
		"google.golang.org/protobuf": "v1.36.12",
		"k8s.io/client-go":           "v0.37.2",
		"k8s.io/api":                 "v0.38.0",
		"golang.org/x/net":           "v0.60.0",
		"example.com/local":          "v1.0.0",
		"github.com/only/root":       "v1.0.0",
	}
	tool := versions{
		"google.golang.org/grpc":     "v1.82.1",                                // older: lags
		"google.golang.org/protobuf": "v1.36.12-0.20260120151049-f2248ac996af", // a pseudo-version before v1.36.12: lags
		"k8s.io/client-go":           "v0.37.2",                                // the same
		"k8s.io/api":                 "v0.37.2",                                // older, but replaced
		"golang.org/x/net":           "v0.61.0",                                // newer: left alone
		"example.com/local":          "",                                       // a local directory
		"github.com/only/tool":       "v1.0.0",                                 // root does not build it
	}
	pinned := replaced{"k8s.io/api": true, "example.com/local": true}
	got := lagging(root, tool, pinned)
	want := []lag{
		{Path: "google.golang.org/grpc", Have: "v1.82.1", Want: "v1.85.0"},
		{Path: "google.golang.org/protobuf", Have: "v1.36.12-0.20260120151049-f2248ac996af", Want: "v1.36.12"},
		{Path: "k8s.io/api", Have: "v0.37.2", Want: "v0.38.0", Replaced: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("lagging =\n%v\nwant\n%v", got, want)
	}
	if s := got[2].String(); s != "k8s.io/api v0.37.2 < v0.38.0 (pinned by a replace directive: raise it by hand)" {
		t.Errorf("String() = %q", s)
	}
}
