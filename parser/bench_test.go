package parser_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/maskc/maskc/parser"
)

// BenchmarkParseExamples parses each example file; the target is well
// under a millisecond per file. Besides wall time it reports the process's
// CPU time per parse (GC included), which a busy machine disturbs less.
func BenchmarkParseExamples(b *testing.B) {
	for _, path := range examplePaths(b) {
		src, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(strings.TrimSuffix(filepath.Base(path), ".flex"), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			cpu := cpuTime()
			for b.Loop() {
				if _, diags := parser.ParseFile(path, src); len(diags) > 0 {
					b.Fatal(diags.Render())
				}
			}
			if cpu > 0 {
				// Wall time on a shared machine includes waiting for a CPU.
				b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
