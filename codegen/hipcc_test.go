package codegen

import (
	"os"
	"os/exec"
	"strings"
)

// hipTargets are the AMD architectures that tests built with Debian
// bookworm's hipcc 5.2 (the host's) target; TestHipccMFMA builds every
// generated example with sid's hipcc 7 for cdnaTargets instead.
var hipTargets = []string{"gfx90a", "gfx940"}

// findObjdump locates an llvm-objdump that knows gfx940 (LLVM 15 or later):
// $MASKC_LLVM_OBJDUMP, then Debian's llvm-15 (installed with hipcc 5.2.3,
// whose clang is 15), then llvm-objdump-15 and llvm-objdump on PATH.
// Debian's /usr/bin/llvm-objdump is LLVM 14, which predates gfx940.
func findObjdump() string {
	for _, c := range []string{os.Getenv("MASKC_LLVM_OBJDUMP"), "/usr/lib/llvm-15/bin/llvm-objdump", "llvm-objdump-15", "llvm-objdump"} {
		if c == "" {
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	return ""
}

// functionText is the disassembly of one function of an llvm-objdump -d
// listing: from its label to the next label.
func functionText(dis, name string) string {
	i := strings.Index(dis, "<"+name+">:")
	if i < 0 {
		return ""
	}
	rest := dis[i+len(name)+3:]
	if j := strings.Index(rest, ">:\n"); j >= 0 {
		if k := strings.LastIndex(rest[:j], "\n"); k >= 0 {
			return rest[:k]
		}
	}
	return rest
}
