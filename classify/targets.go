package classify

import (
	"fmt"
	"sort"
	"strings"
)

// The Turbo entry points a plan can name (Primus-Turbo's own names), and the
// pseudo-entry of a maskc generated kernel.
const (
	EntryDense      = "flash_attn_func"
	EntryVarlen     = "flash_attn_varlen_func"
	EntryFP8        = "flash_attn_fp8_func"
	EntryUSP        = "flash_attn_usp_func"
	EntryVarlenUSP  = "flash_attn_varlen_usp_func"
	EntryFP8USP     = "flash_attn_fp8_usp_func"
	EntryFlex       = "flex_attention"
	EntryFlexVarlen = "flex_attention_varlen"
	EntryGenerated  = "maskc_generated"
)

// The mask patterns of turbo-contract.md, and "generated" for a mask with
// no Turbo kernel.
const (
	PatternFull      = "full"
	PatternCausal    = "causal"
	PatternSWCausal  = "sliding_window_causal"
	PatternSW        = "sliding_window"
	PatternDoc       = "document"
	PatternDocCausal = "document_causal"
	PatternDocWindow = "document_windowed"
	PatternGenerated = "generated"
)

// The score patterns: no score mod (or the identity), ALiBi, tanh softcap,
// a constant rescale folded into softmax_scale, and any other score mod.
const (
	ScoreNone         = "none"
	ScoreAlibi        = "alibi"
	ScoreSoftcap      = "softcap"
	ScoreScale        = "scale"
	ScoreGeneratedMod = "generated"
)

// Profile is a named, versioned description of what one Primus-Turbo build
// can run: which entry points exist and which keyword arguments they accept.
// The classifier never assumes a capability a profile does not list.
type Profile struct {
	// Name selects the profile (`--target NAME`), e.g. "turbo-2026.10".
	Name string
	// Description says which build the profile describes.
	Description string
	// Entries are the entry points the build has.
	Entries []string
	// SinkEntries are the entries that accept `sink`.
	SinkEntries []string
	// Deterministic is true when the entries take `deterministic`.
	Deterministic bool
	// Softcap is true when the dense and varlen entries take `softcap`.
	Softcap bool
	// RightWindow is true when `window_size` takes a right bound > 0
	// (bidirectional bands); false means only `(left, 0)` and `(-1, -1)`.
	RightWindow bool
	// Alibi is true when the entries take `alibi_slopes`.
	Alibi bool
	// FP8 is true when the fp8 entry exists and is usable.
	FP8 bool
}

// Has reports whether the build has entry.
func (p *Profile) Has(entry string) bool { return contains(p.Entries, entry) }

// AcceptsSink reports whether entry takes a `sink` argument on this build.
func (p *Profile) AcceptsSink(entry string) bool { return contains(p.SinkEntries, entry) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// DefaultTarget is the profile of the current Primus-Turbo build (autumn
// 2026 snapshot): sink on the dense and varlen entries, deterministic,
// bidirectional windows, ALiBi and fp8; no softcap.
var DefaultTarget = &Profile{
	Name:        "turbo-2026.10",
	Description: "Primus-Turbo autumn 2026: dense, varlen, fp8, usp and flex entries; sink on dense/varlen/flex; no softcap",
	Entries: []string{EntryDense, EntryVarlen, EntryFP8, EntryUSP, EntryVarlenUSP, EntryFP8USP,
		EntryFlex, EntryFlexVarlen},
	SinkEntries:   []string{EntryDense, EntryVarlen, EntryFlex, EntryFlexVarlen},
	Deterministic: true,
	RightWindow:   true,
	Alibi:         true,
	FP8:           true,
}

var profiles = []*Profile{
	DefaultTarget,
	{
		Name:        "turbo-2026.10-softcap",
		Description: "hypothetical turbo-2026.10 build whose dense and varlen kernels take softcap",
		Entries: []string{EntryDense, EntryVarlen, EntryFP8, EntryUSP, EntryVarlenUSP, EntryFP8USP,
			EntryFlex, EntryFlexVarlen},
		SinkEntries:   []string{EntryDense, EntryVarlen, EntryFlex, EntryFlexVarlen},
		Deterministic: true,
		Softcap:       true,
		RightWindow:   true,
		Alibi:         true,
		FP8:           true,
	},
	{
		Name:        "turbo-2025.q4",
		Description: "Primus-Turbo late 2025: dense, varlen and fp8 entries; sink only on the dense entry; no deterministic, no right window bound, no flex entries",
		Entries:     []string{EntryDense, EntryVarlen, EntryFP8},
		SinkEntries: []string{EntryDense},
		Alibi:       true,
		FP8:         true,
	},
}

// Targets lists every known profile, sorted by name.
func Targets() []*Profile {
	out := append([]*Profile(nil), profiles...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Target returns the profile named name; the empty name is DefaultTarget.
func Target(name string) (*Profile, error) {
	if name == "" {
		return DefaultTarget, nil
	}
	var names []string
	for _, p := range profiles {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return nil, fmt.Errorf("unknown target %q (known: %s)", name, strings.Join(names, ", "))
}
