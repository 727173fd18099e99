package codegen

import (
	"fmt"
	"strings"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/format"
	"github.com/maskc/maskc/grad"
)

// The score-gradient interface every generated part carries (backward
// kernels call it; see the grad package for the derivative rules):
//
//	#define MASKC_SCORE_GRAD_READS N
//	struct MaskcScoreGradRead { int slot; long long idx; float d; };
//	float maskc_score_grad(buf, B, H, HKV, Q, KV, score, b, h, q, kv, reads)
//
// maskc_score_grad returns d score_out / d score_in at (b, h, q, kv) and
// fills reads[0..N) with d score_out / d buf_slot[idx] for each
// differentiable float-buffer read (slot is the MaskcBuffers slot, idx the
// row-major element offset). An entry with slot < 0 contributes nothing: a
// read outside the buffer's extents (where the forward's guarded read gave
// 0 and touched no memory) or a partial derivative that is exactly 0 (for
// instance a read in the branch of a where that was not taken).
//
// Two constant functions describe the reads for the kernels' bookkeeping:
//
//	int maskc_score_grad_read_axes(int r)  // which of q (1) and kv (2) read r's element depends on
//	int maskc_score_grad_read_slot(int r)  // read r's buffer slot
//
// A read of axes 0 (such as slopes[h]) names one element per (b, h), so a
// kernel sums its terms over a whole tile without comparing indices per
// element.
const (
	gradReadsMacro = "MASKC_SCORE_GRAD_READS"
	gradReadStruct = "struct MaskcScoreGradRead { int slot; long long idx; float d; };"
	gradSig        = "__device__ __forceinline__ float maskc_g_score_grad(" + sizeParams + ",\n    float score, long long b, long long h, long long q, long long kv, MaskcScoreGradRead* reads)"
)

// ScoreGrad is the generated score-gradient interface of one score.
type ScoreGrad struct {
	// Code is the C++ text: the macro, the struct and maskc_score_grad.
	Code string
	// Buffers are the entries of the buffer table with a differentiable
	// read (Kernel.GradBuffers).
	Buffers []BufferABI
	// Reads is MASKC_SCORE_GRAD_READS.
	Reads int
}

// ScoreGradFunc generates the score-gradient interface for the lowered
// score l (nil: no score mod, whose derivative is 1), computed in fp32 with
// the same guarded buffer reads as maskc_score; bufs is the kernel's buffer
// table.
func ScoreGradFunc(src *dsl.Source, l *dsl.Lowered, bufs []BufferABI) (ScoreGrad, dsl.Diagnostics) {
	var diags dsl.Diagnostics
	var b strings.Builder
	if l == nil || l.Expr == nil {
		b.WriteString("// no score: d score / d score = 1, and no buffer is read\n")
		fmt.Fprintf(&b, "#define %s 0\n%s\n", gradReadsMacro, gradReadStruct)
		writeReadTables(&b, nil, nil)
		fmt.Fprintf(&b, "%s {\n  (void)buf; (void)score; (void)reads;\n  return 1.0f;\n}\n", gradSig)
		return ScoreGrad{Code: b.String()}, nil
	}
	g, err := grad.Differentiate(l)
	if err != nil {
		diags.Add(src, l.Expr.Span(), CodeGradient, "cannot differentiate score %s: %v", l.Name, err).
			WithHint("a backward kernel needs the score's derivative; simplify the score (nested functions make its derivative grow quadratically)")
		return ScoreGrad{}, diags
	}
	byName := map[string]*BufferABI{}
	for i := range bufs {
		byName[bufs[i].Name] = &bufs[i]
	}
	var gradBufs []BufferABI
	for _, d := range g.Buffers() {
		abi := byName[d.Name.Name]
		if abi == nil {
			diags.Add(src, d.Sp, CodeBufferIndex, "internal error: buffer %s is not in the kernel's buffer table", d.Name.Name)
			return ScoreGrad{}, diags
		}
		gradBufs = append(gradBufs, *abi)
	}

	w := newFuncWriter(src, g.Lowered(g.DScore, l.Name), cFloat, bufs, &diags)
	w.count(g.DScore)
	for _, r := range g.Reads {
		w.count(r.D)
		for _, i := range r.Index.Indices {
			w.count(i)
		}
	}
	for i, r := range g.Reads {
		abi := byName[r.Buffer.Name.Name]
		args := []string{"buf"}
		for _, e := range r.Index.Indices {
			args = append(args, w.expr(e).code) // int or long long: the parameter widens it
		}
		sp := r.Index.Span()
		at := w.bind(sp, "at", cExpr{atName(abi) + "(" + strings.Join(args, ", ") + ")", cInt})
		d := w.expr(r.D)
		if w.failed {
			return ScoreGrad{}, diags
		}
		d = conv(d, cFloat)
		if !isIdent(d.code) {
			d = w.bind(sp, "d", d)
		}
		w.stmt(sp, "reads[%d].slot = %s >= 0 && %s != 0.0f ? %d : -1;", i, at.code, d.code, abi.Slot)
		w.stmt(sp, "reads[%d].idx = %s;", i, at.code)
		w.stmt(sp, "reads[%d].d = %s;", i, d.code)
	}
	ds := w.expr(g.DScore)
	if w.failed {
		return ScoreGrad{}, diags
	}
	w.stmt(l.Expr.Span(), "return %s;", conv(ds, cFloat).code)
	body := w.body.String()
	if w.lastLine != 0 {
		body += lineResetMarker + "\n"
	}

	fmt.Fprintf(&b, "// d score / d score and d score / d buffer reads of score %s (grad: torch.autograd's rules), in fp32 like maskc_score\n", l.Name)
	fmt.Fprintf(&b, "//   d/d score = %s\n", clip(format.Expr(g.DScore)))
	for _, r := range g.Reads {
		fmt.Fprintf(&b, "//   d/d %s = %s\n", format.Expr(r.Index), clip(format.Expr(r.D)))
	}
	fmt.Fprintf(&b, "#define %s %d\n%s\n", gradReadsMacro, len(g.Reads), gradReadStruct)
	var axes, slots []int
	for _, r := range g.Reads {
		axes = append(axes, readAxes(r.Index))
		slots = append(slots, byName[r.Buffer.Name.Name].Slot)
	}
	writeReadTables(&b, axes, slots)
	for i := range gradBufs {
		writeAt(&b, &gradBufs[i])
	}
	fmt.Fprintf(&b, "%s {\n", gradSig)
	if len(g.Reads) == 0 {
		b.WriteString("  (void)reads;\n")
	}
	b.WriteString(body)
	b.WriteString("}\n")
	return ScoreGrad{Code: b.String(), Buffers: gradBufs, Reads: len(g.Reads)}, diags
}

// readAxes says which of q (1) and kv (2) the element read by x depends on
// (3 when it depends on the score).
func readAxes(x *dsl.IndexExpr) int {
	axes := 0
	for _, e := range x.Indices {
		dsl.Inspect(e, func(y dsl.Expr) bool {
			if v, ok := y.(*dsl.VarRef); ok {
				switch v.Var {
				case dsl.VarQ:
					axes |= 1
				case dsl.VarKV:
					axes |= 2
				case dsl.VarScore:
					axes |= 3
				}
			}
			return true
		})
	}
	return axes
}

// writeReadTables emits maskc_score_grad_read_axes and
// maskc_score_grad_read_slot (see the interface above) for reads with the
// given axes and buffer slots.
func writeReadTables(w *strings.Builder, axes, slots []int) {
	table := func(name, what string, vals []int, other int) {
		expr := fmt.Sprint(other)
		for i := len(vals) - 1; i >= 0; i-- {
			expr = fmt.Sprintf("r == %d ? %d : %s", i, vals[i], expr)
		}
		fmt.Fprintf(w, "// %s\n__device__ __forceinline__ constexpr int %s(int r) { return %s; }\n", what, name, expr)
	}
	table("maskc_score_grad_read_axes", "which of q (1) and kv (2) each read's element depends on", axes, 3)
	table("maskc_score_grad_read_slot", "the buffer slot of each read", slots, -1)
}

// atName is the element-offset function of a buffer.
func atName(b *BufferABI) string { return "maskc_at_" + cName(b.Name) }

// writeAt emits the row-major offset of an element of buffer b, or -1 when
// an index is outside the extents (the read the forward guards).
func writeAt(w *strings.Builder, b *BufferABI) {
	var params, conds []string
	for i := range b.Dims {
		params = append(params, fmt.Sprintf("long long i%d", i))
	}
	fmt.Fprintf(w, "// offset of %s[%s] in buf.ptr[%d], -1 outside its extents\n", b.Name, strings.Join(b.Dims, ", "), b.Slot)
	fmt.Fprintf(w, "__device__ __forceinline__ long long %s(%s) {\n", atName(b), bufParams(params))
	for i := range b.Dims {
		fmt.Fprintf(w, "  const long long n%d = buf.dim[%d][%d];\n", i, b.Slot, i)
		conds = append(conds, fmt.Sprintf("i%d >= 0 && i%d < n%d", i, i, i))
	}
	if len(conds) == 0 {
		conds = []string{"true"} // a 0-d buffer's one element
	}
	fmt.Fprintf(w, "  return %s ? %s : -1;\n}\n\n", strings.Join(conds, " && "), rowMajor(len(b.Dims), ""))
}

// clip shortens a printed derivative for a one-line comment.
func clip(s string) string {
	const max = 160
	if len(s) <= max {
		return s
	}
	return s[:max] + " ..."
}
