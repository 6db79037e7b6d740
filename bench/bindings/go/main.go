// SPDX-License-Identifier: Apache-2.0

// The Go binding next to groupcache's consistenthash.Map in one process (bench/bindings/run.sh,
// docs/BENCHMARKS.md): on the same keys, alternating round by round, the peer's per-key Get loop,
// the drop-in's per-key Get loop (one cgo call each) and its GetAll (one cgo call for all keys).
// Each round's answers are compared with the peer's. One table row per node count (least ns
// per key of the rounds); replicas 50, as groupcache's HTTPPool.
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"time"

	"chash.dev/chash/groupcache"
	"github.com/golang/groupcache/consistenthash"
)

const rounds = 9

// least is the least time of the rounds: the round least disturbed by the other processes on
// this shared machine (docs/BENCHMARKS.md, "The machine").
func least(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[0]
}

func main() {
	count := 100000
	if len(os.Args) > 1 {
		count, _ = strconv.Atoi(os.Args[1])
	}
	keys := make([]string, count)
	for i := range keys {
		if i%10 == 0 {
			keys[i] = fmt.Sprintf("ключ-%d-ü€", i)
		} else {
			keys[i] = fmt.Sprintf("user:%d", i)
		}
	}
	for _, n := range []int{10, 100, 1000} {
		nodes := make([]string, n)
		for i := range nodes {
			nodes[i] = fmt.Sprintf("http://10.0.%d.%d:8000", i/250, i%250+1)
		}
		peer := consistenthash.New(50, nil)
		peer.Add(nodes...)
		mine := groupcache.New(50)
		mine.Add(nodes...)
		want := make([]string, count)
		got := make([]string, count)
		var tp, ts, tb []float64
		for r := -2; r < rounds; r++ {
			t0 := time.Now()
			for i, k := range keys {
				want[i] = peer.Get(k)
			}
			t1 := time.Now()
			for i, k := range keys {
				got[i] = mine.Get(k)
			}
			t2 := time.Now()
			all := mine.GetAll(keys)
			t3 := time.Now()
			for i := range keys {
				if got[i] != want[i] || all[i] != want[i] {
					panic(fmt.Sprintf("%d nodes: key %q: %q / %q, groupcache %q", n, keys[i], got[i], all[i], want[i]))
				}
			}
			if r >= 0 {
				per := func(d time.Duration) float64 { return float64(d.Nanoseconds()) / float64(count) }
				tp = append(tp, per(t1.Sub(t0)))
				ts = append(ts, per(t2.Sub(t1)))
				tb = append(tb, per(t3.Sub(t2)))
			}
		}
		p, s, b := least(tp), least(ts), least(tb)
		fmt.Printf("| Go | groupcache consistenthash | %d | %.0f | %.0f | %.2f× | %.0f | %.1f× |\n", n, p, s, p/s, b, p/b)
	}
}
