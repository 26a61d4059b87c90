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

package controller

import (
	"reflect"
	"sync"
	"unique"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// internLimit is the longest string internStrings makes canonical: longer
// ones (certificates, annotations holding documents) are rarely shared.
const internLimit = 128

// internStrings replaces the strings reachable from obj, a pointer to a
// decoded object, through exported struct fields, slice elements, pointers
// and map[string]string keys and values, by their canonical copies
// (unique.Make): the decoder makes a new string of every value of every
// object, and a cluster's routes repeat most of theirs (API groups and
// kinds, condition types, reasons and messages, the controller's name,
// namespaces, match and filter types). The name, uid and resourceVersion
// of an object, its own, are left alone.
func internStrings(obj any) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return
	}
	internValue(v.Elem())
}

func internValue(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if s := v.String(); len(s) <= internLimit && v.CanSet() {
			v.SetString(unique.Make(s).Value())
		}
	case reflect.Pointer:
		if !v.IsNil() {
			internValue(v.Elem())
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			internValue(v.Index(i))
		}
	case reflect.Struct:
		for _, i := range stringFields(v.Type()) {
			internValue(v.Field(i))
		}
	case reflect.Map:
		internMap(v)
	}
}

// fieldPlans holds, for each struct type met, the fields internValue
// visits (stringFields).
var fieldPlans sync.Map

// stringFields lists the fields of struct type t that may hold a string
// internStrings makes canonical: exported, not the object's own name, uid
// or version (ownString), and of a type that can reach a string.
func stringFields(t reflect.Type) []int {
	if p, ok := fieldPlans.Load(t); ok {
		return p.([]int)
	}
	var out []int
	for i := range t.NumField() {
		f := t.Field(i)
		if f.IsExported() && !ownString(t, f.Name) && reachesString(f.Type, map[reflect.Type]bool{}) {
			out = append(out, i)
		}
	}
	fieldPlans.Store(t, out)
	return out
}

// reachesString reports whether a value of type t can hold a string
// internValue visits; seen breaks cycles.
func reachesString(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.String:
		return true
	case reflect.Pointer:
		return reachesString(t.Elem(), seen)
	case reflect.Slice:
		return t.Elem().Kind() != reflect.Uint8 && reachesString(t.Elem(), seen)
	case reflect.Map:
		return t == reflect.TypeFor[map[string]string]()
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && reachesString(f.Type, seen) {
				return true
			}
		}
	}
	return false
}

// metaType is ObjectMeta's type, whose own strings internStrings leaves.
var metaType = reflect.TypeFor[metav1.ObjectMeta]()

// ownString reports whether field name of t holds a string of the object
// alone: interning it would only copy it.
func ownString(t reflect.Type, name string) bool {
	if t != metaType {
		return false
	}
	switch name {
	case "Name", "GenerateName", "UID", "ResourceVersion":
		return true
	}
	return false
}

// internMap makes a map[string]string's keys and values canonical, in a
// new map (a map's entries cannot be set in place); other maps are left.
func internMap(v reflect.Value) {
	if v.IsNil() || v.Type() != reflect.TypeFor[map[string]string]() || !v.CanSet() {
		return
	}
	m := v.Interface().(map[string]string)
	out := make(map[string]string, len(m))
	for k, s := range m {
		if len(k) <= internLimit {
			k = unique.Make(k).Value()
		}
		if len(s) <= internLimit {
			s = unique.Make(s).Value()
		}
		out[k] = s
	}
	v.Set(reflect.ValueOf(out))
}
