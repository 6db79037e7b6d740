// SPDX-License-Identifier: Apache-2.0

// Package testkeys is the Go tests' and benchmark's key set and their `chash route` runner.
package testkeys

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Make is n keys as applications name them: "user:i", "session/x/cart", every 10th non-ASCII,
// every 50th with a NUL byte (Go strings are bytes; keys are routed as they are).
func Make(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		switch {
		case i%50 == 7:
			keys[i] = fmt.Sprintf("bin\x00%d", i)
		case i%10 == 0:
			keys[i] = fmt.Sprintf("ключ-%d-ü€😀", i)
		case i%10 <= 3:
			keys[i] = fmt.Sprintf("session/%x/cart", i*31)
		default:
			keys[i] = fmt.Sprintf("user:%d", i)
		}
	}
	return keys
}

// CLI runs `chash route ARGS` (CHASH_CLI, else chash on PATH) on keys, one name per key. Keys
// must not hold '\n'.
func CLI(args []string, keys []string) ([]string, error) {
	bin := os.Getenv("CHASH_CLI")
	if bin == "" {
		bin = "chash"
	}
	cmd := exec.Command(bin, append([]string{"route"}, args...)...)
	cmd.Stdin = strings.NewReader(strings.Join(keys, "\n") + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("chash route %v: %v: %s", args, err, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(keys) {
		return nil, fmt.Errorf("chash route: %d lines for %d keys", len(lines), len(keys))
	}
	return lines, nil
}
