package classify

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/maskc/maskc/dsl"
)

// PlanVersion is the version of the plan.json schema this package writes
// (documented in PLAN.md). Version 2: a block's "kernel" (maskc compile)
// names its descriptor in manifest.json instead of restating it.
const PlanVersion = 2

// Plan is the compile plan of a file: one Decision per attention block, in
// declaration order. It is what `maskc compile` writes as plan.json and what
// a trainer reads to call Turbo or a generated kernel per layer.
type Plan struct {
	// Version is PlanVersion.
	Version int `json:"version"`
	// Target is the name of the target profile the plan was made for.
	Target string `json:"target"`
	// Attentions are the decisions, one per attention block.
	Attentions []*Decision `json:"attentions"`
	// Forms are the normal forms Classify computed, by lowered mask, for
	// the code generator to carry on with (codegen.Options.Forms) instead
	// of computing them again. Read only.
	Forms map[*dsl.Lowered]*Form `json:"-"`
}

// Decision is what one attention block became.
type Decision struct {
	// Name is the attention block's name.
	Name string `json:"name"`
	// Pattern is the contract pattern name ("causal", ...) or "generated".
	Pattern string `json:"pattern"`
	// Entry is the Turbo entry point, e.g. "flash_attn_func", or
	// "maskc_generated" for a generated kernel.
	Entry string `json:"entry"`
	// Kwargs are the keyword arguments by Turbo's own names. Values naming
	// a buffer are the buffer's name (a string).
	Kwargs map[string]any `json:"kwargs"`
	// Preconditions must hold at run time for Entry to be exact, e.g.
	// "sq == skv"; never nil.
	Preconditions []string `json:"preconditions"`
	// Fallback is "generated" when Preconditions is not empty: the kernel to
	// run when a precondition fails.
	Fallback string `json:"fallback,omitempty"`
	// Score is the score pattern: "none", "alibi", "softcap", "scale" or
	// "generated".
	Score string `json:"score,omitempty"`
	// Segments names the `segments` buffer the cu_seqlens derive from, for
	// the document patterns.
	Segments string `json:"segments,omitempty"`
	// Reason says why, in one sentence a user can act on.
	Reason string `json:"reason"`
	// Canonical is the canonical form of the mask, printed.
	Canonical string `json:"canonical,omitempty"`
	// Form is the canonical form itself, for the code generator (tile
	// ranges, block sparsity); not serialised. Blocks with the same lowered
	// mask share one Form: treat it as read-only.
	Form *Form `json:"-"`
	// ScoreShape is what the score mod was recognised as; not serialised.
	ScoreShape ScoreShape `json:"-"`
}

// JSON returns the plan as indented JSON with a final newline, the content
// of plan.json.
func (p *Plan) JSON() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep `q - kv >= 0` readable
	enc.SetIndent("", "  ")
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Explain renders the plan for humans, as `maskc classify` prints it: per
// attention block what it became and why.
func (p *Plan) Explain() string {
	var b strings.Builder
	fmt.Fprintf(&b, "target %s\n", p.Target)
	for _, d := range p.Attentions {
		fmt.Fprintf(&b, "\nattention %s: %s", d.Name, d.Pattern)
		if d.Score != "" && d.Score != ScoreNone {
			fmt.Fprintf(&b, " + %s score", d.Score)
		}
		b.WriteByte('\n')
		fmt.Fprintf(&b, "  call:      %s\n", d.Call())
		if len(d.Preconditions) > 0 {
			fmt.Fprintf(&b, "  requires:  %s (else %s)\n", strings.Join(d.Preconditions, ", "), d.Fallback)
		}
		if d.Segments != "" {
			fmt.Fprintf(&b, "  cu_seqlens: from the boundaries of segments buffer %s, per batch\n", d.Segments)
		}
		if d.Canonical != "" {
			fmt.Fprintf(&b, "  mask:      %s\n", d.Canonical)
		}
		fmt.Fprintf(&b, "  why:       %s\n", d.Reason)
	}
	return b.String()
}

// Call prints the decision's entry and keyword arguments as a Python call,
// the arguments sorted by name, e.g.
// `flash_attn_func(causal=True, window_size=(1023, 0))`; a generated block
// prints as `maskc_generated(kernel=maskc_NAME, ...)`.
func (d *Decision) Call() string {
	keys := make([]string, 0, len(d.Kwargs))
	for k := range d.Kwargs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + pyValue(d.Kwargs[k])
	}
	return d.Entry + "(" + strings.Join(parts, ", ") + ")"
}

// pyValue prints a keyword argument's value as Python source: True/False,
// a tuple for an int pair, a list of buffer names, a buffer name as is.
func pyValue(v any) string {
	switch x := v.(type) {
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return x
	case []int64:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = fmt.Sprint(e)
		}
		return "(" + strings.Join(parts, ", ") + ")"
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	case float64:
		return fmt.Sprintf("%g", x)
	}
	return fmt.Sprint(v)
}
