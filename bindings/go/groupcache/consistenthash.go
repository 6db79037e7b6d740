// SPDX-License-Identifier: Apache-2.0

// Package groupcache is a drop-in for groupcache's consistenthash.Map as groupcache's HTTPPool
// builds it (consistenthash.New(replicas, nil): CRC-32 IEEE): the same node for every key, from
// libchash's "groupcache" preset (checked key for key against Debian's
// golang-github-golang-groupcache-dev in the tests).
//
//	// before: m := consistenthash.New(50, nil)
//	m := groupcache.New(50)
//	m.Add("http://10.0.0.1:8000", "http://10.0.0.2:8000")
//	peer := m.Get("user:42")
//
// Unlike consistenthash.Map, a Map is safe for concurrent Get calls, and GetAll routes many keys
// in one call. Add rebuilds the native router (as consistenthash re-sorts its ring), so like the
// original it is meant for setup, not for the hot path; Add must not race with Get.
package groupcache

import (
	"fmt"

	"chash.dev/chash"
)

// Map maps keys to the nodes added, as consistenthash.Map does.
type Map struct {
	replicas int
	nodes    []string
	seen     map[string]bool
	router   *chash.Router
}

// New is consistenthash.New(replicas, nil). Only the default hash (CRC-32 IEEE) exists here: a
// custom hash function would have to run in Go, which is what this package replaces.
func New(replicas int) *Map {
	return &Map{replicas: replicas, seen: map[string]bool{}}
}

// IsEmpty reports whether no node was added.
func (m *Map) IsEmpty() bool { return len(m.nodes) == 0 }

// Add adds nodes. A node added twice keeps its place: in consistenthash its points are written
// again with the same owner, which changes no answer.
func (m *Map) Add(nodes ...string) {
	if err := m.TryAdd(nodes...); err != nil {
		panic(err)
	}
}

// TryAdd is Add returning libchash's error (a replicas count or node name libchash refuses)
// instead of panicking; the Map is unchanged then.
func (m *Map) TryAdd(nodes ...string) error {
	next := append([]string(nil), m.nodes...)
	seen := map[string]bool{}
	for n := range m.seen {
		seen[n] = true
	}
	for _, n := range nodes {
		if !seen[n] {
			seen[n] = true
			next = append(next, n)
		}
	}
	if len(next) == 0 {
		return nil
	}
	list := make([]chash.Node, len(next))
	for i, n := range next {
		list[i] = chash.Node{Name: n, Weight: 1}
	}
	r, err := chash.New(chash.Spec{Preset: "groupcache",
		Options: []chash.Option{{Name: "vnodes", Value: fmt.Sprint(m.replicas)}}}, list)
	if err != nil {
		return err
	}
	if m.router != nil {
		m.router.Close()
	}
	m.router, m.nodes, m.seen = r, next, seen
	return nil
}

// Get is the node for key, or "" when the Map is empty.
func (m *Map) Get(key string) string {
	if m.router == nil {
		return ""
	}
	return m.router.Route(key)
}

// GetAll is Get for many keys in one native call.
func (m *Map) GetAll(keys []string) []string {
	if m.router == nil {
		return make([]string, len(keys))
	}
	return m.router.RouteAll(keys)
}
