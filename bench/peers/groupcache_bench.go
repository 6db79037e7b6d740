// SPDX-License-Identifier: Apache-2.0
// groupcache consistenthash (Debian golang-github-golang-groupcache-dev), 50 replicas and its
// default hash (crc32), as the groupcache preset with vnodes 50. Built in GOPATH mode over
// /usr/share/gocode by run.sh.
//
//	groupcache_bench NODES.txt KEYS.txt ROUNDS  ->  "groupcache\t<ns per key>\t<checksum>"
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/golang/groupcache/consistenthash"
)

func lines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	var v []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if t := sc.Text(); t != "" {
			v = append(v, t)
		}
	}
	return v
}

func main() {
	nodes := lines(os.Args[1])
	keys := lines(os.Args[2])
	rounds, _ := strconv.Atoi(os.Args[3])
	index := make(map[string]int, len(nodes))
	for i, n := range nodes {
		index[n] = i
	}
	m := consistenthash.New(50, nil)
	m.Add(nodes...)
	owners := make([]string, len(keys))
	best := 1e300
	var checksum int64
	for r := 0; r < rounds+1; r++ { // the first pass warms up
		t0 := time.Now()
		for i, k := range keys {
			owners[i] = m.Get(k)
		}
		ns := float64(time.Since(t0).Nanoseconds()) / float64(len(keys))
		var sum int64
		for i, o := range owners {
			sum += int64(index[o]) * int64(i%1000+1)
		}
		checksum = sum
		if r > 0 && ns < best {
			best = ns
		}
	}
	fmt.Printf("groupcache\t%.2f\t%d\n", best, checksum)
}
