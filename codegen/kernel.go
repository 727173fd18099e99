package codegen

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/maskc/maskc/check"
	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/hipsrc"
	"github.com/maskc/maskc/normal"
)

// Options select the kernel configuration. Zero fields take the attention
// block's own settings (head_dim, dtype, layout), then the defaults 128,
// bf16 and bshd.
type Options struct {
	// HeadDim is one of hipsrc.HeadDims (64, 128, 256).
	HeadDim int
	// DType is "bf16" or "fp16".
	DType string
	// Layout is "bshd" or "bhsd".
	Layout string
	// SourceName names the .flex file in #line directives; empty means the
	// name the file was parsed under.
	SourceName string
	// Forms are normal forms already computed, by lowered mask (the
	// classifier's, classify.Plan.Forms): a mask's form is taken from here
	// and computed only when missing. Read only.
	Forms map[*dsl.Lowered]*normal.Form
	// WSWalks gives the analytic masks that warpSpecialized leaves on
	// attn_fwd.h (unions walked interval by interval, remainder filters,
	// block relations, segment equalities) the warp-specialized sm_90a
	// forward too, walking their intervals there (MASKC_WS_WALK,
	// hipsrc/attn_fwd_sm90.h). Two kinds take that forward without it:
	//   - block selections (a walk that reads the selected blocks from a
	//     buffer, selWalk): on the H200 MoBA with k = 4, 8 and 16 and
	//     BigBird ran 1.5-2.2x faster there, NSA's 64-row blocks 5% slower
	//     (run 29);
	//   - masks with long runs of full tiles (longColumns, the host
	//     estimate the backward's choice reads), at head dim 128, where
	//     they were timed: on the H100 (run 45b,
	//     forward over Flex, attn_fwd.h -> here) block_causal 1.13 -> 1.39,
	//     block diffusion 1.00 -> 1.19, bd3lm 0.99 -> 1.28 and 1.01 ->
	//     1.17, a speculative decoder's mask 1.02 -> 1.25.
	// The rest measured slower there in the same call (documents 1.05 ->
	// 0.83, a document with a window 1.08 -> 0.70, dilated windows 0.93 ->
	// 0.72, strided and % masks, packed multimodal spans, a 2-D
	// neighbourhood: short runs, where the warp-specialized block's fixed
	// cost is not paid back): off by default (cmd/genkernels -ws-walks,
	// bench_ext.py --alt).
	WSWalks bool
	// BwdDQOrder gives the deterministic backward of every mask whose
	// columns start on a diagonal, and of every kernel on the
	// warp-specialized backward (bwdChoice), the ordered dQ (bwdDQOrdered,
	// hipsrc.BwdDQOrderDefine), not only masks with a transcendental
	// score: an experiment (cmd/genkernels -bwd-dq-order).
	BwdDQOrder bool
	// BwdWS gives every kernel's sm_90a backward at head dim 128 the
	// warp-specialized maskc_attn_bwd (hipsrc.BwdChoice.WarpSpecialized: a
	// producer warpgroup copying Q and dO by the bulk tensor copy engine
	// for two consumer warpgroups on 128 keys, and a dQ writer), which
	// bwdChoice gives kernels without a mask or with open columns: an
	// experiment for the other masks (cmd/genkernels -bwd-ws,
	// gpu/bwd_ws.sh), whose short columns ran as fast in the atomic mode
	// and slower in the deterministic one (run 40c).
	BwdWS bool
}

// canon is the normal form of l: opts.Forms's, else computed.
func (opts Options) canon(l *dsl.Lowered) *normal.Form {
	if f, ok := opts.Forms[l]; ok && f != nil {
		return f
	}
	return normal.Canon(l)
}

// Kernel is one generated attention kernel: its descriptor (the embedded
// hipsrc.KernelDesc, every per-kernel fact a launcher reads, which the
// manifest serialises) and what only the compiler needs (the sources, the
// buffers' declarations, the lowered mask and score, the sparsity plan).
type Kernel struct {
	// KernelDesc is the kernel's descriptor. Generate fills every field
	// but the output files' (ID, SourceFile, BwdSourceFile, code objects)
	// and the plan's (Flex, Pattern, Fallback); Files adds the first.
	hipsrc.KernelDesc
	// Name is the attention block's name (KernelDesc.Attention).
	Name string
	// Source is the full self-contained source: Generated between
	// hipsrc's sources (hipsrc.Assemble).
	Source string
	// BwdSource is the full source of the backward kernels: Source followed
	// by the backward's tiles for the head dim (hipsrc.BwdTileDefines) and
	// hipsrc.AttnBwd (entry points BwdEntries; the forward's
	// maskc_tile_flags serves both).
	BwdSource string
	// Generated is the per-attention part: configuration #defines, buffer
	// accessors, maskc_mask, maskc_score, the score-gradient interface
	// (MASKC_SCORE_GRAD_READS, MaskcScoreGradRead, maskc_score_grad and its
	// reads' axes and slots; see gradfunc.go), maskc_kv_range,
	// maskc_q_range, maskc_tile_full.
	Generated string
	// WarpSpecialized says that the source selects the warp-specialized
	// sm_90a forward (#define MASKC_NV_WS 1, hipsrc/attn_fwd_sm90.h) for
	// NVIDIAWGMMA, and Launch launches it (warpSpecialized gives the rule).
	WarpSpecialized bool
	// WSWalk says that the warp-specialized forward walks the mask's kv
	// intervals (a block selection, or any walked mask with
	// Options.WSWalks; #define MASKC_WS_WALK 1).
	WSWalk bool
	// FirstRowsLongest says that the forward runs the q tiles of a head
	// first to last (firstRowsLongest; #define MASKC_FIRST_ROWS_LONGEST 1).
	FirstRowsLongest bool
	// Buffers are the MaskcBuffers entries in slot order, with their
	// declarations (KernelDesc.Slots describes them for launchers).
	Buffers []BufferABI
	// GradBuffers are the entries of Buffers that the score reads
	// differentiably (float buffers whose reads maskc_score_grad reports),
	// in slot order; every other buffer's gradient is zero.
	GradBuffers []BufferABI
	// BlockM is the number of query rows per block (grid x is ceil(Sq/BlockM)).
	BlockM int
	// BlockN is the number of keys per tile of the mma.sync and MFMA
	// kernels; Launch has each platform's.
	BlockN int
	// Threads is the block size on AMD (64-wide wavefronts).
	Threads int
	// Mask and Score are the lowered mask and score compiled in: the
	// block's (check.Attention.Mask and Score: its mods, or what its
	// causal/window/alibi settings mean on Turbo's kernels), except that a
	// mask keeping every pair is dropped.
	Mask, Score *dsl.Lowered

	// sparsity is the plan maskc_kv_range and maskc_tile_full were printed
	// from; HostSparsity evaluates it.
	sparsity sparsityPlan
	// wsColumns: the mask's columns are long on average (longColumns) or
	// wide with a monotone q range (monotoneColumns), which gives it the
	// warp-specialized backward (bwdChoice).
	wsColumns bool
}

// BwdEntries are the backward kernels' entry points in BwdSource, in the
// order a backward pass launches them (hipsrc.BwdEntries: when each runs).
var BwdEntries = hipsrc.BwdEntryNames()

// Generate builds the kernel of attention block a of the checked program p.
// It reports E300-E399 diagnostics for what a generated kernel cannot do.
func Generate(p *check.Program, a *check.Attention, opts Options) (*Kernel, dsl.Diagnostics) {
	return generate(p, a, opts, true)
}

// Diagnose returns the diagnostics Generate would give for attention block
// a of p, without writing the kernel's sources (what `maskc check` and the
// language server need, at a fraction of the cost).
func Diagnose(p *check.Program, a *check.Attention, opts Options) dsl.Diagnostics {
	_, diags := generate(p, a, opts, false)
	return diags
}

// generate is Generate; without write it stops once every diagnostic is
// known, before the sources are written.
func generate(p *check.Program, a *check.Attention, opts Options, write bool) (*Kernel, dsl.Diagnostics) {
	var diags dsl.Diagnostics
	src := p.File.Source
	if opts.SourceName != "" && src != nil {
		renamed := *src
		renamed.Name = opts.SourceName
		src = &renamed
	}
	// check lowered trainer-style settings (causal, window, alibi) into
	// the mask and score they mean on Turbo's kernels, so a generated
	// fallback computes exactly what the Turbo call would.
	mask, score := kernelMask(src, a, opts), a.Score
	k := &Kernel{
		KernelDesc: hipsrc.KernelDesc{
			Attention: a.Name, Entry: hipsrc.AttentionEntry, HasMask: mask != nil, HasScore: score != nil, HasSink: a.Sink != nil,
			KVHeads: a.KVHeads, Slots: []hipsrc.BufferSlot{}, Reads: []hipsrc.ReadBound{},
		},
		Name: a.Name, Mask: mask, Score: score, BlockM: hipsrc.BlockM, BlockN: hipsrc.BlockN, Threads: hipsrc.AMD.NumThreads(),
	}
	if a.Sink != nil {
		k.Sink = a.Sink.Name
	}
	k.configure(src, a, opts, &diags)
	unsupportedSettings(src, a, &diags)

	bufs, d := BufferTable(src, mask, score)
	diags = append(diags, d...)
	k.Buffers = bufs
	if d.HasErrors() {
		// A buffer left out of the table (too many, or of a rank or dtype
		// a kernel cannot read) is refused there; writing its reads would
		// only add internal errors (issue 31: E303 then E307).
		diags.Sort()
		return nil, diags
	}
	maskFn, d := MaskFunc(src, mask, bufs)
	diags = append(diags, d...)
	scoreFn, d := ScoreFunc(src, score, bufs)
	diags = append(diags, d...)
	gradFn, d := ScoreGradFunc(src, score, bufs)
	diags = append(diags, d...)
	k.GradBuffers, k.ScoreGradReads = gradFn.Buffers, gradFn.Reads
	k.Slots = slots(bufs, gradFn.Buffers)
	if diags.HasErrors() {
		diags.Sort()
		return nil, diags
	}
	sp := planSparsity(mask, bufs, opts, &diags)
	if diags.HasErrors() {
		diags.Sort()
		return nil, diags
	}
	k.Sparsity, k.SparsityReason = sp.plan.kind, sp.plan.reason
	k.sparsity = sp.plan
	cols := columnRows(k)
	k.wsColumns = longColumns(cols) || monotoneColumns(k, cols)
	k.WarpSpecialized = warpSpecialized(k, sp.plan)
	if !k.WarpSpecialized && (opts.WSWalks || selWalk(sp.plan) || longColumns(cols) && k.HeadDim == 128) && sp.plan.kind == SparsityAnalytic && k.HasMask && wsShape(k, true) {
		k.WarpSpecialized, k.WSWalk = true, true
	}
	if k.WarpSpecialized {
		k.Launch, _ = hipsrc.Launches(k.HeadDim, true) // a head dim of hipsrc.HeadDims: no error
		c := k.Launch[hipsrc.NVIDIAWGMMA.String()]
		if k.WSWalk {
			c.SharedMemBytes += hipsrc.WSWalkBytes
		}
		// The forward reads the launcher's tensor maps (attn_fwd_sm90.h).
		c.TensorMaps = &hipsrc.TensorMapRows{Q: hipsrc.BlockM, KV: hipsrc.WSBlockN(k.HeadDim)}
		k.Launch[hipsrc.NVIDIAWGMMA.String()] = c
	}
	if sp.plan.kind == SparsityPrepass {
		k.FlagsEntry = hipsrc.TileFlagsEntry
	}
	k.FirstRowsLongest = firstRowsLongest(k)
	k.BwdLaunch, _ = hipsrc.BwdLaunches(k.HeadDim, bwdChoice(k, opts)) // configure checked the head dim
	if bwdDQOrdered(k, opts) {
		k.BwdLaunch = hipsrc.WithDQOrdered(k.BwdLaunch, k.HeadDim)
		k.BwdEntries = hipsrc.BwdEntryNamesFor(true)
	}
	reads, spans := readBounds(src, mask, score, bufs)
	if reads != nil {
		k.Reads = reads
	}
	readDiagnostics(src, p, bufs, reads, spans, &diags)
	if !write {
		return k, diags
	}
	k.MaskUsesB, k.MaskUsesH = usesVar(mask, dsl.VarB), usesVar(mask, dsl.VarH)
	k.MaskTorch, k.ScoreTorch = TorchExpr(mask), TorchExpr(score)

	var g strings.Builder
	k.writeHeader(&g, src)
	flagged := map[string]bool{} // buffers read at an index computed from buffer values
	for _, r := range reads {
		for _, ix := range r.Index {
			flagged[r.Buffer] = flagged[r.Buffer] || ix.ValueDependent
		}
	}
	for i := range bufs {
		writeReader(&g, &bufs[i], flagged[bufs[i].Name])
	}
	for _, b := range sp.segments {
		writeSegmentSearch(&g, b)
	}
	if sc := segCheckBuffers(bufs); len(sc) > 0 {
		writeSegCheck(&g, sc)
		k.SegCheckEntry = hipsrc.SegCheckEntry
	}
	g.WriteString(maskFn + "\n" + scoreFn + "\n" + gradFn.Code + "\n" + sp.code)
	generated := g.String()
	k.Generated = resolveLineResets(generated, a.Name+".generated.h")
	k.Source = resolveLineResets(hipsrc.Assemble(generated), a.Name+".cu")
	bwdTiles, err := hipsrc.BwdTileDefines(k.HeadDim, bwdChoice(k, opts)) // configure checked the head dim
	if err != nil {
		panic(err)
	}
	if bwdDQOrdered(k, opts) {
		bwdTiles += hipsrc.BwdDQOrderDefine
	}
	k.BwdSource = resolveLineResets(hipsrc.Assemble(generated, bwdTiles, hipsrc.AttnBwd), a.Name+".bwd.cu")
	return k, diags
}

// kernelMask is the mask a kernel of block a applies: a.Mask, or nil when
// it keeps every pair (e.g. q >= 0 and kv >= 0, intrange.go: the unmasked
// kernel computes the same).
func kernelMask(src *dsl.Source, a *check.Attention, opts Options) *dsl.Lowered {
	if bufs, _ := BufferTable(src, a.Mask); alwaysKept(a.Mask, bufs, opts) {
		return nil
	}
	return a.Mask
}

// Reads returns the buffer reads of block a's kernel with their bounds
// (Kernel.Reads) without generating it, for the language server; opts
// matter for their Forms.
func Reads(p *check.Program, a *check.Attention, opts Options) []hipsrc.ReadBound {
	mask := kernelMask(p.File.Source, a, opts)
	bufs, _ := BufferTable(p.File.Source, mask, a.Score)
	return ReadBounds(p.File.Source, mask, a.Score, bufs)
}

// slots describes bufs for the descriptor: grad marks the buffers the
// score reads differentiably.
func slots(bufs, grad []BufferABI) []hipsrc.BufferSlot {
	g := map[int]bool{}
	for _, b := range grad {
		g[b.Slot] = true
	}
	out := []hipsrc.BufferSlot{}
	for i := range bufs {
		s := bufs[i].Manifest()
		s.Grad = g[s.Slot]
		out = append(out, s)
	}
	return out
}

// Files returns k's descriptor as written to source (relative to the
// manifest), with the backward's source beside it (hipsrc.BwdSourceName):
// the output writer's part of it, ID, SourceFile and BwdSourceFile, filled
// in; the caller adds Flex, Pattern and Fallback.
func (k *Kernel) Files(source string) hipsrc.KernelDesc {
	d := k.KernelDesc
	d.ID, d.SourceFile, d.BwdSourceFile = strings.TrimSuffix(source, filepath.Ext(source)), source, hipsrc.BwdSourceName(source)
	return d
}

// configure resolves head dim, dtype, layout and scale.
func (k *Kernel) configure(src *dsl.Source, a *check.Attention, opts Options, diags *dsl.Diagnostics) {
	at := func(key string) dsl.Span {
		if s := a.Setting(key); s != nil {
			return s.Value.Span()
		}
		return a.Decl.Name.Sp
	}
	k.HeadDim = firstNonZero(opts.HeadDim, a.ResolvedHeadDim())
	launch, err := hipsrc.Launches(k.HeadDim, false)
	if _, bwdErr := hipsrc.BwdLaunches(k.HeadDim, hipsrc.BwdChoice{}); err == nil {
		err = bwdErr
	}
	if err != nil {
		diags.Add(src, at("head_dim"), CodeHeadDim, "a generated kernel has no configuration for head_dim %d", k.HeadDim).
			WithHint("use head_dim = %s (pad the head dimension on the Python side)", hipsrc.HeadDimList())
	}
	k.Launch = launch
	k.BwdEntries = hipsrc.BwdEntryNames()
	k.DType = firstNonEmpty(opts.DType, a.ResolvedDType())
	if k.DType != "bf16" && k.DType != "fp16" {
		diags.Add(src, at("dtype"), CodeDType, "a generated kernel has no configuration for dtype %s", k.DType).
			WithHint("use dtype = bf16 or fp16")
	}
	k.Layout = hipsrc.Layout(firstNonEmpty(opts.Layout, a.ResolvedLayout()))
	if k.Layout != hipsrc.LayoutBSHD && k.Layout != hipsrc.LayoutBHSD {
		diags.Add(src, at("layout"), CodeLayout, "a generated kernel takes bshd or bhsd tensors, not %s", k.Layout).
			WithHint("unpack thd sequences to bshd, or express the packing as a document mask over a segments buffer")
	}
	k.Scale = a.ScaleFor(k.HeadDim)
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
	// causal, window and alibi alone become the block's mask and score
	// (check lowers them); next to a mask or score mod there would be two
	// sources for one quantity (check.Attention.Conflicts).
	conflictHints := map[string]string{
		"causal": "write the causal constraint into the mask: q >= kv",
		"window": "write the window into the mask, e.g. q >= kv and q - kv <= W",
		"alibi":  "write ALiBi as a score: score + slopes[h] * (kv - q)",
	}
	for _, c := range a.Conflicts() {
		refuse(c.Key, conflictHints[c.Key])
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
	fmt.Fprintf(w, "// maskc generated part of attention %s (%s)\n", k.Name, cComment(name))
	fmt.Fprintf(w, "// block sparsity: %s: %s\n", k.Sparsity, cComment(k.SparsityReason))
	fmt.Fprintf(w, "#define MASKC_HEAD_DIM %d\n", k.HeadDim)
	if k.DType == "fp16" {
		w.WriteString("#define MASKC_DTYPE_F16 1\n")
	} else {
		w.WriteString("#define MASKC_DTYPE_BF16 1\n")
	}
	fmt.Fprintf(w, "#define MASKC_LAYOUT_%s 1\n", strings.ToUpper(string(k.Layout)))
	for _, f := range []struct {
		on   bool
		name string
	}{{k.HasMask, "MASKC_HAS_MASK"}, {k.HasScore, "MASKC_HAS_SCORE"}, {k.HasSink, "MASKC_HAS_SINK"}} {
		if f.on {
			fmt.Fprintf(w, "#define %s 1\n", f.name)
		}
	}
	fmt.Fprintf(w, "#define MASKC_SPARSITY_%s 1\n", strings.ToUpper(string(k.Sparsity)))
	if k.WarpSpecialized { // -DMASKC_NV_WS=0 still builds attn_fwd.h's forward (experiments)
		w.WriteString("#ifndef MASKC_NV_WS\n#define MASKC_NV_WS 1\n#endif\n")
	}
	if k.WSWalk {
		w.WriteString("#define MASKC_WS_WALK 1\n")
	}
	if k.WarpSpecialized {
		// FlashAttention-3's intra-warpgroup overlap (attn_fwd_sm90.h): a
		// consumer issues tile j's Q.K^T with tile j - 1's P.V and runs j's
		// mods and softmax under that P.V. On the H200 (gpu/NOTES.md run
		// 49, forward over cuDNN SDPA) full and causal attention at D = 128
		// rose from 0.80-0.86 to 0.96-0.97 at S = 8192, 0.69-0.77 to
		// 0.78-0.83 at 2048; on the H100 (run 50, over Flex) masked
		// forwards rose (causal+alibi 1.099 -> 1.360, block_causal 1.381 ->
		// 1.441, spec_decode 1.251 -> 1.391) but for a bias table read per
		// pair (1.258 -> 1.195). -DMASKC_WS_OVERLAP=0 still builds the
		// sequential step (the benchmarks' seq variant).
		w.WriteString("#ifndef MASKC_WS_OVERLAP\n#define MASKC_WS_OVERLAP 1\n#endif\n")
	}
	if k.FirstRowsLongest {
		w.WriteString("#define MASKC_FIRST_ROWS_LONGEST 1\n")
	}
	fmt.Fprintf(w, "#define MASKC_MASK_USES_B %d\n", b2i(k.MaskUsesB))
	fmt.Fprintf(w, "#define MASKC_MASK_USES_H %d\n", b2i(k.MaskUsesH))
	if k.HasScore && !lightScore(k.Score) {
		// A score calling transcendental functions (lightScore): attn_fwd.h
		// makes each logit's score before the next one's on CDNA.
		w.WriteString("#define MASKC_SCORE_HEAVY 1\n")
	}
	// The mask and score come with row and column parts (funcs.go).
	w.WriteString("#define MASKC_SPLIT_MODS 1\n\n")
}

// usesVar reports whether the lowered mod l refers to v.
func usesVar(l *dsl.Lowered, v dsl.Var) bool {
	return l != nil && exprUsesVar(l.Expr, v)
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

// bwdChoice is the backward tile k asks for (hipsrc.BwdTileOf): the
// warp-specialized kernel's for a kernel without a mask, or whose columns
// run to the last row (openColumns: causal, prefixes, and scores on them),
// or are long on average in full tiles (longColumns: windows of thousands
// of keys, block diffusion, a speculative decoder's prompt), whose kv tiles
// walk long columns; for every kernel under Options.BwdWS. Long columns
// (run 41, against the 64 x 64 tiles, atomic / deterministic through the
// dQ kernel): block diffusion 0.74 -> 0.91 / 0.73 -> 0.74, bd3lm 0.67 ->
// 0.91 / 0.67 -> 0.74, spec_decode 0.76 -> 1.02 / 0.73 -> 0.77,
// head_windows 0.92 -> 1.04 / 0.84 -> 0.81. Masks whose q range is
// monotone take it from about a thousand rows per column, and documents
// (monotoneColumns), with the ordered dQ (run 42b, atomic / deterministic,
// against the 64 x 64 tiles and the dQ kernel): sliding1024 0.93 -> 0.98 /
// 0.89 -> 0.96, dilated2048 1.05 -> 1.08 / 0.94 -> 1.04, document 0.86 ->
// 0.86 / 0.73 -> 0.83; chunks of 512, a 2-D neighbourhood and a document
// with a window of its own lost 2-5% atomic there.
// On the H100 (gpu/NOTES.md run 40c, forward + backward over Flex, the
// element loops compiled once per tile class, maskc_bwd_by_class), against
// the 64 x 64 tiles with the same loops: prefix2048 1.09 / 0.90
// (deterministic, dQ ordered, 1.00 / 0.71); causal 1.10-1.14, full
// 1.13-1.15 on this kernel. Before the loops per class prefixes lost 2-7%
// here (runs 39a-c). Short columns keep the 64 x 64 tiles: a 1024-key
// window ran 0.97 / 0.93 atomic but 0.74 / 0.78 deterministic (the dQ
// kernel in both), documents and dilated windows the same atomic (0.87,
// 1.05) and lower deterministic (0.72 / 0.76, 0.90 / 0.93).
func bwdChoice(k *Kernel, opts Options) hipsrc.BwdChoice {
	return hipsrc.BwdChoice{WarpSpecialized: !k.HasMask || openColumns(k.sparsity) || k.wsColumns || opts.BwdWS,
		PairQTiles: pairSteps(k)}
}

// pairSteps reports whether k's warp-specialized backward takes two q
// tiles a step where a platform has such a tile at its head dim
// (hipsrc.BwdChoice.PairQTiles; sm_90a at head dim 64, where the kernel
// has no one-tile step): a kernel without a score whose columns run to the
// last row or that has no mask. On the H100 (gpu/NOTES.md run 51b, head dim
// 64, forward + backward over Flex, against the 64 x 64 tiles) full ran
// 0.990 -> 1.193, causal 0.950 -> 1.057, prefix2048 0.903 -> 1.046 (the
// dense table over cuDNN: full 0.69-0.74 -> 0.75-0.89, causal 0.66-0.76
// -> 0.69-0.85); the other kernels that bwdChoice sends to the
// warp-specialized kernel lost there: documents 0.994 -> 0.831, dilated
// windows 1.074 -> 1.029, and scores at their register limit (causal +
// soft-cap 1.045 -> 0.967, causal + ALiBi 0.907 -> 0.877).
func pairSteps(k *Kernel) bool {
	return !k.HasScore && (!k.HasMask || openColumns(k.sparsity))
}

// bwdDQOrdered reports whether k's deterministic backward adds dQ in a
// fixed order in maskc_attn_bwd_ordered (hipsrc.BwdDQOrderDefine) rather
// than in maskc_attn_bwd_dq, which computes S and dP again per q tile, at a
// head dim some platform orders dQ at (hipsrc.BwdDQOrdersAt):
//   - every kernel on the warp-specialized backward without a mask, with
//     open columns or with a monotone q range (qRangeMonotone, each kv
//     tile's envelope its own range), whose dQ writer takes the turns and waits
//     for each reduction to complete, the consumers waiting only until it
//     has read their staging buffer. On the H100 (gpu/NOTES.md run 39a,
//     deterministic fwd+bwd over Flex, against the dQ kernel) full ran
//     1.136 / 0.858, causal 0.969 / 0.798, causal+softcap 0.944 / 0.670,
//     prefix2048 0.820 / 0.656 and causal+alibi 0.848 / 0.722: 0.95-0.99 of
//     the atomic mode (run 40c, prefix2048 on this kernel against the 64 x
//     64 tiles' dQ kernel: 0.996 / 0.716); at head dim 64 on two-tile steps
//     (pairSteps; run 51c, against the dQ kernel) full 1.128 / 1.005,
//     causal 1.005 / 0.871, prefix2048 0.952 / 0.850, 0.91-0.96 of the
//     atomic mode;
//   - on the 64 x 64 tiles, a mask whose every term starts its column on a
//     diagonal (diagonalColumns) with a score that calls transcendental
//     functions (not lightScore), whose second evaluation costs the dQ
//     kernel most: there each kv tile's warps wait for their turns
//     themselves (run 32d: causal+softcap 0.784 against 0.664, but causal
//     0.789 / 0.821, sliding1024 0.763 / 0.777);
//   - under Options.BwdDQOrder, every diagonal mask and every kernel on the
//     warp-specialized backward. Where the q range is not monotone each
//     program reduces the ranges of every kv tile of its head into its
//     envelope, with segment searches most of a short column's time: that,
//     not a queue, is why documents lost there before run 42 (0.428 /
//     0.683 on the warp-specialized kernel, run 39a; 0.514 / 0.711, run 32d;
//     0.83 / 0.73 with their own range as envelope, run 42b).
func bwdDQOrdered(k *Kernel, opts Options) bool {
	if !hipsrc.BwdDQOrdersAt(k.HeadDim) {
		return false
	}
	heavy := k.HasScore && !lightScore(k.Score)
	diagonal := k.HasMask && diagonalColumns(k.sparsity)
	tile, err := hipsrc.NVIDIAWGMMA.BwdTileOf(k.HeadDim, bwdChoice(k, opts))
	ws := err == nil && tile.Producer
	open := !k.HasMask || openColumns(k.sparsity)
	monotone := k.HasMask && qRangeMonotone(k.sparsity)
	return (heavy && diagonal) || (ws && (open || monotone)) || (opts.BwdDQOrder && (diagonal || ws))
}

// openColumns reports whether every term of an analytic plan keeps a key's
// column from its first row to the last query row: no bound above on q,
// no segments, nothing left to the element (loose conditions, data
// relations, remainders, block selections), so that every kv tile walks a
// long column that holds no empty tile (causal, a prefix, their union).
func openColumns(p sparsityPlan) bool {
	if p.kind != SparsityAnalytic || len(p.disjuncts) == 0 {
		return false
	}
	for _, d := range p.disjuncts {
		if len(d.q.segs) > 0 || len(d.q.loose) > 0 || len(d.q.dataRel) > 0 || len(d.periods) > 0 || d.q.sel != nil {
			return false
		}
		for _, s := range d.q.innerSteps {
			if s.upper {
				return false
			}
		}
	}
	return true
}

// diagonalColumns reports whether every term of an analytic plan bounds q
// from below by a side that grows with kv (q >= kv + c, q >= 2 * kv, ...),
// so that each kv tile's column starts later the later the tile.
func diagonalColumns(p sparsityPlan) bool {
	if p.kind != SparsityAnalytic || len(p.disjuncts) == 0 {
		return false
	}
	for _, d := range p.disjuncts {
		grows := false
		for _, s := range d.q.innerSteps {
			if m, ok := p.form.Monotone(s.side.Num, dsl.VarKV); ok && m > 0 && !s.upper {
				grows = true
			}
		}
		if !grows {
			return false
		}
	}
	return true
}

// warpSpecialized is the rule that gives a kernel the warp-specialized
// sm_90a forward: where the H200 measured it ahead of attn_fwd.h's kernel
// (docs/kernel-decisions.md, run 17: full, causal, sliding, prefix and document masks,
// 1.10-1.25x), that is kernels with no score modification or a light one
// (lightScore) whose key tiles are either all full (no mask) or mostly
// provably full (analytic sparsity, every disjunct with a closed-form
// full-tile test), so that the per-element mask stays off most tiles; of
// the analytic masks, only those whose full-tile tests are linear bounds.
// Elsewhere it measured behind: opaque terms (dilated2048, 0.79x),
// pre-pass flags (neighbourhood_2d, 0.79x), heavy scores (t5_bias, 0.69x;
// softcap 0.95x against 1.08x, run 21x), segment equalities (document_sliding
// 0.675x against attn_fwd.h's 0.848x, run 18; 0.771x against 0.882x and
// document 0.840x against 0.870x with each row's interval tested instead of
// the mask, MASKC_WS_ROW_BITS, run 21x, since removed: their rows are a few
// tiles each) and, since it visits the hull of a row's kv range rather than the union of its
// intervals (hullExact), terms whose union is not one interval
// (sliding_global_prefix, 0.225x against 1.05x): run 18.
// Bounds through buffer values free of q and kv (a prefix per batch, `kv <
// plen[b]`; Transfusion's spans, `kv < offset[b, m] + length[b, m]`) take it
// too: on the H100 (gpu/NOTES.md run 43a) prefix_lm_per_batch's forward ran
// 1.239x of Flex against 1.058x on attn_fwd.h and Transfusion's 0.946x
// against 0.728x.
// At head dim 256 (64-key tiles, 192 KiB of shared memory) it measured
// 0.79-0.93 of cuDNN SDPA on full and causal attention against attn_fwd.h's
// 0.56-0.65 (gpu/NOTES.md run 33f); the same masks take it there.
func warpSpecialized(k *Kernel, p sparsityPlan) bool {
	if !wsShape(k, false) {
		return false
	}
	switch p.kind {
	case SparsityNone:
		return !k.HasMask
	case SparsityAnalytic:
		// Only the full-tile tests of the measured masks: linear bounds
		// (causal, sliding, prefix), buffer values among their terms.
		for _, d := range p.disjuncts {
			if d.full == nil {
				return false
			}
			for _, f := range d.full {
				if f.seg != nil || f.atom != nil || readsDiv(p.form, f.bound.Dir) {
					return false // a segment equality, an opaque condition, or a bound through floor quotients (block relations)
				}
			}
		}
		return len(p.disjuncts) > 0 && hullExact(p)
	}
	return false
}

// wsShape reports whether the warp-specialized forward takes k's head dim
// (64 or 128, and 256 but where it walks a mask's intervals: walk, whose
// interval lists would come on top of head dim 256's 192 KiB and which has
// not been timed there) and score (none, or a light one).
func wsShape(k *Kernel, walk bool) bool {
	return (!k.HasScore || lightScore(k.Score)) && (k.HeadDim == 64 || k.HeadDim == 128 || k.HeadDim == 256 && !walk)
}

// lightScore reports whether a score mod is arithmetic on the logit,
// indices and buffer values only (no call of a built-in marked Heavy, the
// transcendental functions: a multi-instruction sequence per logit on the
// H200, too heavy for the warp-specialized forward): ALiBi
// (1.160x and 1.183x of Flex in two calls against 1.017-1.029x on
// attn_fwd.h) and a relative-position bias read from a buffer (1.275x and
// 1.256x against 1.137-1.147x) measured faster on the
// warp-specialized forward, softcap's tanh (0.949x against 1.083x) and
// T5's log buckets slower (docs/kernel-decisions.md, runs 17 and 21x).
func lightScore(l *dsl.Lowered) bool {
	if l == nil || l.Expr == nil {
		return false
	}
	light := true
	dsl.Inspect(l.Expr, func(e dsl.Expr) bool {
		if c, ok := e.(*dsl.CallExpr); ok {
			if id, ok := c.Fun.(*dsl.Ident); ok && dsl.Builtins[id.Name] != nil && dsl.Builtins[id.Name].Heavy {
				light = false
			}
		}
		return light
	})
	return light
}

// hullExact reports whether every row's kv set is the hull of its terms'
// kv ranges, which is what the warp-specialized forward walks: one term, or
// terms whose union is their hull (unionIsHull: causal or a prefix, `kv <= q
// or kv < P`, Transfusion's causal rows widened to each span's end).
func hullExact(p sparsityPlan) bool {
	return len(p.disjuncts) == 1 || unionIsHull(p, dsl.VarKV)
}
