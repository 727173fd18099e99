package eval

import (
	"fmt"
	"math"
)

// Grads are the gradients AttentionBackward computes, for the loss
// sum(out * dO) + sum(lse * dLSE) over rows with a finite LSE.
type Grads struct {
	// DQ, DK and DV are laid out like q, k and v (bhsd).
	DQ, DK, DV *Tensor
	// DBufs holds, per buffer the score gradient reads, its gradient with
	// the buffer's extents.
	DBufs map[string]*Tensor
	// DSink is the sink gradient, one per query head; nil without a sink.
	DSink []float64
	// DBufsAbs and DSinkAbs are the sums of the magnitudes of the terms
	// of each buffer and sink gradient element: the scale that rounding
	// errors in the terms are relative to when they cancel (an ALiBi
	// slope's dS * (kv - q) sums to almost nothing row by row).
	DBufsAbs map[string]*Tensor
	DSinkAbs []float64
}

// AttentionBackward computes, in float64, the gradients of Attention(spec,
// q, k, v) for the incoming gradients dO ([B, H, Q, Dv]) and dLSE ([B, H,
// Q], nil for none): with p_ij the forward's probabilities, s_ij the
// scores and x_ij = scale * q_i.k_j the logits,
//
//	D_i     = dO_i.out_i - dLSE_i
//	dS_ij   = p_ij (dO_i.v_j - D_i)
//	dx_ij   = dS_ij * d score / d x (grad)
//	dq_i    = scale * sum_j dx_ij k_j,   dk_j = scale * sum_i dx_ij q_i
//	dv_j    = sum_i p_ij dO_i
//	dbuf[e] = sum_ij dS_ij * d score_ij / d buf[e]
//	dsink_h = -sum_i exp(sink_h - lse_i) D_i
//
// with GQA's kv gradients summed over the query heads of a group. grad is
// the score's compiled derivative (CompileGrad of grad.Differentiate of
// the score); it must be set when spec.Score is. Rows with nothing kept
// (LSE -inf) and pairs whose score is -inf contribute nothing, so their
// gradients are exact zeros. spec.Rows must be nil (every row: the kv
// gradients sum over all of them).
func AttentionBackward(spec AttentionSpec, grad *GradFunc, q, k, v, dO, dLSE *Tensor) (*Grads, error) {
	sh, err := attentionShape(spec, q, k, v)
	if err != nil {
		return nil, err
	}
	if spec.Rows != nil {
		return nil, fmt.Errorf("%w: the backward needs every row (Rows must be nil)", ErrShape)
	}
	if spec.Score != nil && grad == nil {
		return nil, fmt.Errorf("%w: a score mod needs its gradient", ErrShape)
	}
	if dO == nil || !sameDims(dO.Dims, sh.B, sh.H, sh.Q, sh.Dv) || dO.Validate() != nil {
		return nil, fmt.Errorf("%w: dO must be [B, H, Q, Dv] = [%d, %d, %d, %d]", ErrShape, sh.B, sh.H, sh.Q, sh.Dv)
	}
	if dLSE != nil && (!sameDims(dLSE.Dims, sh.B, sh.H, sh.Q) || dLSE.Validate() != nil) {
		return nil, fmt.Errorf("%w: dLSE must be [B, H, Q] = [%d, %d, %d]", ErrShape, sh.B, sh.H, sh.Q)
	}
	rs, env, err := newRowScorer(spec, sh, q, k)
	if err != nil {
		return nil, err
	}
	var bg *BoundGrad
	if spec.Score != nil {
		if bg, err = grad.Bind(env); err != nil {
			return nil, err
		}
	}
	scale := rs.scale
	g := &Grads{DQ: NewTensor(q.Dims...), DK: NewTensor(k.Dims...), DV: NewTensor(v.Dims...), DBufs: map[string]*Tensor{}, DBufsAbs: map[string]*Tensor{}}
	if len(spec.Sink) > 0 {
		g.DSink, g.DSinkAbs = make([]float64, sh.H), make([]float64, sh.H)
	}
	if grad != nil {
		for _, r := range grad.reads {
			if g.DBufs[r.buffer] == nil {
				t := env.Buffers[r.buffer]
				if t == nil {
					return nil, fmt.Errorf("%w: buffer %s is not in the Env", ErrShape, r.buffer)
				}
				g.DBufs[r.buffer], g.DBufsAbs[r.buffer] = NewTensor(t.Dims...), NewTensor(t.Dims...)
			}
		}
	}
	x := make([]float64, sh.KV) // logits
	s := make([]float64, sh.KV) // scores, -inf where masked
	o := make([]float64, sh.Dv)
	group := sh.H / sh.HKV
	for b := 0; b < sh.B; b++ {
		for h := 0; h < sh.H; h++ {
			hk := h / group
			sink := spec.sinkOf(h)
			for i := 0; i < sh.Q; i++ {
				qrow := q.Data[((b*sh.H+h)*sh.Q+i)*sh.D:][:sh.D]
				m, err := rs.scores(b, h, hk, i, sink, x, s)
				if err != nil {
					return nil, err
				}
				if math.IsInf(m, -1) {
					continue // nothing kept, no sink: every gradient of the row is 0
				}
				denom := math.Exp(sink - m)
				for j := 0; j < sh.KV; j++ {
					if !math.IsInf(s[j], -1) {
						denom += math.Exp(s[j] - m)
					}
				}
				lse := m + math.Log(denom)
				clear(o)
				for j := 0; j < sh.KV; j++ {
					if math.IsInf(s[j], -1) {
						continue
					}
					p := math.Exp(s[j] - lse)
					for d, xv := range v.Data[((b*sh.HKV+hk)*sh.KV+j)*sh.Dv:][:sh.Dv] {
						o[d] += p * xv
					}
				}
				row := (b*sh.H+h)*sh.Q + i
				do := dO.Data[row*sh.Dv:][:sh.Dv]
				delta := 0.0
				for d := range o {
					delta += do[d] * o[d]
				}
				if dLSE != nil {
					delta -= dLSE.Data[row]
				}
				if g.DSink != nil {
					g.DSink[h] -= math.Exp(sink-lse) * delta
					g.DSinkAbs[h] += math.Abs(math.Exp(sink-lse) * delta)
				}
				dq := g.DQ.Data[row*sh.D:][:sh.D]
				for j := 0; j < sh.KV; j++ {
					if math.IsInf(s[j], -1) {
						continue
					}
					p := math.Exp(s[j] - lse)
					kvRow := (b*sh.HKV+hk)*sh.KV + j
					vrow := v.Data[kvRow*sh.Dv:][:sh.Dv]
					dv := g.DV.Data[kvRow*sh.Dv:][:sh.Dv]
					dp := 0.0
					for d := range vrow {
						dp += do[d] * vrow[d]
						dv[d] += p * do[d]
					}
					dS := p * (dp - delta)
					dx := dS
					if bg != nil {
						ds, reads, err := bg.Grad(x[j], int64(b), int64(h), int64(i), int64(j))
						if err != nil {
							return nil, err
						}
						dx = dS * ds
						for _, r := range reads {
							if r.Outside {
								continue
							}
							t := g.DBufs[r.Buffer]
							at := 0
							for d, ix := range r.Index {
								at = at*t.Dims[d] + int(ix)
							}
							t.Data[at] += dS * r.D
							g.DBufsAbs[r.Buffer].Data[at] += math.Abs(dS * r.D)
						}
					}
					krow := k.Data[kvRow*sh.D:][:sh.D]
					dk := g.DK.Data[kvRow*sh.D:][:sh.D]
					for d := range krow {
						dq[d] += scale * dx * krow[d]
						dk[d] += scale * dx * qrow[d]
					}
				}
			}
		}
	}
	return g, nil
}

func sameDims(dims []int, want ...int) bool {
	if len(dims) != len(want) {
		return false
	}
	for i := range dims {
		if dims[i] != want[i] {
			return false
		}
	}
	return true
}
