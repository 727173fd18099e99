package codegen

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/eval"
	"github.com/maskc/maskc/grad"
	"github.com/maskc/maskc/internal/golden"
)

// The score-gradient cases gpu/grad_torch_check.py evaluates with
// torch.autograd in float64: every rule score of ../grad/testdata/scores.flex
// and every example score, as PyTorch expressions (TorchExpr), with small
// buffers and points that include the kinks (ties, clamp bounds, 0), and
// maskc's own float64 derivatives (eval.BindGrad) at each point. Floats are
// strings ("%.17g", "NaN", "+Inf") so that JSON carries them exactly.
// TestTorchGradCases keeps ../gpu/grad_cases.json up to date: run
// `go test ./codegen -run TestTorchGradCases -update` after a change to the
// derivatives and review the diff.

type torchGradFile struct {
	Note  string          `json:"note"`
	Cases []torchGradCase `json:"cases"`
}

type torchGradCase struct {
	Name    string                 `json:"name"`
	Score   string                 `json:"score"` // the .flex text
	Torch   string                 `json:"torch"` // TorchExpr
	Sizes   map[string]int64       `json:"sizes"`
	Buffers map[string]torchBuffer `json:"buffers"`
	Points  []torchGradPoint       `json:"points"`
}

type torchBuffer struct {
	Dims  []int    `json:"dims"`
	Float bool     `json:"float"`
	Data  []string `json:"data"`
}

type torchGradPoint struct {
	Score  string          `json:"score"`
	B      int64           `json:"b"`
	H      int64           `json:"h"`
	Q      int64           `json:"q"`
	KV     int64           `json:"kv"`
	DScore string          `json:"dscore"`
	Reads  []torchGradRead `json:"reads"`
}

type torchGradRead struct {
	Buffer string  `json:"buffer"`
	Index  []int64 `json:"index"`
	D      string  `json:"d"`
}

func f64s(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

func TestTorchGradCases(t *testing.T) {
	text, err := os.ReadFile("../grad/testdata/scores.flex")
	require.NoError(t, err)
	p := checkSource(t, "scores.flex", string(text))
	var ls []*dsl.Lowered
	var progs []*check.Program
	var texts []string
	for _, m := range p.Mods {
		if m.Kind != dsl.ScoreMod {
			continue
		}
		l, diags := p.LowerMod(m.Name)
		require.False(t, diags.HasErrors(), diags.Render())
		ls, progs = append(ls, l), append(progs, p)
		texts = append(texts, p.File.Source.Slice(m.Decl.Sp))
	}
	// The examples with a score, by name, so that a new example does not
	// change the case file.
	for _, name := range []string{"alibi.flex", "relative_bias.flex", "softcap.flex"} {
		f := filepath.Join("../examples", name)
		ep := loadProgram(t, f)
		for _, a := range ep.Attentions {
			if a.Score != nil {
				ls, progs = append(ls, a.Score), append(progs, ep)
				texts = append(texts, filepath.Base(f)+": "+ep.File.Source.Slice(a.Decl.Sp))
			}
		}
	}

	r := rand.New(rand.NewSource(11))
	sizes := map[dsl.Var]int64{dsl.SizeB: 1, dsl.SizeH: 2, dsl.SizeHKV: 2, dsl.SizeQ: 4, dsl.SizeKV: 4}
	out := torchGradFile{Note: "written by go test ./codegen -run TestTorchGradCases -update; read by gpu/grad_torch_check.py"}
	for i, l := range ls {
		g, err := grad.Differentiate(l)
		require.NoError(t, err)
		env := &eval.Env{B: 1, H: 2, HKV: 2, Q: 4, KV: 4, Buffers: map[string]*eval.Tensor{}}
		c := torchGradCase{Name: l.Name, Score: texts[i], Torch: TorchExpr(l),
			Sizes:   map[string]int64{"B": 1, "H": 2, "HKV": 2, "Q": 4, "KV": 4},
			Buffers: map[string]torchBuffer{}}
		// Values with ties and bounds: 0, ±1, 0.5 recur in the buffers and
		// as scores.
		special := []float64{0, 1, -1, 0.5, 2}
		for _, d := range l.Buffers {
			var dims []int
			for _, dim := range progs[i].Buffer(d.Name.Name).Dims {
				dims = append(dims, int(dim.Eval(sizes)))
			}
			tn := eval.NewTensor(dims...)
			isFloat := d.DType.Name[0] == 'f' || d.DType.Name == "bf16"
			tb := torchBuffer{Dims: dims, Float: isFloat}
			for j := range tn.Data {
				switch {
				case !isFloat:
					tn.Data[j] = float64(r.Intn(3))
				case r.Intn(2) == 0:
					tn.Data[j] = special[r.Intn(len(special))]
				default:
					tn.Data[j] = math.Round(r.NormFloat64()*1e4) / 1e4
				}
				tb.Data = append(tb.Data, f64s(tn.Data[j]))
			}
			env.Buffers[d.Name.Name] = tn
			c.Buffers[d.Name.Name] = tb
		}
		bg, err := eval.BindGrad(g, env)
		require.NoError(t, err)
		fwd, err := eval.Compile(l)
		require.NoError(t, err)
		for k := range 16 {
			s := math.Round(r.NormFloat64()*2e4) / 1e4
			if k%2 == 0 {
				s = special[r.Intn(len(special))]
			}
			pt := torchGradPoint{Score: f64s(s), B: 0, H: r.Int63n(2), Q: r.Int63n(4), KV: r.Int63n(4)}
			if _, err := fwd.Score(env, s, pt.B, pt.H, pt.Q, pt.KV); errors.Is(err, eval.ErrIndexOutOfRange) {
				continue // torch would fail too: a read outside its buffer
			}
			ds, reads, err := bg.Grad(s, pt.B, pt.H, pt.Q, pt.KV)
			require.NoError(t, err)
			pt.DScore = f64s(ds)
			for _, rd := range reads {
				if rd.Outside {
					continue // never read: no gradient in torch either
				}
				pt.Reads = append(pt.Reads, torchGradRead{Buffer: rd.Buffer, Index: append([]int64(nil), rd.Index...), D: f64s(rd.D)})
			}
			c.Points = append(c.Points, pt)
		}
		require.NotEmpty(t, c.Points, l.Name)
		out.Cases = append(out.Cases, c)
	}
	js, err := json.MarshalIndent(out, "", " ")
	require.NoError(t, err)
	js = append(js, '\n')
	golden.Check(t, "../gpu/grad_cases.json", js)
}
