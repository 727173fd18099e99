//go:build unix

package parser_test

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user + system) the test process has used, a
// measure that a busy shared machine disturbs less than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
