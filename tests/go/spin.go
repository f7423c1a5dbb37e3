// SPDX-License-Identifier: Apache-2.0
// Go workload for it.record_go: burns CPU in a known chain,
// main.main -> main.outer -> main.middle -> main.leafSpin, for the seconds given.
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

var sink uint64

// leafSpin is a frameless leaf (no locals, no calls): no frame pointer of its own.
//
//go:noinline
func leafSpin(n int, x uint64) uint64 {
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		x ^= x >> 29
	}
	return x
}

//go:noinline
func middle(deadline time.Time) uint64 {
	var x uint64 = 1
	for time.Now().Before(deadline) {
		x = leafSpin(2000000, x)
	}
	return x
}

//go:noinline
func outer(deadline time.Time) uint64 {
	return middle(deadline) + 1
}

func main() {
	secs := 2.0
	if len(os.Args) > 1 {
		v, err := strconv.ParseFloat(os.Args[1], 64)
		if err != nil || v <= 0 {
			fmt.Fprintf(os.Stderr, "usage: %s SECONDS\n", os.Args[0])
			os.Exit(2)
		}
		secs = v
	}
	sink = outer(time.Now().Add(time.Duration(secs * float64(time.Second))))
	fmt.Printf("{\"pid\": %d, \"sink\": %d}\n", os.Getpid(), sink%1000)
}
