package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/compiler"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/parser"
)

// maxGrid bounds the grid maskc eval draws; larger masks are not readable
// in a terminal anyway.
const maxGrid = 512

// bufferFlags collects repeated `--buffer NAME=v0,v1,...` contents (or
// NAME=@FILE: the values from FILE, separated by commas or white space).
type bufferFlags map[string][]float64

func (b bufferFlags) String() string { return "" }

func (b bufferFlags) Set(s string) error {
	name, vals, ok := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return fmt.Errorf("want NAME=v0,v1,..., got %q", s)
	}
	if path, ok := strings.CutPrefix(vals, "@"); ok { // NAME=@FILE: the values from a file
		text, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("buffer %s: %v", name, err)
		}
		vals = strings.Join(strings.Fields(string(text)), ",")
	}
	var data []float64
	for _, f := range strings.Split(vals, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			return fmt.Errorf("buffer %s: %q is not a number", name, f)
		}
		data = append(data, v)
	}
	b[name] = data
	return nil
}

// runEval implements `maskc eval FILE (--mask EXPR | --attention NAME)`:
// it draws the mask for one (b, h) as a Q x KV grid, '#' visible.
func runEval(e *env, args []string) int {
	fs := newFlagSet(e, "eval", "FILE (--mask EXPR | --attention NAME) [--q 16] [--kv 16] [-D NAME=VALUE]...")
	maskExpr := fs.String("mask", "", "mask to draw: a mod name, a factory call such as `sliding_window(4)`, or and_masks(...)")
	attn := fs.String("attention", "", "draw the mask of this attention block instead")
	q := fs.Int("q", 16, "query length Q")
	kv := fs.Int("kv", 16, "key/value length KV")
	bIdx := fs.Int("b", 0, "batch index b to draw")
	hIdx := fs.Int("h", 0, "query head index h to draw")
	sizeB := fs.Int("B", 1, "batch size B")
	sizeH := fs.Int("H", 1, "query heads H")
	sizeHKV := fs.Int("HKV", 0, "key/value heads HKV (default H)")
	defines := defineFlag(fs)
	buffers := bufferFlags{}
	fs.Var(buffers, "buffer", "contents of a captured buffer, row-major: `NAME=v0,v1,...` or NAME=@FILE (repeatable)")
	files, code, ok := parseArgs(fs, args)
	if !ok {
		return code
	}
	if len(files) != 1 || (*maskExpr == "") == (*attn == "") {
		return usageError(e.stderr, "eval takes one FILE and exactly one of --mask or --attention")
	}
	if *q < 1 || *kv < 1 || *q > maxGrid || *kv > maxGrid {
		return usageError(e.stderr, "--q and --kv must be between 1 and %d", maxGrid)
	}
	if *sizeHKV == 0 {
		*sizeHKV = *sizeH
	}
	if *sizeB < 1 || *sizeH < 1 || *sizeHKV < 1 || *bIdx < 0 || *bIdx >= *sizeB || *hIdx < 0 || *hIdx >= *sizeH {
		return usageError(e.stderr, "need B, H, HKV >= 1, 0 <= b < B and 0 <= h < H")
	}
	u, err := load(e, files[0], defines)
	if err != nil {
		fmt.Fprintf(e.stderr, "maskc: %v\n", err)
		return exitUsage
	}
	if u.diags.HasErrors() {
		printDiags(e.stderr, u.diags)
		return exitError
	}
	// The verdict of `maskc check`: a file it rejects (a code generator's
	// refusal included) is not drawn either.
	if _, vd := compiler.Verdict(u.prog, compiler.Options{}); vd.HasErrors() {
		printDiags(e.stderr, vd.Errors())
		return exitError
	}
	var lowered *dsl.Lowered
	var title string
	if *attn != "" {
		a := u.prog.Attention(*attn)
		if a == nil {
			return usageError(e.stderr, "%s: no attention block named %q", files[0], *attn)
		}
		lowered, title = a.Mask, "attention "+*attn
	} else {
		expr, pd := parser.ParseExpr("--mask", *maskExpr)
		if pd.HasErrors() {
			printDiags(e.stderr, pd)
			return exitUsage
		}
		var ld dsl.Diagnostics
		// Positions in the expression are --mask:1:N, not into the file.
		lowered, ld = u.prog.LowerIn(dsl.NewSource("--mask", []byte(*maskExpr)), expr)
		if ld.HasErrors() {
			printDiags(e.stderr, ld)
			return exitError
		}
		title = *maskExpr
	}
	env := &eval.Env{B: int64(*sizeB), H: int64(*sizeH), HKV: int64(*sizeHKV), Q: int64(*q), KV: int64(*kv), Buffers: map[string]*eval.Tensor{}}
	if lowered != nil {
		if err := bindBuffers(u.prog, lowered, env, buffers); err != nil {
			return usageError(e.stderr, "%v", err)
		}
	}
	var fn *eval.Func
	if lowered != nil {
		if fn, err = eval.Compile(lowered); err != nil {
			fmt.Fprintf(e.stderr, "maskc: %v\n", err)
			return exitError
		}
	}
	var bound *eval.Bound
	if fn != nil {
		if bound, err = fn.Bind(env); err != nil {
			fmt.Fprintf(e.stderr, "maskc: %v\n", locate(err, u.file.Source))
			return exitError
		}
		for _, n := range bound.Notes() {
			fmt.Fprintf(e.stderr, "maskc: note: %s\n", n)
		}
	}
	grid := make([][]bool, *q)
	visible := 0
	for i := range grid {
		grid[i] = make([]bool, *kv)
		for j := range grid[i] {
			ok := true
			if bound != nil {
				if ok, err = bound.Mask(int64(*bIdx), int64(*hIdx), int64(i), int64(j)); err != nil {
					// FILE:LINE:COL, not byte offsets (issue 31).
					fmt.Fprintf(e.stderr, "maskc: %s (at q=%d kv=%d)\n", locate(err, errSource(err, u, *attn == "", *maskExpr)), i, j)
					return exitError
				}
			}
			grid[i][j] = ok
			if ok {
				visible++
			}
		}
	}
	fmt.Fprintf(e.stdout, "%s  b=%d h=%d  Q=%d KV=%d  (%d of %d visible, # = visible)\n", title, *bIdx, *hIdx, *q, *kv, visible, *q**kv)
	drawGrid(e.stdout, grid)
	return exitOK
}

// maxEvalElems bounds the elements of one buffer `maskc eval` binds (the
// values come from the command line).
const maxEvalElems = 1 << 24

// bindBuffers checks that every buffer the mask reads was given with the
// size its declaration implies for the chosen sizes; errors are positioned
// at the buffer's declaration.
func bindBuffers(p *check.Program, l *dsl.Lowered, env *eval.Env, given bufferFlags) error {
	sizes := map[dsl.Var]int64{dsl.SizeB: env.B, dsl.SizeH: env.H, dsl.SizeHKV: env.HKV, dsl.SizeQ: env.Q, dsl.SizeKV: env.KV}
	for _, decl := range l.Buffers {
		buf := p.Buffer(decl.Name.Name)
		if buf == nil {
			return fmt.Errorf("buffer %s is not declared", decl.Name.Name)
		}
		at := buf.Name
		if src := p.File.Source; src != nil && buf.Decl != nil {
			pos := src.Position(buf.Decl.Sp.Start)
			at = fmt.Sprintf("%s:%d:%d: buffer %s", src.Name, pos.Line, pos.Column, buf.Name)
		}
		dims := make([]int, len(buf.Dims))
		n := 1
		var shape []string
		for i, d := range buf.Dims {
			v, ok := d.EvalExact(sizes)
			if !ok {
				return fmt.Errorf("%s: dimension %d overflows int64 for these sizes", at, i)
			}
			dims[i] = int(v)
			if dims[i] < 0 {
				return fmt.Errorf("%s: dimension %d is negative for these sizes", at, i)
			}
			shape = append(shape, strconv.Itoa(dims[i]))
			if dims[i] != 0 && n > maxEvalElems/dims[i] {
				return fmt.Errorf("%s: [%s...] has more than %d elements; eval draws small grids", at, strings.Join(shape, ", "), maxEvalElems)
			}
			n *= dims[i]
		}
		data, ok := given[buf.Name]
		if !ok {
			return fmt.Errorf("the mask reads buffer %s [%s]: pass its %d values with --buffer %s=v0,v1,...", buf.Name, strings.Join(shape, ", "), n, buf.Name)
		}
		if len(data) != n {
			return fmt.Errorf("buffer %s has shape [%s] = %d values for these sizes, --buffer gave %d", buf.Name, strings.Join(shape, ", "), n, len(data))
		}
		env.Buffers[buf.Name] = &eval.Tensor{Dims: dims, Data: data}
	}
	return nil
}

// drawGrid prints rows of '#' (visible) and '.' (masked) under a column
// ruler of tens and units digits.
func drawGrid(w io.Writer, grid [][]bool) {
	kv := len(grid[0])
	pad := len(strconv.Itoa(len(grid)-1)) + 2
	if kv > 10 {
		var tens strings.Builder
		for j := 0; j < kv; j++ {
			if j%10 == 0 {
				tens.WriteString(strconv.Itoa(j / 10 % 10))
			} else {
				tens.WriteByte(' ')
			}
		}
		fmt.Fprintf(w, "%*s%s\n", pad, "", strings.TrimRight(tens.String(), " "))
	}
	var units strings.Builder
	for j := 0; j < kv; j++ {
		units.WriteString(strconv.Itoa(j % 10))
	}
	fmt.Fprintf(w, "%*s%s\n", pad, "", units.String())
	for i, row := range grid {
		var b strings.Builder
		for _, v := range row {
			if v {
				b.WriteByte('#')
			} else {
				b.WriteByte('.')
			}
		}
		fmt.Fprintf(w, "%*d  %s\n", pad-2, i, b.String())
	}
}

// errSource is the source an evaluation error's span is in: the file,
// unless the mask is a --mask expression and the error is not in a mod
// declared in the file.
func errSource(err error, u *unit, fromExpr bool, expr string) *dsl.Source {
	var ee *eval.Error
	if !fromExpr || !errors.As(err, &ee) {
		return u.file.Source
	}
	if f := strings.Fields(ee.Mod); len(f) >= 2 && u.prog.Mod(strings.TrimRight(f[1], "(")) != nil {
		return u.file.Source
	}
	return dsl.NewSource("--mask", []byte(expr))
}

// locate gives an *eval.Error its position in src.
func locate(err error, src *dsl.Source) string {
	var ee *eval.Error
	if errors.As(err, &ee) {
		return ee.Locate(src)
	}
	return err.Error()
}
