package codegen

import (
	"fmt"
	"math"
	"strings"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
)

// Options select the kernel configuration. Zero fields take the attention
// block's own settings (head_dim, dtype, layout), then the defaults 128,
// bf16 and bshd.
type Options struct {
	// HeadDim is 64 or 128.
	HeadDim int
	// DType is "bf16" or "fp16".
	DType string
	// Layout is "bshd" or "bhsd".
	Layout string
	// SourceName names the .flex file in #line directives; empty means the
	// name the file was parsed under.
	SourceName string
}

// Kernel is one generated attention kernel.
type Kernel struct {
	// Name is the attention block's name.
	Name string
	// Source is the full self-contained source: hipsrc.Prelude,
	// RuntimeSource, Generated and hipsrc.AttnFwd.
	Source string
	// BwdSource is the full source of the backward kernels: Source followed
	// by hipsrc.AttnBwd (entry points BwdEntries; the forward's
	// maskc_tile_flags serves both).
	BwdSource string
	// Generated is the per-attention part: configuration #defines, buffer
	// accessors, maskc_mask, maskc_score, the score-gradient interface
	// (MASKC_SCORE_GRAD_READS, MaskcScoreGradRead, maskc_score_grad; see
	// gradfunc.go), maskc_kv_range, maskc_q_range, maskc_tile_full.
	Generated string
	// Entry is the kernel entry point, "maskc_attn_fwd".
	Entry string
	// FlagsEntry is the pre-pass entry point "maskc_tile_flags" when
	// Sparsity is SparsityPrepass, else empty.
	FlagsEntry string
	// Sparsity is SparsityAnalytic, SparsityPrepass or SparsityNone.
	Sparsity string
	// SparsityReason says why, for the plan.
	SparsityReason string
	// Buffers are the MaskcBuffers entries in slot order.
	Buffers []BufferABI
	// GradBuffers are the entries of Buffers that the score reads
	// differentiably (float buffers whose reads maskc_score_grad reports),
	// in slot order; every other buffer's gradient is zero.
	GradBuffers []BufferABI
	// ScoreGradReads is MASKC_SCORE_GRAD_READS: the number of entries
	// maskc_score_grad fills.
	ScoreGradReads int
	// HeadDim is the head dimension compiled in: 64 or 128.
	HeadDim int
	// DType is the element type of q, k, v and o: "bf16" or "fp16".
	DType string
	// Layout is the tensor layout: "bshd" or "bhsd" (the launcher passes
	// the matching strides).
	Layout string
	// HasMask says whether the kernel applies a mask.
	HasMask bool
	// HasScore says whether the kernel applies a score mod.
	HasScore bool
	// HasSink says whether the kernel adds per-head sink logits.
	HasSink bool
	// MaskUsesB says whether the mask reads b (when not, pre-pass flags are
	// shared across the batch).
	MaskUsesB bool
	// MaskUsesH says whether the mask reads h (when not, pre-pass flags are
	// shared across heads).
	MaskUsesH bool
	// Scale is the softmax scale to launch with: the block's scale setting,
	// else 1/sqrt(HeadDim).
	Scale float64
	// KVHeads is the block's kv_heads setting (0: as many as query heads).
	KVHeads int
	// BlockM is the number of query rows per block (grid x is ceil(Sq/BlockM)).
	BlockM int
	// BlockN is the number of keys per tile of the mma.sync and MFMA
	// kernels; Launch has each platform's.
	BlockN int
	// Threads is the block size on AMD (64-wide wavefronts).
	Threads int
	// Launch gives the block size and dynamic shared memory of
	// maskc_attn_fwd per platform, by hipsrc.Platform name ("amd", "nvidia",
	// "nvidia-sm90a").
	Launch map[string]LaunchConfig
	// Mask and Score are the lowered mask and score compiled in: the
	// block's mods, or what its causal/window/alibi settings mean on Turbo's
	// kernels. A reference that checks the kernel must evaluate these.
	Mask, Score *dsl.Lowered
	// MaskTorch is the mask as a PyTorch expression (TorchExpr), empty
	// when there is no mask.
	MaskTorch string
	// ScoreTorch is the score as a PyTorch expression, empty when there is
	// no score mod.
	ScoreTorch string
}

// BwdEntries are the backward kernels' entry points in BwdSource, in the
// order a backward pass launches them (attn_bwd.h says when each runs).
var BwdEntries = []string{"maskc_attn_bwd_pre", "maskc_attn_bwd", "maskc_attn_bwd_dq", "maskc_attn_bwd_dq_convert",
	"maskc_attn_bwd_sink", "maskc_attn_bwd_buf_convert"}

// LaunchConfig is how maskc_attn_fwd is launched on one platform.
type LaunchConfig struct {
	// BlockN is the number of keys per tile (MASKC_BLOCK_N) on the platform.
	BlockN int `json:"block_n"`
	// Threads is the block size.
	Threads int `json:"threads"`
	// SharedMemBytes is the dynamic shared memory per block.
	SharedMemBytes int `json:"shared_mem_bytes"`
}

// Generate builds the kernel of attention block a of the checked program p.
// It reports E300-E399 diagnostics for what a generated kernel cannot do.
func Generate(p *check.Program, a *check.Attention, opts Options) (*Kernel, dsl.Diagnostics) {
	var diags dsl.Diagnostics
	src := p.File.Source
	if opts.SourceName != "" && src != nil {
		renamed := *src
		renamed.Name = opts.SourceName
		src = &renamed
	}
	// Trainer-style settings (causal, window, alibi) are compiled as the
	// mask and score they mean on Turbo's kernels, so a generated fallback
	// computes exactly what the Turbo call would.
	mask, score := a.Mask, a.Score
	if mask == nil {
		mask = settingsMask(a)
	}
	if score == nil {
		score = settingsScore(a)
	}
	if bufs, _ := BufferTable(src, mask); alwaysKept(mask, bufs) {
		mask = nil // e.g. q >= 0 and kv >= 0 (intrange.go): the unmasked kernel computes the same
	}
	k := &Kernel{
		Name: a.Name, Entry: "maskc_attn_fwd", Mask: mask, Score: score, HasMask: mask != nil, HasScore: score != nil, HasSink: a.Sink != nil,
		KVHeads: a.KVHeads, BlockM: hipsrc.BlockM, BlockN: hipsrc.BlockN, Threads: hipsrc.AMD.NumThreads(),
		Launch: map[string]LaunchConfig{},
	}
	k.configure(src, a, opts, &diags)
	unsupportedSettings(src, a, &diags)

	bufs, d := BufferTable(src, mask, score)
	diags = append(diags, d...)
	k.Buffers = bufs
	maskFn, d := MaskFunc(src, mask, bufs)
	diags = append(diags, d...)
	scoreFn, d := ScoreFunc(src, score, bufs)
	diags = append(diags, d...)
	gradFn, d := ScoreGradFunc(src, score, bufs)
	diags = append(diags, d...)
	k.GradBuffers, k.ScoreGradReads = gradFn.Buffers, gradFn.Reads
	if diags.HasErrors() {
		diags.Sort()
		return nil, diags
	}
	sp := planSparsity(mask, bufs, &diags)
	if diags.HasErrors() {
		diags.Sort()
		return nil, diags
	}
	k.Sparsity, k.SparsityReason = sp.kind, sp.reason
	if sp.kind == SparsityPrepass {
		k.FlagsEntry = "maskc_tile_flags"
	}
	k.MaskUsesB, k.MaskUsesH = usesVar(mask, dsl.VarB), usesVar(mask, dsl.VarH)
	k.MaskTorch, k.ScoreTorch = TorchExpr(mask), TorchExpr(score)

	var g strings.Builder
	k.writeHeader(&g, src)
	for i := range bufs {
		writeReader(&g, &bufs[i])
	}
	for _, b := range sp.segments {
		writeSegmentSearch(&g, b)
	}
	g.WriteString(maskFn + "\n" + scoreFn + "\n" + gradFn.Code + "\n" + sp.code)
	generated := g.String()
	k.Generated = resolveLineResets(generated, a.Name+".generated.h")
	k.Source = resolveLineResets(assemble(generated), a.Name+".cu")
	k.BwdSource = resolveLineResets(assemble(generated, hipsrc.AttnBwd), a.Name+".bwd.cu")
	return k, diags
}

// assemble joins the parts of a full kernel source.
func assemble(generated string, more ...string) string {
	parts := append([]string{hipsrc.Prelude, RuntimeSource, generated, hipsrc.AttnFwd}, more...)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p)
		if !strings.HasSuffix(p, "\n") {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// configure resolves head dim, dtype, layout and scale.
func (k *Kernel) configure(src *dsl.Source, a *check.Attention, opts Options, diags *dsl.Diagnostics) {
	at := func(key string) dsl.Span {
		if s := a.Setting(key); s != nil {
			return s.Value.Span()
		}
		return a.Decl.Name.Sp
	}
	k.HeadDim = firstNonZero(opts.HeadDim, a.HeadDim, 128)
	for _, p := range hipsrc.Platforms {
		smem, err := hipsrc.SharedMemBytes(p, k.HeadDim)
		if err != nil {
			diags.Add(src, at("head_dim"), CodeHeadDim, "a generated kernel has no configuration for head_dim %d", k.HeadDim).
				WithHint("use head_dim = 64 or 128 (pad the head dimension on the Python side)")
			break
		}
		k.Launch[p.String()] = LaunchConfig{BlockN: p.BlockN(), Threads: p.NumThreads(), SharedMemBytes: smem}
	}
	k.DType = firstNonEmpty(opts.DType, a.DType, "bf16")
	if k.DType != "bf16" && k.DType != "fp16" {
		diags.Add(src, at("dtype"), CodeDType, "a generated kernel has no configuration for dtype %s", k.DType).
			WithHint("use dtype = bf16 or fp16")
	}
	k.Layout = firstNonEmpty(opts.Layout, a.Layout, "bshd")
	if k.Layout != "bshd" && k.Layout != "bhsd" {
		diags.Add(src, at("layout"), CodeLayout, "a generated kernel takes bshd or bhsd tensors, not %s", k.Layout).
			WithHint("unpack thd sequences to bshd, or express the packing as a document mask over a segments buffer")
	}
	k.Scale = 0
	if a.Scale != nil {
		k.Scale = *a.Scale
	} else if k.HeadDim > 0 {
		k.Scale = 1 / math.Sqrt(float64(k.HeadDim))
	}
}

// unsupportedSettings refuses trainer-style settings that a generated kernel
// would otherwise silently ignore.
func unsupportedSettings(src *dsl.Source, a *check.Attention, diags *dsl.Diagnostics) {
	refuse := func(key, hint string) {
		s := a.Setting(key)
		sp := a.Decl.Name.Sp
		if s != nil {
			sp = s.Sp
		}
		diags.Add(src, sp, CodeSetting, "a generated kernel does not implement the %s setting", key).WithHint("%s", hint)
	}
	// causal, window and alibi alone become the kernel's mask and score
	// (settingsMask, settingsScore); next to a mask or score mod there would
	// be two sources for one quantity.
	if a.Causal != nil && *a.Causal && a.Mask != nil {
		refuse("causal", "write the causal constraint into the mask: q >= kv")
	}
	if a.Window != nil && a.Mask != nil {
		refuse("window", "write the window into the mask, e.g. q >= kv and q - kv <= W")
	}
	if a.Alibi != nil && a.Score != nil {
		refuse("alibi", "write ALiBi as a score: score + slopes[h] * (kv - q)")
	}
	if a.Bias != nil {
		refuse("bias", "read the bias in a score: score + bias[...]")
	}
	if a.Dropout != 0 {
		refuse("dropout", "remove dropout from the block")
	}
	if a.FP8 {
		refuse("fp8", "use dtype = bf16 or fp16")
	}
	if a.ContextParallel {
		refuse("context_parallel", "remove context_parallel from the block")
	}
	if a.ReturnAttnProbs {
		refuse("return_attn_probs", "remove return_attn_probs from the block")
	}
}

// writeHeader writes the comment and configuration #defines.
func (k *Kernel) writeHeader(w *strings.Builder, src *dsl.Source) {
	name := "<input>"
	if src != nil {
		name = src.Name
	}
	fmt.Fprintf(w, "// maskc generated part of attention %s (%s)\n", k.Name, name)
	fmt.Fprintf(w, "// block sparsity: %s: %s\n", k.Sparsity, k.SparsityReason)
	fmt.Fprintf(w, "#define MASKC_HEAD_DIM %d\n", k.HeadDim)
	if k.DType == "fp16" {
		w.WriteString("#define MASKC_DTYPE_F16 1\n")
	} else {
		w.WriteString("#define MASKC_DTYPE_BF16 1\n")
	}
	fmt.Fprintf(w, "#define MASKC_LAYOUT_%s 1\n", strings.ToUpper(k.Layout))
	for _, f := range []struct {
		on   bool
		name string
	}{{k.HasMask, "MASKC_HAS_MASK"}, {k.HasScore, "MASKC_HAS_SCORE"}, {k.HasSink, "MASKC_HAS_SINK"}} {
		if f.on {
			fmt.Fprintf(w, "#define %s 1\n", f.name)
		}
	}
	fmt.Fprintf(w, "#define MASKC_SPARSITY_%s 1\n", strings.ToUpper(k.Sparsity))
	fmt.Fprintf(w, "#define MASKC_MASK_USES_B %d\n", b2i(k.MaskUsesB))
	fmt.Fprintf(w, "#define MASKC_MASK_USES_H %d\n", b2i(k.MaskUsesH))
	// The mask and score come with row and column parts (funcs.go).
	w.WriteString("#define MASKC_SPLIT_MODS 1\n\n")
}

func usesVar(l *dsl.Lowered, v dsl.Var) bool {
	if l == nil {
		return false
	}
	found := false
	dsl.Inspect(l.Expr, func(x dsl.Expr) bool {
		if r, ok := x.(*dsl.VarRef); ok && r.Var == v {
			found = true
		}
		return !found
	})
	return found
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func firstNonZero(xs ...int) int {
	for _, x := range xs {
		if x != 0 {
			return x
		}
	}
	return 0
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}
