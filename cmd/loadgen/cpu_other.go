//go:build !unix

package main

import "time"

// Without getrusage the CPU figures are not reported.
const cpuMeasured = false

func processCPU() time.Duration { return 0 }
