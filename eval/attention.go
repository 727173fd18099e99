package eval

import (
	"errors"
	"fmt"
	"math"

	"github.com/maskc/maskc/dsl"
)

// ErrShape is an Attention input whose extents do not agree with each
// other or with the Env.
var ErrShape = errors.New("shape mismatch")

// AttentionSpec says what reference attention computes.
type AttentionSpec struct {
	// Mask keeps a pair when it holds; nil keeps every pair.
	Mask *Func
	// Score rewrites the scaled logit of a kept pair; nil is the identity.
	Score *Func
	// Scale multiplies q.k; 0 means 1/sqrt(D).
	Scale float64
	// Sink is optional, one logit per query head, added to the softmax
	// denominator only (gpt-oss / Turbo sink); nil or empty for none.
	Sink []float64
	// Env gives the sizes and buffers; its B, H, HKV, Q and KV must match
	// the tensors. Nil means sizes taken from the tensors and no buffers.
	Env *Env
	// Rows, when not nil, are the query rows to compute (each in [0, Q));
	// out and lse then hold those rows in this order, [B, H, len(Rows), Dv]
	// and [B, H, len(Rows)]. Nil computes every row.
	Rows []int
}

// sinkOf is head h's sink logit, -inf without a sink.
func (spec AttentionSpec) sinkOf(h int) float64 {
	if len(spec.Sink) == 0 {
		return math.Inf(-1)
	}
	return spec.Sink[h]
}

// Attention computes, in float64,
//
//	out[b,h,i,:] = sum_j p_ij v[b,h/(H/HKV),j,:]
//	p_ij = exp(s_ij) / (sum_j' exp(s_ij') + exp(sink[h]))
//	s_ij = score_mod(q[b,h,i,:].k[b,h/(H/HKV),j,:] * scale) for kept j
//
// and the natural-log LSE per (b, h, i), log(sum_j exp(s_ij) +
// exp(sink[h])). Layout bhsd: q [B,H,Q,D], k [B,HKV,KV,D], v
// [B,HKV,KV,Dv] give out [B,H,Q,Dv] and lse [B,H,Q]; query head h reads kv
// head h / (H/HKV). The mask is evaluated first and the score mod only on
// kept pairs (a masked-out lane never reads a buffer). A pair whose score
// is -inf contributes nothing, like a masked one; a row with nothing kept
// gives out = 0 and lse = -inf, or lse = sink[h] with a sink. The softmax
// subtracts the row maximum (sink included), so large logits do not
// overflow.
func Attention(spec AttentionSpec, q, k, v *Tensor) (out, lse *Tensor, err error) {
	sh, err := attentionShape(spec, q, k, v)
	if err != nil {
		return nil, nil, err
	}
	rs, _, err := newRowScorer(spec, sh, q, k)
	if err != nil {
		return nil, nil, err
	}
	rows := spec.Rows
	if rows == nil {
		rows = make([]int, sh.Q)
		for i := range rows {
			rows[i] = i
		}
	}
	nr := len(rows)
	out = NewTensor(sh.B, sh.H, nr, sh.Dv)
	lse = NewTensor(sh.B, sh.H, nr)
	s := make([]float64, sh.KV)
	group := sh.H / sh.HKV
	for b := 0; b < sh.B; b++ {
		for h := 0; h < sh.H; h++ {
			hk := h / group
			sink := spec.sinkOf(h)
			for ri, i := range rows {
				m, err := rs.scores(b, h, hk, i, sink, nil, s)
				if err != nil {
					return nil, nil, err
				}
				orow := out.Data[((b*sh.H+h)*nr+ri)*sh.Dv:][:sh.Dv]
				if math.IsInf(m, -1) { // nothing kept, no sink
					lse.Data[(b*sh.H+h)*nr+ri] = math.Inf(-1)
					continue
				}
				denom := math.Exp(sink - m) // 0 without a sink
				for j := 0; j < sh.KV; j++ {
					if math.IsInf(s[j], -1) {
						continue
					}
					p := math.Exp(s[j] - m)
					denom += p
					vrow := v.Data[((b*sh.HKV+hk)*sh.KV+j)*sh.Dv:][:sh.Dv]
					for d, x := range vrow {
						orow[d] += p * x
					}
				}
				for d := range orow {
					orow[d] /= denom
				}
				lse.Data[(b*sh.H+h)*nr+ri] = m + math.Log(denom)
			}
		}
	}
	return out, lse, nil
}

// rowScorer computes one query row's scores against every key: the part
// of the softmax Attention and AttentionBackward share.
type rowScorer struct {
	sh          shape
	q, k        *Tensor
	mask, score *Bound // nil: keep every pair / the score is the logit
	scale       float64
}

// newRowScorer binds spec's mask and score to spec.Env (or to an Env of the
// shape alone, without buffers) and resolves the default scale. It returns
// the Env it bound them to.
func newRowScorer(spec AttentionSpec, sh shape, q, k *Tensor) (*rowScorer, *Env, error) {
	env := spec.Env
	if env == nil {
		env = &Env{B: int64(sh.B), H: int64(sh.H), HKV: int64(sh.HKV), Q: int64(sh.Q), KV: int64(sh.KV)}
	}
	rs := &rowScorer{sh: sh, q: q, k: k, scale: spec.Scale}
	var err error
	if spec.Mask != nil {
		if rs.mask, err = spec.Mask.Bind(env); err != nil {
			return nil, nil, err
		}
	}
	if spec.Score != nil {
		if rs.score, err = spec.Score.Bind(env); err != nil {
			return nil, nil, err
		}
	}
	if rs.scale == 0 {
		rs.scale = dsl.DefaultScale(sh.D)
	}
	return rs, env, nil
}

// scores fills s[j] with the score of query row i of (b, h) against key j
// of kv head hk (-inf where the mask drops the pair; the score mod runs on
// kept pairs only) and, when x is not nil, x[j] with the scaled logit the
// score mod read. It returns the row's maximum, the sink included (sink
// when nothing is kept; NaN when a score is NaN).
func (r *rowScorer) scores(b, h, hk, i int, sink float64, x, s []float64) (float64, error) {
	sh := r.sh
	qrow := r.q.Data[((b*sh.H+h)*sh.Q+i)*sh.D:][:sh.D]
	m := sink
	for j := 0; j < sh.KV; j++ {
		s[j] = math.Inf(-1)
		if r.mask != nil {
			keep, err := r.mask.Mask(int64(b), int64(h), int64(i), int64(j))
			if err != nil {
				return 0, err
			}
			if !keep {
				continue
			}
		}
		krow := r.k.Data[((b*sh.HKV+hk)*sh.KV+j)*sh.D:][:sh.D]
		dot := 0.0
		for d, xq := range qrow {
			dot += xq * krow[d]
		}
		logit := dot * r.scale
		if x != nil {
			x[j] = logit
		}
		sc := logit
		if r.score != nil {
			var err error
			if sc, err = r.score.Score(logit, int64(b), int64(h), int64(i), int64(j)); err != nil {
				return 0, err
			}
		}
		s[j] = sc
		if sc > m || math.IsNaN(sc) {
			m = sc
		}
	}
	return m, nil
}

// shape holds the extents of one Attention call.
type shape struct {
	B, H, HKV, Q, KV, D, Dv int
}

// attentionShape checks that q, k, v, the sink and the Env agree.
func attentionShape(spec AttentionSpec, q, k, v *Tensor) (shape, error) {
	bad := func(format string, args ...any) (shape, error) {
		return shape{}, fmt.Errorf("%w: %s", ErrShape, fmt.Sprintf(format, args...))
	}
	for _, t := range []struct {
		name string
		t    *Tensor
	}{{"q", q}, {"k", k}, {"v", v}} {
		if t.t == nil {
			return bad("%s is nil", t.name)
		}
		if len(t.t.Dims) != 4 {
			return bad("%s has dims %v, want 4 (bhsd)", t.name, t.t.Dims)
		}
		if err := t.t.Validate(); err != nil {
			return bad("%s: %v", t.name, err)
		}
	}
	sh := shape{B: q.Dims[0], H: q.Dims[1], Q: q.Dims[2], D: q.Dims[3],
		HKV: k.Dims[1], KV: k.Dims[2], Dv: v.Dims[3]}
	switch {
	case k.Dims[0] != sh.B || v.Dims[0] != sh.B:
		return bad("batch: q %v, k %v, v %v", q.Dims, k.Dims, v.Dims)
	case k.Dims[3] != sh.D:
		return bad("head dim: q %v, k %v", q.Dims, k.Dims)
	case v.Dims[1] != sh.HKV || v.Dims[2] != sh.KV:
		return bad("k %v and v %v disagree on heads or length", k.Dims, v.Dims)
	case sh.HKV == 0 || sh.H%sh.HKV != 0:
		return bad("H=%d is not a multiple of HKV=%d", sh.H, sh.HKV)
	case sh.D == 0 && spec.Scale == 0:
		return bad("D=0 leaves the default scale 1/sqrt(D) undefined")
	case len(spec.Sink) != 0 && len(spec.Sink) != sh.H:
		return bad("sink has %d logits, want one per query head (%d)", len(spec.Sink), sh.H)
	}
	for _, i := range spec.Rows {
		if i < 0 || i >= sh.Q {
			return bad("row %d is outside [0, %d)", i, sh.Q)
		}
	}
	if e := spec.Env; e != nil {
		if e.B != int64(sh.B) || e.H != int64(sh.H) || e.HKV != int64(sh.HKV) || e.Q != int64(sh.Q) || e.KV != int64(sh.KV) {
			return bad("Env B=%d H=%d HKV=%d Q=%d KV=%d, tensors B=%d H=%d HKV=%d Q=%d KV=%d",
				e.B, e.H, e.HKV, e.Q, e.KV, sh.B, sh.H, sh.HKV, sh.Q, sh.KV)
		}
	}
	return sh, nil
}
