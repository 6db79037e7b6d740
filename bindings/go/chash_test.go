// SPDX-License-Identifier: Apache-2.0

package chash

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"chash.dev/chash/internal/testkeys"
)

var nodes = []string{"10.0.0.1:11211", "10.0.0.2:11211", "10.0.0.3:11211", "10.0.0.4:11211"}

func mustPreset(t *testing.T, preset string, names []string) *Router {
	t.Helper()
	r, err := NewPreset(preset, names)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func TestRoutesAsTheCLI(t *testing.T) {
	keys := testkeys.Make(20000)
	text := keys[:0:0]
	for _, k := range keys {
		if !strings.ContainsRune(k, 0) {
			text = append(text, k)
		}
	}
	for _, args := range [][]string{{"--preset", "ketama"}, {"--algo", "maglev"},
		{"--ring", "points={name}#VN{i}; vnodes=150; hash=guava-long"}} {
		var spec Spec
		switch args[0] {
		case "--preset":
			spec.Preset = args[1]
		case "--algo":
			spec.Algorithm = args[1]
		default:
			spec.Ring = args[1]
		}
		list := make([]Node, len(nodes))
		for i, n := range nodes {
			list[i] = Node{n, 1}
		}
		r, err := New(spec, list)
		if err != nil {
			t.Fatal(err)
		}
		want, err := testkeys.CLI(append(args, "--nodes", strings.Join(nodes, ",")), text)
		if err != nil {
			t.Fatal(err)
		}
		batch := r.RouteAll(text)
		for i, k := range text {
			if got := r.Route(k); got != want[i] || batch[i] != want[i] || r.RouteBytes([]byte(k)) != want[i] {
				t.Fatalf("%v: key %q -> %q (batch %q), chash route says %q", args, k, got, batch[i], want[i])
			}
		}
		r.Close()
	}
}

func TestBatchEqualsSingleCalls(t *testing.T) {
	r, err := New(Spec{Algorithm: "ring", Hash: "md5"}, []Node{{"a", 1}, {"b", 2}, {"c", 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	keys := testkeys.Make(3000)
	keys[3], keys[2999] = "", ""
	got := r.RouteAllIndexes(keys, nil)
	for i, k := range keys {
		if int(got[i]) != r.RouteIndex(k) {
			t.Fatalf("key %q: batch %d, single %d", k, got[i], r.RouteIndex(k))
		}
	}
	if len(r.RouteAllIndexes(nil, nil)) != 0 || len(r.RouteAllIndexes([]string{"", ""}, nil)) != 2 {
		t.Fatal("empty batches")
	}
}

// Batches go to C in chunks (batchKeys keys, batchBytes bytes) packed by hand for keys of 4 to 32
// bytes: every key length 0..80 at every position of a chunk, keys that do not fit the rest of a
// chunk's buffer, and keys longer than the whole buffer (routed alone) must route as one by one.
func TestBatchChunksEqualSingleCalls(t *testing.T) {
	r := mustPreset(t, "groupcache", nodes)
	var keys []string
	for i := 0; i < 5000; i++ {
		k := strings.Repeat(string(rune('a'+i%26)), i%81) // lengths 0..80
		if len(k) > 0 {
			k = k[:len(k)-1] + string(rune('0'+i%10)) // the last byte matters too
		}
		keys = append(keys, k)
		switch i {
		case 700, 2047:
			keys = append(keys, strings.Repeat("x", batchBytes), strings.Repeat("y", batchBytes+1))
		case 1500:
			keys = append(keys, strings.Repeat("z", batchBytes-100), "tail-of-a-full-buffer")
		}
	}
	idx := r.RouteAllIndexes(keys, make([]int32, 3)) // a short out slice is replaced
	names := r.RouteAll(keys)
	if len(idx) != len(keys) || len(names) != len(keys) {
		t.Fatalf("lengths %d %d, want %d", len(idx), len(names), len(keys))
	}
	for i, k := range keys {
		if want := r.RouteIndex(k); int(idx[i]) != want || names[i] != r.Route(k) {
			t.Fatalf("key %d (%d bytes): batch %d %q, single %d %q", i, len(k), idx[i], names[i], want, r.Route(k))
		}
	}
	reuse := make([]int32, len(keys)+10)
	if got := r.RouteAllIndexes(keys, reuse); &got[0] != &reuse[0] || len(got) != len(keys) {
		t.Fatal("a large enough out slice is not reused")
	}
}

func TestUnroutableKeys(t *testing.T) {
	r := mustPreset(t, "nginx-ip-hash", []string{"a", "b"})
	if r.RouteIndex("not an address") != NoNode || r.Route("not an address") != "" {
		t.Fatal("a key nginx-ip-hash cannot route has an owner")
	}
	if got := r.RouteAllIndexes([]string{"nope", "10.1.2.3"}, nil); got[0] != NoNode || got[1] == NoNode {
		t.Fatalf("batch: %v", got)
	}
}

func TestReplicas(t *testing.T) {
	r := mustPreset(t, "ketama", nodes)
	for _, k := range testkeys.Make(200) {
		rep, err := r.Replicas(k, 3)
		if err != nil || len(rep) != 3 || rep[0] != r.Route(k) || rep[1] == rep[0] || rep[2] == rep[1] || rep[2] == rep[0] {
			t.Fatalf("Replicas(%q) = %v, %v", k, rep, err)
		}
		if all, _ := r.Replicas(k, 10); len(all) != 4 {
			t.Fatalf("Replicas(%q, 10) = %v", k, all)
		}
	}
	if _, err := r.Replicas("k", -1); err == nil {
		t.Fatal("n = -1 accepted")
	}
}

func TestChangesReturnNewRouters(t *testing.T) {
	r := mustPreset(t, "ketama", nodes)
	keys := testkeys.Make(5000)
	before := r.RouteAll(keys)
	removed, err := r.WithoutNode("10.0.0.2:11211")
	if err != nil {
		t.Fatal(err)
	}
	defer removed.Close()
	added, err := r.WithNode("10.0.0.5:11211", 1)
	if err != nil {
		t.Fatal(err)
	}
	defer added.Close()
	fresh := mustPreset(t, "ketama", append(append([]string{}, nodes...), "10.0.0.5:11211"))
	for i, k := range keys {
		if before[i] != "10.0.0.2:11211" && removed.Route(k) != before[i] {
			t.Fatalf("key %q moved from %q though its node stayed", k, before[i])
		}
		if added.Route(k) != fresh.Route(k) {
			t.Fatalf("key %q: added %q, a fresh build %q", k, added.Route(k), fresh.Route(k))
		}
		if r.Route(k) != before[i] {
			t.Fatal("the old router changed")
		}
	}
	if got := strings.Join(removed.Nodes(), ","); got != "10.0.0.1:11211,10.0.0.3:11211,10.0.0.4:11211" {
		t.Fatal(got)
	}
	ring, _ := New(Spec{Algorithm: "ring"}, []Node{{"a", 1}, {"b", 1}})
	defer ring.Close()
	drained, err := ring.WithWeight("b", 0)
	if err != nil || drained.Weight(1) != 0 || drained.Route("x") != "a" {
		t.Fatalf("drain: %v", err)
	}
	drained.Close()
}

func TestErrorsNameTheProblem(t *testing.T) {
	var e *Error
	_, err := NewPreset("ketamaa", nodes)
	if !errors.As(err, &e) || e.Status != "CHASH_ERR_PARSE" || e.Code != 7 || !strings.Contains(e.Error(), "ketamaa") {
		t.Fatalf("unknown preset: %v", err)
	}
	for name, c := range map[string]struct {
		spec   Spec
		nodes  []Node
		status string
	}{
		"no nodes":     {Spec{Preset: "ketama"}, nil, "CHASH_ERR_EMPTY_NODE_SET"},
		"duplicate":    {Spec{Preset: "ketama"}, []Node{{"a", 1}, {"a", 1}}, "CHASH_ERR_DUPLICATE_NODE"},
		"empty name":   {Spec{Algorithm: "ring"}, []Node{{"", 1}}, "CHASH_ERR_INVALID_ARGUMENT"},
		"no spec":      {Spec{}, []Node{{"a", 1}}, ""},
		"bad option":   {Spec{Algorithm: "ring", Options: []Option{{"vnodes", "many"}}}, []Node{{"a", 1}}, ""},
		"unknown flag": {Spec{Algorithm: "ring", Options: []Option{{"nope", "1"}}}, []Node{{"a", 1}}, ""},
		"bad ring":     {Spec{Ring: "points={name; hash=nope"}, []Node{{"a", 1}}, ""},
		"zero weights": {Spec{Algorithm: "ring"}, []Node{{"a", 0}}, "CHASH_ERR_EMPTY_NODE_SET"},
	} {
		r, err := New(c.spec, c.nodes)
		if err == nil {
			r.Close()
			t.Fatalf("%s: accepted", name)
		}
		if !errors.As(err, &e) || (c.status != "" && e.Status != c.status) || e.Message == "" {
			t.Fatalf("%s: %v", name, err)
		}
	}
	r := mustPreset(t, "ketama", nodes)
	if _, err := r.WithoutNode("nope"); !errors.As(err, &e) || e.Status != "CHASH_ERR_UNKNOWN_NODE" {
		t.Fatalf("remove unknown: %v", err)
	}
	if _, err := r.WithNode(nodes[0], 1); !errors.As(err, &e) || e.Status != "CHASH_ERR_DUPLICATE_NODE" {
		t.Fatalf("add duplicate: %v", err)
	}
}

func TestClosedRouterPanicsWithErrClosed(t *testing.T) {
	r, _ := NewPreset("ketama", nodes)
	r.Close()
	r.Close()
	defer func() {
		if recover() != ErrClosed {
			t.Fatal("no ErrClosed panic")
		}
	}()
	r.Route("k")
}

func TestNamesAreBytes(t *testing.T) {
	names := []string{"ü-node", "節点", "a\x00b"}
	list := []Node{{names[0], 1}, {names[1], 1}, {names[2], 1}}
	r, err := New(Spec{Algorithm: "rendezvous"}, list)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if strings.Join(r.Nodes(), "|") != strings.Join(names, "|") {
		t.Fatalf("%q", r.Nodes())
	}
}

func TestGoroutinesShareARouter(t *testing.T) {
	r := mustPreset(t, "ketama", nodes)
	keys := testkeys.Make(20000)
	want := r.RouteAllIndexes(keys, nil)
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, k := range keys {
				if r.RouteIndex(k) != int(want[i]) {
					errs <- k
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for k := range errs {
		t.Fatalf("key %q routed differently under concurrency", k)
	}
}

func TestDescribe(t *testing.T) {
	r := mustPreset(t, "ketama", nodes)
	if !strings.Contains(r.Describe(), "ketama") || Version() == "" || len(Presets()) < 10 {
		t.Fatal(r.Describe(), Version(), Presets())
	}
}
