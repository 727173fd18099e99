package hipsrc

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/maskc/maskc/buftype"
)

// ManifestFile is the manifest's file name in an output directory.
const ManifestFile = "manifest.json"

// ManifestVersion is the version of manifest.json's schema. It is its own
// number, apart from ABIVersion (the kernel ABI, compiled into every source
// as MASKC_ABI_VERSION), which the manifest states as abi.version: the
// schema may change while the kernels stay byte for byte the same.
// Version 5 made a kernel entry the one descriptor of its kernel
// (KernelDesc) and plan.json name it instead of restating it; versions 1
// to 4 were ABIVersion's. Version 6 gave maskc_attn_bwd and
// maskc_attn_bwd_dq their own block size and shared memory
// (BwdLaunchConfig.MainThreads, DQSharedMemBytes); version 7 says where
// deterministic mode runs maskc_attn_bwd_ordered (DQOrdered).
const ManifestVersion = 7

// Manifest is manifest.json: the kernel ABI and every kernel written beside
// it, enough for a launcher that has only this file and the sources or code
// objects. MANIFEST.md documents the schema.
type Manifest struct {
	// Version is ManifestVersion.
	Version int `json:"version"`
	// ABI is the kernel ABI all kernels share.
	ABI ABIDesc `json:"abi"`
	// Kernels are the kernels in input order.
	Kernels []KernelDesc `json:"kernels"`
	// Skipped are the attention blocks that could not be generated.
	Skipped []Skipped `json:"skipped"`
}

// KernelDesc is the one descriptor of a generated kernel: every per-kernel
// fact a launcher, a plan or a tool reads. codegen fills it (codegen.Kernel
// embeds it), the output writer adds the file names, manifest.json's
// kernels[] is its serialisation, plan.json names it (ID), the Go runtime
// launches from it (runtime.AttentionSpec.Kernel) and the Python package
// reads it (maskc.abi.KernelSpec: every key, under its JSON name). A new
// per-kernel fact is a field here, filled in codegen, documented in
// MANIFEST.md; its readers need no other edit to see it.
type KernelDesc struct {
	// ID identifies the kernel in the manifest (JSON "name", what plan.json
	// refers to): its source's file name without extension. The output
	// writer sets it (Kernel.Files).
	ID string `json:"name"`
	// SourceFile is the kernel's source file, relative to the manifest
	// (JSON "source"); the output writer sets it.
	SourceFile string `json:"source"`
	// CodeObjects are prebuilt code objects by architecture (e.g.
	// "gfx90a"), relative to the manifest.
	CodeObjects map[string]string `json:"code_objects,omitempty"`
	// Flex is the .flex file the attention block is declared in.
	Flex string `json:"flex"`
	// Attention is the attention block's name.
	Attention string `json:"attention"`
	// Pattern and Fallback are the block's plan: "generated", or the Turbo
	// pattern with "generated" as the fallback when a precondition fails.
	Pattern  string `json:"pattern"`
	Fallback string `json:"fallback,omitempty"`
	// Entry is AttentionEntry; FlagsEntry is TileFlagsEntry for prepass
	// kernels, else empty.
	Entry      string `json:"entry"`
	FlagsEntry string `json:"flags_entry,omitempty"`
	// SegCheckEntry is SegCheckEntry for kernels with integer segments
	// buffers, else empty: launched first, before every forward and
	// backward.
	SegCheckEntry string `json:"seg_check_entry,omitempty"`
	// HeadDim is D: one of HeadDims (64, 128 or 256).
	HeadDim int `json:"head_dim"`
	// DType is the element type of Q, K, V and O: "bf16" or "fp16".
	DType string `json:"dtype"`
	// Layout is "bshd" or "bhsd": the order of Q, K, V and O's dimensions
	// (strides are passed in MaskcShape).
	Layout Layout `json:"layout"`
	// Scale is the softmax scale to pass in MaskcShape.scale.
	Scale float64 `json:"scale"`
	// KVHeads is the block's kv_heads setting (0: as many as query heads).
	KVHeads int `json:"kv_heads"`
	// Sparsity is how the kernel skips tiles.
	Sparsity Sparsity `json:"sparsity"`
	// SparsityReason says why, for people.
	SparsityReason string `json:"sparsity_reason"`
	// HasMask, HasScore and HasSink say what the kernel applies.
	HasMask  bool `json:"has_mask"`
	HasScore bool `json:"has_score"`
	HasSink  bool `json:"has_sink"`
	// Sink is the .flex name of the sink buffer (f32[H], passed in
	// MaskcShape.sink), empty when none.
	Sink string `json:"sink,omitempty"`
	// MaskUsesB and MaskUsesH decide the tile-flag layout (TileFlags).
	MaskUsesB bool `json:"mask_uses_b"`
	MaskUsesH bool `json:"mask_uses_h"`
	// Slots are the MaskcBuffers slots in order (JSON "buffers").
	Slots []BufferSlot `json:"buffers"`
	// ScoreGradReads is MASKC_SCORE_GRAD_READS, the number of buffer reads
	// maskc_score_grad reports.
	ScoreGradReads int `json:"score_grad_reads"`
	// BwdSourceFile is the backward kernels' source file (AttnBwd after
	// the forward; JSON "bwd_source"), empty where none was written;
	// BwdEntries are their entry points in launch order (BwdEntries's
	// names).
	BwdSourceFile string   `json:"bwd_source,omitempty"`
	BwdEntries    []string `json:"bwd_entries,omitempty"`
	// BwdCodeObjects are prebuilt code objects of BwdSourceFile by
	// architecture, relative to the manifest.
	BwdCodeObjects map[string]string `json:"bwd_code_objects,omitempty"`
	// BwdLaunch is the backward's tiles, block size and dynamic shared
	// memory per platform name, for the kernel's head dim.
	BwdLaunch map[string]BwdLaunchConfig `json:"bwd_launch,omitempty"`
	// Launch is the block size, key tile and dynamic shared memory of
	// maskc_attn_fwd per platform name ("nvidia", "amd", "nvidia-sm90a").
	Launch map[string]LaunchConfig `json:"launch"`
	// MaskTorch and ScoreTorch are the mask and score as PyTorch
	// expressions over tensors b, h, q_idx, kv_idx (and score), for
	// references; empty when absent.
	MaskTorch  string `json:"mask_torch"`
	ScoreTorch string `json:"score_torch"`
	// Reads are the kernel's buffer reads with each index's range as a
	// function of the call's sizes (bounds.go): a launcher refuses a call
	// whose reads fall outside the buffers' extents (CheckRead) before it
	// launches anything.
	Reads []ReadBound `json:"reads"`
}

// Kernel returns the descriptor of the kernel called id (KernelDesc.ID),
// or nil.
func (m *Manifest) Kernel(id string) *KernelDesc {
	for i := range m.Kernels {
		if m.Kernels[i].ID == id {
			return &m.Kernels[i]
		}
	}
	return nil
}

// BwdLaunchConfig is how the backward kernels are launched on one platform
// (Entry gives each kernel's block and shared memory).
type BwdLaunchConfig struct {
	// BlockM and BlockN are MASKC_BWD_BLOCK_M and MASKC_BWD_BLOCK_N.
	BlockM int `json:"block_m"`
	BlockN int `json:"block_n"`
	// Threads is MASKC_BWD_THREADS, the block size of every backward
	// kernel but maskc_attn_bwd; MainThreads is MASKC_BWD_MAIN_THREADS,
	// maskc_attn_bwd's.
	Threads     int `json:"threads"`
	MainThreads int `json:"main_threads"`
	// SharedMemBytes is MASKC_BWD_SMEM_BYTES, maskc_attn_bwd's dynamic
	// shared memory; DQSharedMemBytes is MASKC_BWD_DQ_SMEM_BYTES,
	// maskc_attn_bwd_dq's.
	SharedMemBytes   int `json:"shared_mem_bytes"`
	DQSharedMemBytes int `json:"dq_shared_mem_bytes"`
	// DQOrdered says that in deterministic mode maskc_attn_bwd_ordered,
	// in place of maskc_attn_bwd, adds dQ into dq_acc in a fixed order
	// (MaskcBwdShape.dq_sem set, then maskc_attn_bwd_dq_convert) instead
	// of maskc_attn_bwd_dq computing it (BwdDQOrders; the source has
	// BwdDQOrderDefine).
	DQOrdered bool `json:"dq_ordered"`
	// TensorMaps says that maskc_attn_bwd (and maskc_attn_bwd_ordered)
	// reads the launcher's tensor maps of Q, dO, K and V (the entry's
	// MaskcTensorMaps, encoded as the abi's tensor_maps says; the
	// warp-specialized backward, BwdTile.Producer) and gives their boxes'
	// rows (dO's are Q's); nil (absent), the launcher passes them zero.
	TensorMaps *TensorMapRows `json:"tensor_maps,omitempty"`
}

// DQByMain reports whether a backward under c in the given mode adds dQ
// into dq_acc in maskc_attn_bwd (atomic mode, or deterministic mode where
// DQOrdered): its launches are then the entries whose When is "atomic",
// else those whose When is "deterministic" (BwdEntries).
func (c BwdLaunchConfig) DQByMain(deterministic bool) bool { return !deterministic || c.DQOrdered }

// Ordered reports whether a backward under c in the given mode runs
// BwdMainOrderedEntry in place of BwdMainEntry (deterministic mode where
// DQOrdered): the entries whose When is "ordered", else "unordered".
func (c BwdLaunchConfig) Ordered(deterministic bool) bool { return deterministic && c.DQOrdered }

// Entry returns the block size and the dynamic shared memory of the
// backward entry point called name under c (0 bytes for an entry that
// takes none).
func (c BwdLaunchConfig) Entry(name string) (threads, sharedMemBytes int) {
	switch name {
	case BwdMainEntry, BwdMainOrderedEntry:
		return c.MainThreads, c.SharedMemBytes
	case BwdDQEntry:
		return c.Threads, c.DQSharedMemBytes
	}
	return c.Threads, 0
}

// WithDQOrdered returns m (BwdLaunches's) with DQOrdered set on every
// platform whose backward orders dQ at the head dim (BwdDQOrders).
func WithDQOrdered(m map[string]BwdLaunchConfig, headDim int) map[string]BwdLaunchConfig {
	for _, p := range Platforms {
		if c, ok := m[p.String()]; ok && p.BwdDQOrders(headDim) {
			c.DQOrdered = true
			m[p.String()] = c
		}
	}
	return m
}

// BwdLaunchOn returns the backward's launch configuration on p at a head
// dim (c: BwdTileOf's).
func BwdLaunchOn(p Platform, headDim int, c BwdChoice) (BwdLaunchConfig, error) {
	t, err := p.BwdTileOf(headDim, c)
	if err != nil {
		return BwdLaunchConfig{}, err
	}
	return t.launchOn(p, headDim), nil
}

// launchOn is t's launch configuration on p at a head dim.
func (t BwdTile) launchOn(p Platform, headDim int) BwdLaunchConfig {
	groups := t.Groups
	if t.Producer {
		groups++
	}
	c := BwdLaunchConfig{BlockM: t.BlockM, BlockN: t.BlockN, Threads: p.BwdThreads(), MainThreads: groups * p.BwdThreads(),
		SharedMemBytes: t.SharedMemBytes(headDim), DQSharedMemBytes: t.DQSharedMemBytes(headDim)}
	if t.Producer { // the launcher's maps: a step's Q and dO rows, the kv tile's keys
		c.TensorMaps = &TensorMapRows{Q: t.StepRows(), KV: t.BlockN}
	}
	return c
}

// BwdLaunches returns the backward's launch configuration of every
// platform for a head dim (c: BwdTileOf's).
func BwdLaunches(headDim int, c BwdChoice) (map[string]BwdLaunchConfig, error) {
	m := map[string]BwdLaunchConfig{}
	for _, p := range Platforms {
		t, err := p.BwdTileOf(headDim, c)
		if err != nil {
			return nil, err
		}
		m[p.String()] = t.launchOn(p, headDim)
	}
	return m, nil
}

// BwdSourceName is the backward source's file name beside the forward's
// source file (NAME.cu gives NAME.bwd.cu).
func BwdSourceName(source string) string {
	return strings.TrimSuffix(source, filepath.Ext(source)) + ".bwd" + filepath.Ext(source)
}

// BufferSlot is one MaskcBuffers entry.
type BufferSlot struct {
	// Name is the buffer's name in the .flex file.
	Name string `json:"name"`
	// Slot is the index into MaskcBuffers.ptr and .dim.
	Slot int `json:"slot"`
	// DType is the element type as declared: i32, i64, f16, bf16, f32,
	// f64 or bool (one byte).
	DType string `json:"dtype"`
	// ElemBytes is the size of one element.
	ElemBytes int `json:"elem_bytes"`
	// Dims are the declared extents as .flex expressions over the sizes B,
	// H, HKV, Q and KV (Python syntax and semantics, e.g. "KV", "H", "Q //
	// 64 + 1"); the launcher passes their values in MaskcBuffers.dim[Slot]
	// (1 for a missing second extent).
	Dims []string `json:"dims"`
	// Segments reports the `segments` property: non-decreasing values,
	// which the kernel searches.
	Segments bool `json:"segments"`
	// Grad says that the score reads the buffer differentiably: its
	// gradient comes from maskc_score_grad's reads; every other buffer's
	// gradient is zero.
	Grad bool `json:"grad"`
}

// BufferElemBytes returns the size of one element of a buffer dtype, 0 if
// unknown.
func BufferElemBytes(dtype string) int {
	if d := buftype.Lookup(dtype); d != nil {
		return d.Size
	}
	return 0
}

// LaunchConfig is how maskc_attn_fwd is launched on one platform.
type LaunchConfig struct {
	// BlockN is the number of keys per tile (MASKC_BLOCK_N) on the platform.
	BlockN int `json:"block_n"`
	// Threads is the block size.
	Threads int `json:"threads"`
	// SharedMemBytes is the dynamic shared memory per block.
	SharedMemBytes int `json:"shared_mem_bytes"`
	// TensorMaps says that the forward reads the launcher's tensor maps
	// (the entry's MaskcTensorMaps, encoded as the abi's tensor_maps says;
	// the warp-specialized forward) and gives their
	// boxes' rows; nil (absent), the launcher passes them zero.
	TensorMaps *TensorMapRows `json:"tensor_maps,omitempty"`
}

// TensorMapRows are the rows of the boxes of a launch's tensor maps: Q's
// (the forward's block_m, BlockM; the backward's step, BwdTile.StepRows,
// dO's too) and K's and V's (the key tile of the kernel that reads them,
// which need not be the launch's block_n: the warp-specialized forward's
// is WSBlockN).
type TensorMapRows struct {
	Q  int `json:"q_rows"`
	KV int `json:"kv_rows"`
}

// Launches returns the launch configuration of every platform for a head
// dim; ws says that the kernel's source selects the warp-specialized
// forward (#define MASKC_NV_WS 1), which NVIDIAWGMMA then launches with
// WSThreads threads (the pre-pass too) and WSSharedMemBytes.
func Launches(headDim int, ws bool) (map[string]LaunchConfig, error) {
	m := map[string]LaunchConfig{}
	for _, p := range Platforms {
		smem, err := SharedMemBytes(p, headDim)
		if err != nil {
			return nil, err
		}
		c := LaunchConfig{BlockN: p.BlockN(), Threads: p.NumThreadsAt(headDim), SharedMemBytes: smem}
		if ws && p == NVIDIAWGMMA {
			c.Threads, c.SharedMemBytes = WSThreads, WSSharedMemBytes(headDim)
		}
		m[p.String()] = c
	}
	return m, nil
}

// Skipped is an attention block that could not be generated.
type Skipped struct {
	// Flex is the .flex file.
	Flex string `json:"flex"`
	// Attention is the block's name.
	Attention string `json:"attention"`
	// Diagnostics are the rendered errors.
	Diagnostics string `json:"diagnostics"`
}

// NewManifest returns an empty manifest of the current version.
func NewManifest() *Manifest {
	return &Manifest{Version: ManifestVersion, ABI: Describe(), Kernels: []KernelDesc{}, Skipped: []Skipped{}}
}

// Marshal returns the manifest as indented JSON with a final newline
// (HTML escaping off, so that torch expressions stay readable).
func (m *Manifest) Marshal() ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// ReadManifest reads DIR/manifest.json and checks its version before
// anything else of it: an older manifest is refused, never misread.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var v struct {
		Version int `json:"version"`
		ABI     struct {
			Version int `json:"version"`
		} `json:"abi"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if v.Version != ManifestVersion {
		return nil, fmt.Errorf("%s: manifest version %d, this maskc reads %d (rewrite it with this maskc: maskc compile or genkernels)", path, v.Version, ManifestVersion)
	}
	if v.ABI.Version != ABIVersion {
		return nil, fmt.Errorf("%s: kernel ABI %d, this maskc fills ABI %d (rewrite it with this maskc: maskc compile or genkernels)", path, v.ABI.Version, ABIVersion)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}
