// SPDX-License-Identifier: Apache-2.0
// Writes one groupcache__<case>.tsv: the peer groupcache's consistenthash.Map picks for each key.
//
//	go run vectors.go OUT PEER KEYSET REPLICAS NODE...
//
// The map is built as HTTPPool.Set builds it: consistenthash.New(replicas, nil) (crc32
// ChecksumIEEE), then Add(nodes...) in list order; each key is looked up with Get(string(bytes)).
// Go strings are bytes, so every key of KEYSET (a keys.hex path) is used as is.
package main

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/golang/groupcache/consistenthash"
)

func main() {
	if len(os.Args) < 6 {
		fmt.Fprintln(os.Stderr, "usage: vectors OUT PEER KEYSET REPLICAS NODE...")
		os.Exit(2)
	}
	out, peer, keyset := os.Args[1], os.Args[2], os.Args[3]
	replicas, err := strconv.Atoi(os.Args[4])
	if err != nil {
		panic(err)
	}
	nodes := os.Args[5:]

	m := consistenthash.New(replicas, nil)
	m.Add(nodes...)

	in, err := os.Open(keyset)
	if err != nil {
		panic(err)
	}
	defer in.Close()
	f, err := os.Create(out)
	if err != nil {
		panic(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintf(w, "# peer: %s\n", peer)
	fmt.Fprintf(w, "# command: tests/compat/groupcache/generate.sh\n")
	fmt.Fprintf(w, "@preset groupcache\n")
	fmt.Fprintf(w, "@option vnodes %d\n", replicas)
	for _, n := range nodes {
		fmt.Fprintf(w, "@node %s 1\n", n)
	}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, err := hex.DecodeString(line)
		if err != nil {
			panic(err)
		}
		fmt.Fprintf(w, "%s\t%s\n", line, m.Get(string(key)))
	}
	if err := sc.Err(); err != nil {
		panic(err)
	}
	if err := w.Flush(); err != nil {
		panic(err)
	}
	if err := f.Close(); err != nil {
		panic(err)
	}
}
