package codegen

import (
	"fmt"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// Signatures of the generated functions, in the global frame (the kernels
// call their local twins in hipsrc/frame.h, maskc_mask for maskc_g_mask
// and so on). maskc_g_mask and maskc_g_score are
// what a (b, h, q, kv) evaluation calls; the kernel splits them: buffer
// reads that depend on q but not kv (or on neither) are computed once per
// row (maskc_mask_row -> MaskcMaskRow), those that depend on kv but not q
// once per column of a tile (maskc_mask_col -> MaskcMaskCol), and
// maskc_mask_rc combines them with the rest. maskc_mask is that
// composition, so both paths compute the same function.
const (
	sizeParams = "const MaskcBuffers& buf, long long B, long long H, long long HKV, long long Q, long long KV"
	maskSig    = "__device__ __forceinline__ bool maskc_g_mask(" + sizeParams + ",\n    long long b, long long h, long long q, long long kv)"
	scoreSig   = "__device__ __forceinline__ float maskc_g_score(" + sizeParams + ",\n    float score, long long b, long long h, long long q, long long kv)"
)

// lineResetMarker stands where the generated text returns from .flex line
// numbers to its own; resolveLineResets turns it into a #line directive
// once the position in the final text is known.
const lineResetMarker = "// maskc: #line reset"

// MaskFunc generates maskc_mask, true where the lowered mask l keeps
// (q, kv), and its row/column split (see maskSig). A nil l keeps every
// pair. bufs is the kernel's buffer table (BufferTable); src, when not nil,
// is the .flex file l's spans point into, named in #line directives and
// quoted in the leading comment.
func MaskFunc(src *dsl.Source, l *dsl.Lowered, bufs []BufferABI) (string, dsl.Diagnostics) {
	if l == nil || l.Expr == nil {
		return "// no mask: every (q, kv) pair is kept\n" + splitFuncs(dsl.MaskMod, "", "", "", "", "  return true;\n"), nil
	}
	return modFunc(src, l, dsl.MaskMod, bufs)
}

// ScoreFunc generates maskc_score, the lowered score l applied to the
// scaled logit, computed in fp32, and its row/column split. A nil l
// returns the score unchanged.
func ScoreFunc(src *dsl.Source, l *dsl.Lowered, bufs []BufferABI) (string, dsl.Diagnostics) {
	if l == nil || l.Expr == nil {
		return "// no score: the scaled logit is used as is\n" + splitFuncs(dsl.ScoreMod, "", "", "", "", "  return score;\n"), nil
	}
	return modFunc(src, l, dsl.ScoreMod, bufs)
}

// partBool is the type of a bool field of the row and column parts'
// structs, partBoolDef its definition: one byte on AMD, where clang's SROA
// leaves an array of structs of bool fields (the kernels' row and column
// slots) in scratch memory (8 bytes per lane in every kernel of a mask
// reading a bool buffer per row and per key, issue 26) and an unsigned char
// stays in registers; bool on NVIDIA, where the preprocessed source is
// unchanged. Defined where used (also host builds of the generated part).
const (
	partBool    = "MASKC_PART_BOOL"
	partBoolDef = "#if defined(MASKC_PLATFORM_AMD)\n#define MASKC_PART_BOOL unsigned char\n#else\n#define MASKC_PART_BOOL bool\n#endif\n"
)

// splitFuncs assembles the functions of one mod from the bodies of its row
// part, column part and combination (with their structs' fields).
func splitFuncs(kind dsl.ModKind, rowFields, rowBody, colFields, colBody, rcBody string) string {
	n, ret, scoreParam, scoreArg := "Mask", "bool", "", ""
	if kind == dsl.ScoreMod {
		n, ret, scoreParam, scoreArg = "Score", "float", "float score, ", "score, "
	}
	lo := strings.ToLower(n)
	var b strings.Builder
	if strings.Contains(rowFields+colFields, partBool) {
		b.WriteString(partBoolDef)
	}
	fmt.Fprintf(&b, "struct Maskc%sRow {%s};  // the %s's buffer reads that depend on q, not kv\n", n, rowFields, lo)
	fmt.Fprintf(&b, "__device__ __forceinline__ Maskc%sRow maskc_g_%s_row(%s,\n    long long b, long long h, long long q) {\n", n, lo, sizeParams)
	fmt.Fprintf(&b, "  Maskc%sRow r;\n%s  return r;\n}\n", n, rowBody)
	fmt.Fprintf(&b, "struct Maskc%sCol {%s};  // the %s's buffer reads that depend on kv, not q\n", n, colFields, lo)
	if kind == dsl.MaskMod && colFields != "" {
		// attn_fwd.h's MASKC_MASK_BITS default: per-key reads make a partial tile's mask worth evaluating before its MMA
		b.WriteString("#define MASKC_MASK_COL_READS 1\n")
	}
	fmt.Fprintf(&b, "__device__ __forceinline__ Maskc%sCol maskc_g_%s_col(%s,\n    long long b, long long h, long long kv) {\n", n, lo, sizeParams)
	fmt.Fprintf(&b, "  Maskc%sCol c;\n%s  return c;\n}\n", n, colBody)
	fmt.Fprintf(&b, "__device__ __forceinline__ %s maskc_g_%s_rc(%s,\n    const Maskc%sRow& r, const Maskc%sCol& c, %slong long b, long long h, long long q, long long kv) {\n",
		ret, lo, sizeParams, n, n, scoreParam)
	b.WriteString(rcBody)
	b.WriteString("}\n")
	sig := maskSig
	if kind == dsl.ScoreMod {
		sig = scoreSig
	}
	fmt.Fprintf(&b, "%s {\n  return maskc_g_%s_rc(buf, B, H, HKV, Q, KV, maskc_g_%s_row(buf, B, H, HKV, Q, KV, b, h, q),\n", sig, lo, lo)
	fmt.Fprintf(&b, "                         maskc_g_%s_col(buf, B, H, HKV, Q, KV, b, h, kv), %sb, h, q, kv);\n}\n", lo, scoreArg)
	return b.String()
}

// hoistableReads returns the buffer reads of e that do not depend on both q
// and kv (nor on the score): rows, those without kv; cols, those with kv
// but not q. Each appears once, inner reads before the reads that use them.
func hoistableReads(w *funcWriter, e dsl.Expr) (rows, cols []dsl.Expr) {
	seen := map[string]bool{}
	var visit func(x dsl.Expr)
	visit = func(x dsl.Expr) {
		dsl.Inspect(x, func(y dsl.Expr) bool {
			r, ok := y.(*dsl.IndexExpr)
			if !ok || y == x {
				return true
			}
			visit(r)
			return false
		})
		r, ok := x.(*dsl.IndexExpr)
		if !ok || seen[w.key(r)] {
			return
		}
		var q, kv, score bool
		dsl.Inspect(r, func(y dsl.Expr) bool {
			if v, ok := y.(*dsl.VarRef); ok {
				q = q || v.Var == dsl.VarQ
				kv = kv || v.Var == dsl.VarKV
				score = score || v.Var == dsl.VarScore
			}
			return true
		})
		seen[w.key(r)] = true
		switch {
		case score || (q && kv):
		case !kv:
			rows = append(rows, r)
		default:
			cols = append(cols, r)
		}
	}
	visit(e)
	return rows, cols
}

// hoist emits the reads into the body of a fresh writer like w as fields
// of variable v ("r" or "c"), and seeds w so that it refers to them there.
func hoist(w *funcWriter, reads []dsl.Expr, v string) (fields, body string) {
	if len(reads) == 0 {
		return "", ""
	}
	hw := newFuncWriter(w.src, w.l, w.float, w.bufs, w.diags)
	for _, r := range reads {
		hw.count(r)
	}
	var fs []string
	for _, r := range reads {
		val := hw.expr(r) // reads are always bound to a named constant
		if hw.failed {
			return "", ""
		}
		hw.stmt(r.Span(), "%s.%s = %s;", v, val.code, val.code)
		typ := string(val.typ)
		if val.typ == cBool {
			typ = partBool
		}
		fs = append(fs, fmt.Sprintf(" %s %s;", typ, val.code))
		w.temps[w.key(r)] = cExpr{v + "." + val.code, val.typ}
	}
	body = hw.body.String()
	if hw.lastLine != 0 {
		body += lineResetMarker + "\n"
	}
	return strings.Join(fs, "") + " ", body
}

func modFunc(src *dsl.Source, l *dsl.Lowered, kind dsl.ModKind, bufs []BufferABI) (string, dsl.Diagnostics) {
	var diags dsl.Diagnostics
	if l.Kind != kind {
		diags.Add(src, l.Expr.Span(), CodeUnsupported, "expected a %s, got a %s", kind, l.Kind)
		return "", diags
	}
	float, resultType := cDouble, cBool
	if kind == dsl.ScoreMod {
		float, resultType = cFloat, cFloat
	}
	w := newFuncWriter(src, l, float, bufs, &diags)
	w.count(l.Expr)
	rows, cols := hoistableReads(w, l.Expr)
	rowsFreeOfQ := len(rows) > 0
	for _, r := range rows {
		rowsFreeOfQ = rowsFreeOfQ && !exprUsesVar(r, dsl.VarQ)
	}
	rowFields, rowBody := hoist(w, rows, "r")
	colFields, colBody := hoist(w, cols, "c")
	if len(diags) > 0 {
		return "", diags
	}
	root := w.expr(l.Expr)
	if w.failed {
		return "", diags
	}
	w.stmt(l.Expr.Span(), "return %s;", conv(root, resultType).code)
	rcBody := w.body.String()
	if w.lastLine != 0 {
		rcBody += lineResetMarker + "\n"
	}

	var b strings.Builder
	fmt.Fprintf(&b, "// %s %s\n", kind, cComment(l.Name))
	if lines := sourceLines(src, l.Expr); lines != "" {
		b.WriteString("// from\n" + lines)
	}
	if kind == dsl.MaskMod {
		b.WriteString("// ints are int32 where intrange.go proves it exact, else int64, with Python's floor // and %; floats (if any) are computed in fp64\n")
	} else {
		b.WriteString("// ints are int32 where intrange.go proves it exact, else int64, with Python's floor // and %; floats are computed in fp32 like the kernel\n")
	}
	if rowsFreeOfQ {
		// The row part reads nothing that depends on q (a buffer indexed by b
		// or h only): a kernel may compute it once for all its rows
		// (attn_bwd.h's warp-specialized producer).
		fmt.Fprintf(&b, "#define MASKC_%s_ROW_FREE_OF_Q 1\n", strings.ToUpper(kind.String()))
	}
	b.WriteString(splitFuncs(kind, rowFields, rowBody, colFields, colBody, rcBody))
	return b.String(), diags
}

// exprUsesVar reports whether e refers to v.
func exprUsesVar(e dsl.Expr, v dsl.Var) bool {
	return dsl.Any(e, func(x dsl.Expr) bool {
		r, ok := x.(*dsl.VarRef)
		return ok && r.Var == v
	})
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
			lines[i] = fmt.Sprintf("#line %d %s", i+2, cString(name))
		}
	}
	return strings.Join(lines, "\n")
}
