package hipsrc

import (
	"fmt"
	"math"
	"strings"
	"unicode"
)

// DimSymbols are the size names a buffer extent (BufferSlot.Dims) may use.
var DimSymbols = []string{"B", "H", "HKV", "Q", "KV"}

// EvalDims returns the extents of a buffer declared with dims
// (BufferSlot.Dims: integer expressions over DimSymbols with Python's
// syntax and semantics, `//` and `%` floor) at sizes, as the Python
// package's maskc.checks.eval_dims does. An expression it cannot read, a
// name that is no size, a division by zero or an overflow is an error.
func EvalDims(dims []string, sizes map[string]int64) ([]int64, error) {
	out := make([]int64, len(dims))
	for i, text := range dims {
		p := &dimParser{text: text, sizes: sizes}
		v, err := p.expr()
		if err == nil && p.skip() < len(p.text) {
			err = p.errorf("unexpected %q", p.text[p.pos:])
		}
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// dimParser evaluates one extent by recursive descent: expr = term {(+|-)
// term}, term = unary {(*|//|%) unary}, unary = -unary | +unary | atom, atom
// = integer | name | ( expr ).
type dimParser struct {
	text  string
	pos   int
	sizes map[string]int64
}

func (p *dimParser) errorf(format string, args ...any) error {
	return fmt.Errorf("buffer extent %q: %s", p.text, fmt.Sprintf(format, args...))
}

// skip moves past spaces and returns the position.
func (p *dimParser) skip() int {
	for p.pos < len(p.text) && p.text[p.pos] == ' ' {
		p.pos++
	}
	return p.pos
}

// take consumes op if it comes next.
func (p *dimParser) take(op string) bool {
	p.skip()
	if strings.HasPrefix(p.text[p.pos:], op) {
		p.pos += len(op)
		return true
	}
	return false
}

func (p *dimParser) expr() (int64, error) {
	v, err := p.term()
	for err == nil {
		var w int64
		switch {
		case p.take("+"):
			if w, err = p.term(); err == nil {
				v, err = p.checked(v+w, (v+w > v) == (w > 0) || w == 0)
			}
		case p.take("-"):
			if w, err = p.term(); err == nil {
				v, err = p.checked(v-w, (v-w < v) == (w > 0) || w == 0)
			}
		default:
			return v, nil
		}
	}
	return 0, err
}

func (p *dimParser) term() (int64, error) {
	v, err := p.unary()
	for err == nil {
		var w int64
		switch {
		case p.take("//"):
			if w, err = p.unary(); err == nil {
				if w == 0 {
					return 0, p.errorf("divides by zero")
				}
				q := v / w
				if (v%w != 0) && ((v < 0) != (w < 0)) {
					q--
				}
				v = q
			}
		case p.take("%"):
			if w, err = p.unary(); err == nil {
				if w == 0 {
					return 0, p.errorf("divides by zero")
				}
				m := v % w
				if m != 0 && ((m < 0) != (w < 0)) {
					m += w
				}
				v = m
			}
		case p.take("*"):
			if w, err = p.unary(); err == nil {
				v, err = p.checked(v*w, v == 0 || (v*w)/v == w && !(v == -1 && w == math.MinInt64))
			}
		default:
			return v, nil
		}
	}
	return 0, err
}

// checked returns v, the result of an operation, when ok says that it did
// not overflow int64.
func (p *dimParser) checked(v int64, ok bool) (int64, error) {
	if !ok {
		return 0, p.errorf("overflows 64 bits")
	}
	return v, nil
}

func (p *dimParser) unary() (int64, error) {
	switch {
	case p.take("-"):
		v, err := p.unary()
		if err == nil && v == math.MinInt64 {
			return 0, p.errorf("overflows 64 bits")
		}
		return -v, err
	case p.take("+"):
		return p.unary()
	}
	return p.atom()
}

func (p *dimParser) atom() (int64, error) {
	start := p.skip()
	if p.take("(") {
		v, err := p.expr()
		if err != nil {
			return 0, err
		}
		if !p.take(")") {
			return 0, p.errorf("missing )")
		}
		return v, nil
	}
	for p.pos < len(p.text) && (p.text[p.pos] == '_' || unicode.IsLetter(rune(p.text[p.pos])) || unicode.IsDigit(rune(p.text[p.pos]))) {
		p.pos++
	}
	word := p.text[start:p.pos]
	switch {
	case word == "":
		return 0, p.errorf("expected a number, a size or (")
	case word[0] >= '0' && word[0] <= '9':
		var v int64
		for _, c := range strings.ReplaceAll(word, "_", "") {
			if c < '0' || c > '9' {
				return 0, p.errorf("%q is not an integer", word)
			}
			if v > (math.MaxInt64-int64(c-'0'))/10 {
				return 0, p.errorf("%s overflows 64 bits", word)
			}
			v = 10*v + int64(c-'0')
		}
		return v, nil
	}
	v, ok := p.sizes[word]
	if !ok {
		return 0, p.errorf("%s is not one of the sizes %s", word, strings.Join(DimSymbols, ", "))
	}
	return v, nil
}
