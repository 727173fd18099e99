// Command genabi writes hipsrc/abi.h from hipsrc/abi.go (go generate
// ./hipsrc); a test in hipsrc keeps the file equal to hipsrc.ABIHeader.
package main

import (
	"fmt"
	"os"

	"github.com/maskc/maskc/hipsrc"
)

func main() {
	if err := os.WriteFile("abi.h", []byte(hipsrc.ABIHeader()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
