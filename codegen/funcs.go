package codegen

import (
	_ "embed"
	"fmt"
	"strconv"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// RuntimeSource is the C++ helper section every generated part starts
// with: struct MaskcBuffers and Python-semantics helpers (maskc_floordiv,
// maskc_floormod, maskc_min, ...). It needs no header.
//
//go:embed runtime.h
var RuntimeSource string

const maskSig = `__device__ __forceinline__ bool maskc_mask(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV,
                                           long long b, long long h, long long q, long long kv)`

const scoreSig = `__device__ __forceinline__ float maskc_score(const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV,
                                             float score, long long b, long long h, long long q, long long kv)`

// lineResetMarker stands where the generated text returns from .flex line
// numbers to its own; resolveLineResets turns it into a #line directive
// once the position in the final text is known.
const lineResetMarker = "// maskc: #line reset"

// MaskFunc generates maskc_mask, true where the lowered mask l keeps
// (q, kv). A nil l keeps every pair. bufs is the kernel's buffer table
// (BufferTable); src, when not nil, is the .flex file l's spans point into,
// named in #line directives and quoted in the leading comment.
func MaskFunc(src *dsl.Source, l *dsl.Lowered, bufs []BufferABI) (string, dsl.Diagnostics) {
	if l == nil || l.Expr == nil {
		return "// no mask: every (q, kv) pair is kept\n" + maskSig + " {\n  return true;\n}\n", nil
	}
	return modFunc(src, l, dsl.MaskMod, bufs)
}

// ScoreFunc generates maskc_score, the lowered score l applied to the
// scaled logit, computed in fp32. A nil l returns the score unchanged.
func ScoreFunc(src *dsl.Source, l *dsl.Lowered, bufs []BufferABI) (string, dsl.Diagnostics) {
	if l == nil || l.Expr == nil {
		return "// no score: the scaled logit is used as is\n" + scoreSig + " {\n  return score;\n}\n", nil
	}
	return modFunc(src, l, dsl.ScoreMod, bufs)
}

func modFunc(src *dsl.Source, l *dsl.Lowered, kind dsl.ModKind, bufs []BufferABI) (string, dsl.Diagnostics) {
	var diags dsl.Diagnostics
	if l.Kind != kind {
		diags.Add(src, l.Expr.Span(), CodeUnsupported, "expected a %s, got a %s", kind, l.Kind)
		return "", diags
	}
	float, sig, resultType := cDouble, maskSig, cBool
	if kind == dsl.ScoreMod {
		float, sig, resultType = cFloat, scoreSig, cFloat
	}
	w := newFuncWriter(src, l, float, bufs, &diags)
	w.count(l.Expr)
	var root cExpr
	if kind == dsl.MaskMod {
		root = w.expr(l.Expr)
	} else {
		root = w.expr(l.Expr)
	}
	if w.failed {
		return "", diags
	}
	w.stmt(l.Expr.Span(), "return %s;", conv(root, resultType).code)

	var b strings.Builder
	fmt.Fprintf(&b, "// %s %s\n", kind, l.Name)
	if lines := sourceLines(src, l.Expr); lines != "" {
		b.WriteString("// from\n" + lines)
	}
	if kind == dsl.MaskMod {
		b.WriteString("// ints are int32 where intrange.go proves it exact, else int64, with Python's floor // and %; floats (if any) are computed in fp64\n")
	} else {
		b.WriteString("// ints are int32 where intrange.go proves it exact, else int64, with Python's floor // and %; floats are computed in fp32 like the kernel\n")
	}
	b.WriteString(sig + " {\n")
	b.WriteString(w.body.String())
	b.WriteString("}\n")
	if w.lastLine != 0 {
		b.WriteString(lineResetMarker + "\n")
	}
	return b.String(), diags
}

// resolveLineResets replaces every line-reset marker in text by a #line
// directive that gives the following line its true number in text, under
// the file name name.
func resolveLineResets(text, name string) string {
	if !strings.Contains(text, lineResetMarker) {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, ln := range lines {
		if ln == lineResetMarker {
			lines[i] = fmt.Sprintf("#line %d %s", i+2, strconv.Quote(name))
		}
	}
	return strings.Join(lines, "\n")
}
