package eval

import (
	"fmt"

	"github.com/maskc/maskc/dsl"
)

// Bound is a Func bound to one Env: the buffers looked up and checked once,
// so that each point costs only the expression. A Bound reuses its state
// between calls and must not be used by two goroutines at once; bind one
// per goroutine.
type Bound struct {
	fn *Func
	fr frame
}

// Bind looks up and checks the buffers fn reads in env (see Mask for the
// checks) and returns a Bound for evaluating many points. A nil env has no
// sizes and no buffers.
func (fn *Func) Bind(env *Env) (*Bound, error) {
	if env == nil {
		env = &Env{}
	}
	bd := &Bound{fn: fn}
	bd.fr.sizes = [5]int64{env.B, env.H, env.HKV, env.Q, env.KV}
	if err := fn.bindBuffers(env, &bd.fr); err != nil {
		return nil, err
	}
	return bd, nil
}

// Notes are remarks on the bound buffers that do not stop evaluation: a
// `segments` buffer whose ids are not non-decreasing (the property's
// promise broken; the mask is evaluated as written).
func (bd *Bound) Notes() []string { return bd.fr.notes }

func (fn *Func) what() string { return fn.kind.String() + " " + fn.name }

// Mask evaluates a mask mod at (b, h, q, kv) with env's sizes and buffers.
// It returns an *Error when a buffer is missing or misshapen, the point is
// outside [0, B) x [0, H) x [0, Q) x [0, KV), a buffer index is out of
// range, or the arithmetic fails as Python's would (division by zero, an
// int64 overflow). It binds env on every call; for many points use Bind.
func (fn *Func) Mask(env *Env, b, h, q, kv int64) (bool, error) {
	bd, err := fn.Bind(env)
	if err != nil {
		return false, err
	}
	return bd.Mask(b, h, q, kv)
}

// Score evaluates a score mod on the scaled logit score at (b, h, q, kv),
// with the errors of Mask.
func (fn *Func) Score(env *Env, score float64, b, h, q, kv int64) (float64, error) {
	bd, err := fn.Bind(env)
	if err != nil {
		return 0, err
	}
	return bd.Score(score, b, h, q, kv)
}

// Mask evaluates the bound mask mod at (b, h, q, kv); see Func.Mask.
func (bd *Bound) Mask(b, h, q, kv int64) (bool, error) {
	if bd.fn.mask == nil {
		return false, &Error{Mod: bd.fn.what(), Span: dsl.NoSpan, Err: ErrUnsupported, Detail: "a score mod evaluated as a mask"}
	}
	if err := bd.enter(b, h, q, kv); err != nil {
		return false, err
	}
	v := bd.fn.mask(&bd.fr)
	if bd.fr.err != nil {
		return false, bd.leave()
	}
	return v, nil
}

// Score evaluates the bound score mod on score at (b, h, q, kv); see
// Func.Score.
func (bd *Bound) Score(score float64, b, h, q, kv int64) (float64, error) {
	if bd.fn.score == nil {
		return 0, &Error{Mod: bd.fn.what(), Span: dsl.NoSpan, Err: ErrUnsupported, Detail: "a mask mod evaluated as a score"}
	}
	if err := bd.enter(b, h, q, kv); err != nil {
		return 0, err
	}
	bd.fr.score = score
	v := bd.fn.score(&bd.fr)
	if bd.fr.err != nil {
		return 0, bd.leave()
	}
	return v, nil
}

// enter checks the point against the sizes and loads it into the frame.
func (bd *Bound) enter(b, h, q, kv int64) error {
	s := &bd.fr.sizes
	if uint64(b) >= uint64(s[0]) || uint64(h) >= uint64(s[1]) || uint64(q) >= uint64(s[3]) || uint64(kv) >= uint64(s[4]) {
		return &Error{Mod: bd.fn.what(), Span: dsl.NoSpan, Err: ErrBadPoint,
			Detail: fmt.Sprintf("point b=%d h=%d q=%d kv=%d outside B=%d H=%d Q=%d KV=%d", b, h, q, kv, s[0], s[1], s[3], s[4])}
	}
	bd.fr.ix = [4]int64{b, h, q, kv}
	bd.fr.err = nil
	return nil
}

// leave completes the frame's error with the mod and the point.
func (bd *Bound) leave() error {
	e := bd.fr.err
	bd.fr.err = nil
	e.Mod = bd.fn.what()
	e.Detail += fmt.Sprintf(" at b=%d h=%d q=%d kv=%d", bd.fr.ix[0], bd.fr.ix[1], bd.fr.ix[2], bd.fr.ix[3])
	return e
}
