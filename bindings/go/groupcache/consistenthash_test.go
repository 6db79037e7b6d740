// SPDX-License-Identifier: Apache-2.0

package groupcache

import (
	"fmt"
	"testing"

	"chash.dev/chash/internal/testkeys"
	"github.com/golang/groupcache/consistenthash"
)

func peers(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("http://10.0.%d.%d:8000", i/250, i%250+1)
	}
	return out
}

// The drop-in against the real groupcache (Debian's source, built here) on 100,000 keys, and
// against `chash route --preset groupcache` with the same replicas.
func TestSameNodeAsGroupcacheForEveryKey(t *testing.T) {
	keys := testkeys.Make(100000)
	cliKeys := make([]string, 0, len(keys))
	for _, k := range keys {
		if !containsByte(k, 0) { // the CLI reads lines of text
			cliKeys = append(cliKeys, k)
		}
	}
	for _, c := range []struct{ nodes, replicas int }{{1, 50}, {10, 50}, {100, 50}, {1000, 50}, {10, 3}, {100, 160}} {
		t.Run(fmt.Sprintf("nodes=%d/replicas=%d", c.nodes, c.replicas), func(t *testing.T) {
			nodes := peers(c.nodes)
			peer := consistenthash.New(c.replicas, nil)
			peer.Add(nodes...)
			m := New(c.replicas)
			m.Add(nodes...)
			for _, k := range keys {
				if got, want := m.Get(k), peer.Get(k); got != want {
					t.Fatalf("Get(%q) = %q, groupcache says %q", k, got, want)
				}
			}
			for i, got := range m.GetAll(keys) {
				if want := peer.Get(keys[i]); got != want {
					t.Fatalf("GetAll: key %q -> %q, groupcache says %q", keys[i], got, want)
				}
			}
			cli, err := testkeys.CLI([]string{"--preset", "groupcache", "--vnodes", fmt.Sprint(c.replicas),
				"--nodes", join(nodes)}, cliKeys)
			if err != nil {
				t.Fatal(err)
			}
			for i, k := range cliKeys {
				if want := peer.Get(k); cli[i] != want {
					t.Fatalf("chash route: key %q -> %q, groupcache says %q", k, cli[i], want)
				}
			}
		})
	}
}

func TestAddInStepsAndTwiceAsGroupcache(t *testing.T) {
	keys := testkeys.Make(5000)
	peer := consistenthash.New(20, nil)
	m := New(20)
	if !m.IsEmpty() || m.Get("k") != "" || m.GetAll([]string{"a"})[0] != "" {
		t.Fatal("an empty Map routes nowhere, as consistenthash's")
	}
	for _, step := range [][]string{{"a", "b"}, {"c"}, {"a", "d", "d"}} {
		peer.Add(step...)
		m.Add(step...)
		for _, k := range keys {
			if got, want := m.Get(k), peer.Get(k); got != want {
				t.Fatalf("after %v: Get(%q) = %q, groupcache says %q", step, k, got, want)
			}
		}
	}
	if m.IsEmpty() {
		t.Fatal("IsEmpty after Add")
	}
}

func TestBadReplicasIsAnError(t *testing.T) {
	m := New(-1)
	if err := m.TryAdd("a"); err == nil {
		t.Fatal("replicas -1 accepted")
	}
	if !m.IsEmpty() {
		t.Fatal("a refused Add changed the Map")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("Add with replicas -1 did not panic")
		}
	}()
	m.Add("a")
}

func containsByte(s string, b byte) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return true
		}
	}
	return false
}

func join(nodes []string) string {
	out := ""
	for i, n := range nodes {
		if i > 0 {
			out += ","
		}
		out += n
	}
	return out
}
