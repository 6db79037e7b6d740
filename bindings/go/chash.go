// SPDX-License-Identifier: Apache-2.0

// Package chash routes keys to nodes with libchash, exactly as `chash route`, chash-proxy and
// the C++ chash::Router do for the same spec — for a compatibility preset, as the peer itself
// picks (docs/COMPATIBILITY.md). It is a thin cgo layer over the C ABI (libchash_c,
// chash/chash_c.h): nothing is hashed in Go.
//
//	r, err := chash.NewPreset("ketama", []string{"10.0.0.1:11211", "10.0.0.2:11211"})
//	if err != nil { ... }
//	defer r.Close()
//	node := r.Route("user:42")
//
// A Router is immutable: any number of goroutines may route through it at once. Membership
// changes (WithNode, WithoutNode, WithWeight) return a new Router and leave the old one routing
// as before. Close frees the native router; it must not race with other calls on that Router.
//
// Building: cgo needs chash/chash_c.h and libchash_c.so. Installed under /usr/local they are
// found as they are; elsewhere set CGO_CFLAGS and CGO_LDFLAGS, e.g. from
// `pkg-config --cflags --libs chash_c` (docs/BINDINGS.md).
package chash

/*
#cgo CFLAGS: -I${SRCDIR}/../common -O2
// -O2: a CGO_CFLAGS in the environment (bench/bindings/run.sh, the CMake build's go vet and test
// set one for the include path) replaces cgo's default "-g -O2", and chash_route_packed, compiled
// here from chash_packed.h, ran unoptimised: 10% of GetAll's profile. GetAll, 100,000 keys
// (bench/bindings/go): 17 / 17 / 20 -> 13 / 14 / 15 ns a key at 10 / 100 / 1,000 nodes.
#cgo LDFLAGS: -lchash_c
#include <stdlib.h>
#include "chash/chash_c.h"
#include "chash_packed.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// Error is a spec, node list or change libchash refused; Code is its CHASH_ERR_* code.
type Error struct {
	Code    int
	Status  string // the code's name, "CHASH_ERR_PARSE"
	Message string // libchash's message, naming the problem
}

func (e *Error) Error() string { return "chash: " + e.Message + " (" + e.Status + ")" }

// ErrClosed is returned (and Route panics with it) when a closed Router is used.
var ErrClosed = errors.New("chash: router is closed")

// takeError turns a C status and error into an *Error and frees the C error.
func takeError(rc C.int, cerr *C.chash_error) error {
	msg := "out of memory"
	if cerr != nil {
		msg = C.GoString(C.chash_error_message(cerr))
		C.chash_error_free(cerr)
	}
	return &Error{Code: int(rc), Status: C.GoString(C.chash_status_name(rc)), Message: msg}
}

// Spec says how keys are routed: exactly one of Preset, Algorithm and Ring, and the rest of
// `chash route`'s flags (empty strings leave chash's defaults).
type Spec struct {
	Preset    string   // a compatibility preset: "ketama", "guava", "groupcache", ...
	Algorithm string   // a native algorithm: "ring", "jump", "maglev", ...
	Ring      string   // a ring spec (docs/CLI.md), e.g. "points={name}#VN{i}; hash=guava-long"
	Hash      string   // the key hash
	HashTag   string   // two characters, e.g. "{}"
	Options   []Option // any other flag: "vnodes", "preset-option", ... in order
}

// Option is one `chash route` flag without its dashes, and its value as text.
type Option struct{ Name, Value string }

// Node is a node name (any bytes) and its weight; its index is its place in the list.
type Node struct {
	Name   string
	Weight uint32
}

// Router is an immutable libchash router.
type Router struct {
	r     *C.chash_router
	names []string // by index: Route answers with an index from C and a lookup here
}

// NoNode is what RouteIndex returns for a key that cannot be routed.
const NoNode = -1

// cstrings holds C copies of Go strings until free.
type cstrings []unsafe.Pointer

func (c *cstrings) str(s string) *C.char {
	if s == "" {
		return nil
	}
	p := C.CString(s)
	*c = append(*c, unsafe.Pointer(p))
	return p
}

func (c *cstrings) free() {
	for _, p := range *c {
		C.free(p)
	}
}

// cAlloc is zeroed C memory for n items of size bytes; running out of it is Go's fatal error,
// as for Go's own allocations.
func cAlloc(n int, size C.size_t) unsafe.Pointer {
	p := C.calloc(C.size_t(n), size)
	if p == nil {
		panic("chash: out of memory")
	}
	return p
}

// New builds a router for spec over nodes (weight 0 in a Node means 0, not 1).
func New(spec Spec, nodes []Node) (*Router, error) {
	var keep cstrings
	defer keep.free()
	var cspec C.chash_spec
	cspec.preset = keep.str(spec.Preset)
	cspec.algorithm = keep.str(spec.Algorithm)
	cspec.ring = keep.str(spec.Ring)
	cspec.hash = keep.str(spec.Hash)
	cspec.hash_tag = keep.str(spec.HashTag)
	// C memory for every array handed over: cgo forbids Go memory holding Go pointers.
	n := len(nodes)
	if len(spec.Options) > 0 {
		opts := unsafe.Slice((*C.chash_option)(cAlloc(len(spec.Options), C.sizeof_chash_option)), len(spec.Options))
		defer C.free(unsafe.Pointer(&opts[0]))
		for i, o := range spec.Options {
			opts[i].name = C.CString(o.Name)
			opts[i].value = C.CString(o.Value)
			keep = append(keep, unsafe.Pointer(opts[i].name), unsafe.Pointer(opts[i].value))
		}
		cspec.options = &opts[0]
		cspec.num_options = C.size_t(len(spec.Options))
	}
	var cnodes C.chash_nodes
	if n > 0 {
		names := unsafe.Slice((**C.char)(cAlloc(n, C.size_t(unsafe.Sizeof((*C.char)(nil))))), n)
		defer C.free(unsafe.Pointer(&names[0]))
		lens := unsafe.Slice((*C.size_t)(cAlloc(n, C.sizeof_size_t)), n)
		defer C.free(unsafe.Pointer(&lens[0]))
		weights := unsafe.Slice((*C.uint32_t)(cAlloc(n, 4)), n)
		defer C.free(unsafe.Pointer(&weights[0]))
		for i, nd := range nodes {
			// C.CBytes, not C.CString: a name may be empty or hold NUL bytes.
			p := C.CBytes([]byte(nd.Name + "\x00"))
			keep = append(keep, p)
			names[i] = (*C.char)(p)
			lens[i] = C.size_t(len(nd.Name))
			weights[i] = C.uint32_t(nd.Weight)
		}
		cnodes.names = &names[0]
		cnodes.name_lengths = &lens[0]
		cnodes.weights = &weights[0]
	}
	cnodes.count = C.size_t(n)
	var out *C.chash_router
	var cerr *C.chash_error
	if rc := C.chash_router_new(&cspec, &cnodes, &out, &cerr); rc != C.CHASH_OK {
		return nil, takeError(rc, cerr)
	}
	return wrap(out), nil
}

// NewPreset builds a router for a compatibility preset over nodes of weight 1.
func NewPreset(preset string, nodes []string) (*Router, error) {
	list := make([]Node, len(nodes))
	for i, n := range nodes {
		list[i] = Node{Name: n, Weight: 1}
	}
	return New(Spec{Preset: preset}, list)
}

func wrap(r *C.chash_router) *Router {
	n := int(C.chash_router_node_count(r))
	names := make([]string, n)
	for i := range names {
		var l C.size_t
		p := C.chash_router_node_name(r, C.uint32_t(i), &l)
		names[i] = C.GoStringN(p, C.int(l))
	}
	router := &Router{r: r, names: names}
	// A Router dropped without Close still frees its native router (Close is the prompt way).
	runtime.SetFinalizer(router, (*Router).Close)
	return router
}

// Close frees the native router; the Router must not be used afterwards. Safe to call twice.
func (r *Router) Close() error {
	if r.r != nil {
		C.chash_router_free(r.r)
		r.r = nil
		runtime.SetFinalizer(r, nil)
	}
	return nil
}

func (r *Router) live() *C.chash_router {
	if r.r == nil {
		panic(ErrClosed)
	}
	return r.r
}

// keyPtr is the address of a string's bytes for a C call that does not keep it: cgo lets C read
// Go memory without pointers for the duration of the call, so no copy is made.
func keyPtr(key string) *C.char {
	if len(key) == 0 {
		return nil
	}
	// The string header's first word is its data pointer (unsafe.StringData is Go 1.20).
	return *(**C.char)(unsafe.Pointer(&key))
}

// RouteIndex is the owner's index in Nodes(), or NoNode when the key cannot be routed.
func (r *Router) RouteIndex(key string) int {
	id := C.chash_route(r.live(), keyPtr(key), C.size_t(len(key)))
	runtime.KeepAlive(r)
	if id == C.CHASH_NO_NODE {
		return NoNode
	}
	return int(id)
}

// Route is the owner's name, or "" when the key cannot be routed.
func (r *Router) Route(key string) string {
	if i := r.RouteIndex(key); i != NoNode {
		return r.names[i]
	}
	return ""
}

// RouteBytes is Route for a key held as bytes.
func (r *Router) RouteBytes(key []byte) string {
	var p *C.char
	if len(key) > 0 {
		p = (*C.char)(unsafe.Pointer(&key[0]))
	}
	id := C.chash_route(r.live(), p, C.size_t(len(key)))
	runtime.KeepAlive(r)
	if id == C.CHASH_NO_NODE {
		return ""
	}
	return r.names[id]
}

// Batches go to C a chunk at a time through a pooled scratch buffer: at most batchKeys keys and
// batchBytes packed bytes a call. The packed copy then stays in cache between Go writing it and C
// reading it, and nothing but the answer is allocated per call (the whole batch packed at once
// took three fresh buffers, 1.6 MiB for 100,000 keys, and the GC cycles they cost: RouteAll and
// GetAll, the same work, measured 23 and 34 ns a key side by side). A cgo call (~100 ns) over
// 1,024 keys is 0.1 ns a key. With packSmall, GetAll on bench/bindings/go's 100,000 keys:
// 13-15 / 14 / 15 -> 12 / 12-13 / 14 ns a key at 10 / 100 / 1,000 nodes.
const (
	batchKeys  = 1024
	batchBytes = 32 << 10
)

type batchScratch struct {
	packed  [batchBytes]byte
	offsets [batchKeys + 1]int32 // offsets[0] stays 0
	ids     [batchKeys]int32     // RouteAll's owner indexes
}

var scratchPool = sync.Pool{New: func() any { return new(batchScratch) }}

// unalignedLoads: the CPU loads and stores 4 and 8 bytes at any address (packSmall).
const unalignedLoads = runtime.GOARCH == "amd64" || runtime.GOARCH == "arm64"

// packSmall copies a key of 4 to 7 or 17 to 32 bytes to dst with two or four loads and stores of
// 4 or 8 bytes, overlapping in the middle (the first and last 4 bytes, say), each inside the key:
// no byte outside it is read. (routeChunk copies 8 to 16 bytes the same way itself.) copy()
// calls memmove, whose call and size dispatch cost more than the copy itself for keys this short:
// packing bench/bindings/go's keys (6 to 20 bytes) took 3.0 ns a key with copy, 1.7 ns this way.
func packSmall(dst unsafe.Pointer, k string) {
	src := *(*unsafe.Pointer)(unsafe.Pointer(&k)) // the string's data pointer
	l := uintptr(len(k))
	if l >= 16 {
		a := *(*uint64)(src)
		b := *(*uint64)(unsafe.Add(src, 8))
		c := *(*uint64)(unsafe.Add(src, l-16))
		d := *(*uint64)(unsafe.Add(src, l-8))
		*(*uint64)(dst) = a
		*(*uint64)(unsafe.Add(dst, 8)) = b
		*(*uint64)(unsafe.Add(dst, l-16)) = c
		*(*uint64)(unsafe.Add(dst, l-8)) = d
		return
	}
	a := *(*uint32)(src)
	b := *(*uint32)(unsafe.Add(src, l-4))
	*(*uint32)(dst) = a
	*(*uint32)(unsafe.Add(dst, l-4)) = b
}

// routeChunk packs a prefix of keys (at least one key) into s and routes it into out (len(out) >=
// the prefix); it returns the prefix's length. A key longer than the buffer goes alone through
// chash_route.
func routeChunk(cr *C.chash_router, keys []string, out []int32, s *batchScratch) int {
	n, used := 0, 0
	limit := len(keys)
	if limit > batchKeys {
		limit = batchKeys
	}
	base := unsafe.Pointer(&s.packed[0])
	for ; n < limit; n++ {
		k := keys[n]
		l := len(k)
		if l > batchBytes-used {
			break
		}
		if unalignedLoads && l >= 8 && l <= 16 {
			// packSmall's middle case written out: the call costs as much as the copy.
			src := *(*unsafe.Pointer)(unsafe.Pointer(&k))
			dst := unsafe.Add(base, used)
			a := *(*uint64)(src)
			b := *(*uint64)(unsafe.Add(src, l-8))
			*(*uint64)(dst) = a
			*(*uint64)(unsafe.Add(dst, l-8)) = b
		} else if unalignedLoads && l >= 4 && l <= 32 {
			packSmall(unsafe.Add(base, used), k)
		} else {
			copy(s.packed[used:], k)
		}
		used += l
		s.offsets[n+1] = int32(used)
	}
	if n == 0 {
		// CHASH_NO_NODE (0xFFFFFFFF) as an int32 is -1 == NoNode.
		out[0] = int32(C.chash_route(cr, keyPtr(keys[0]), C.size_t(len(keys[0]))))
		return 1
	}
	// CHASH_NO_NODE (0xFFFFFFFF) read as an int32 is already -1 == NoNode. The offsets are ours,
	// so the only failure (bad offsets) cannot happen.
	C.chash_route_packed(cr, (*C.char)(unsafe.Pointer(&s.packed[0])), C.size_t(used),
		(*C.int32_t)(unsafe.Pointer(&s.offsets[0])), C.size_t(n),
		(*C.uint32_t)(unsafe.Pointer(&out[0])))
	return n
}

// RouteAllIndexes routes many keys with few C calls (chash_route_batch: keys hashed side by
// side, lookups pipelined); out[i] is keys[i]'s owner index or NoNode. out may be nil or reused:
// it is grown to len(keys) and returned. The keys are packed into a byte buffer first
// (bindings/common/chash_packed.h), a chunk at a time: cgo may pass Go memory to C only when it
// holds no Go pointers, so C cannot be handed an array of string pointers.
func (r *Router) RouteAllIndexes(keys []string, out []int32) []int32 {
	cr := r.live()
	if cap(out) < len(keys) {
		out = make([]int32, len(keys))
	}
	out = out[:len(keys)]
	if len(keys) == 0 {
		return out
	}
	s := scratchPool.Get().(*batchScratch)
	for i := 0; i < len(keys); {
		i += routeChunk(cr, keys[i:], out[i:], s)
	}
	scratchPool.Put(s)
	runtime.KeepAlive(r)
	return out
}

// RouteAll is the owners' names of keys ("" for a key that cannot be routed).
func (r *Router) RouteAll(keys []string) []string {
	cr := r.live()
	out := make([]string, len(keys))
	if len(keys) == 0 {
		return out
	}
	s := scratchPool.Get().(*batchScratch)
	names := r.names
	for i := 0; i < len(keys); {
		n := routeChunk(cr, keys[i:], s.ids[:], s)
		// The chunk's names while its indexes are in cache.
		dst := out[i : i+n]
		for j, id := range s.ids[:n] {
			// One compare for NoNode (-1 is a huge uint) and the bounds check.
			if uint(id) < uint(len(names)) {
				dst[j] = names[id]
			}
		}
		i += n
	}
	scratchPool.Put(s)
	runtime.KeepAlive(r)
	return out
}

// Replicas is up to n distinct nodes for key in the placement's preference order: the owner
// first, then the next choices (the next distinct nodes clockwise on a ring).
func (r *Router) Replicas(key string, n int) ([]string, error) {
	if n < 0 {
		return nil, fmt.Errorf("chash: replicas: n must be >= 0, not %d", n)
	}
	if n > len(r.names) {
		n = len(r.names)
	}
	ids := make([]C.uint32_t, n+1)
	var count C.size_t
	var cerr *C.chash_error
	rc := C.chash_route_n(r.live(), keyPtr(key), C.size_t(len(key)), &ids[0], C.size_t(n), &count, &cerr)
	runtime.KeepAlive(r)
	if rc != C.CHASH_OK {
		return nil, takeError(rc, cerr)
	}
	out := make([]string, int(count))
	for i := range out {
		out[i] = r.names[ids[i]]
	}
	return out, nil
}

type change func(r *C.chash_router, name *C.char, l C.size_t, out **C.chash_router, err **C.chash_error) C.int

func (r *Router) change(name string, f change) (*Router, error) {
	var out *C.chash_router
	var cerr *C.chash_error
	if rc := f(r.live(), keyPtr(name), C.size_t(len(name)), &out, &cerr); rc != C.CHASH_OK {
		return nil, takeError(rc, cerr)
	}
	runtime.KeepAlive(r)
	return wrap(out), nil
}

// WithNode is a new Router with name appended with weight; r is unchanged.
func (r *Router) WithNode(name string, weight uint32) (*Router, error) {
	return r.change(name, func(cr *C.chash_router, p *C.char, l C.size_t, o **C.chash_router, e **C.chash_error) C.int {
		return C.chash_router_add_node(cr, p, l, C.uint32_t(weight), o, e)
	})
}

// WithoutNode is a new Router without name (later nodes move down one index); r is unchanged.
func (r *Router) WithoutNode(name string) (*Router, error) {
	return r.change(name, func(cr *C.chash_router, p *C.char, l C.size_t, o **C.chash_router, e **C.chash_error) C.int {
		return C.chash_router_remove_node(cr, p, l, o, e)
	})
}

// WithWeight is a new Router where name has weight; r is unchanged.
func (r *Router) WithWeight(name string, weight uint32) (*Router, error) {
	return r.change(name, func(cr *C.chash_router, p *C.char, l C.size_t, o **C.chash_router, e **C.chash_error) C.int {
		return C.chash_router_set_weight(cr, p, l, C.uint32_t(weight), o, e)
	})
}

// Nodes is the node names in index order (a copy).
func (r *Router) Nodes() []string { return append([]string(nil), r.names...) }

// Weight is node index's weight (0 when out of range).
func (r *Router) Weight(index int) uint32 {
	if index < 0 || index >= len(r.names) {
		return 0
	}
	w := C.chash_router_node_weight(r.live(), C.uint32_t(index))
	runtime.KeepAlive(r)
	return uint32(w)
}

// Describe is one line a person reads: "preset ketama", "maglev (xxh3)".
func (r *Router) Describe() string {
	s := C.GoString(C.chash_router_describe(r.live()))
	runtime.KeepAlive(r)
	return s
}

// Presets is the presets libchash has.
func Presets() []string {
	n := int(C.chash_preset_count())
	out := make([]string, n)
	for i := range out {
		out[i] = C.GoString(C.chash_preset_name(C.size_t(i)))
	}
	return out
}

// Version is libchash's version, "major.minor.patch".
func Version() string { return C.GoString(C.chash_version()) }
