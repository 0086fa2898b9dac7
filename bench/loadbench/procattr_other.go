//go:build !linux

package main

import "os/exec"

// dieWithParent is a no-op where the kernel cannot tie a child's life to its
// parent; the benchmark still stops the server on a normal exit or signal.
func dieWithParent(cmd *exec.Cmd) {}
