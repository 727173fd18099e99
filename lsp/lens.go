package lsp

import (
	"context"
	"fmt"
	"strings"

	"go.lsp.dev/protocol"

	"github.com/maskc/maskc/classify"
	"github.com/maskc/maskc/dsl"
)

// codeLens answers textDocument/codeLens: one lens per classified
// attention block, on its first line, whose title is the exact Turbo call
// the block becomes (`flash_attn_func(causal=True, window_size=(1023, 0))`)
// or `generated` and why; these carry no command: they are labels. With
// pictures on, a second lens runs drawCommand for the block.
func (s *server) codeLens(_ context.Context, p *protocol.CodeLensParams) ([]protocol.CodeLens, error) {
	a, err := s.analysisOf(p.TextDocument.URI)
	if err != nil {
		return nil, err
	}
	out := []protocol.CodeLens{}
	for _, d := range a.file.Decls {
		at, ok := d.(*dsl.AttentionDecl)
		if !ok || at.Name == nil {
			continue
		}
		dec := a.decisions[at]
		if dec == nil {
			continue
		}
		out = append(out, protocol.CodeLens{
			Range:   a.lines.rangeOf(at.Name.Sp),
			Command: &protocol.Command{Title: lensTitle(dec)},
		})
		if s.pictures != "" {
			out = append(out, protocol.CodeLens{
				Range: a.lines.rangeOf(at.Name.Sp),
				Command: &protocol.Command{Title: "tile map picture (" + pictureLaunch + ")", Command: drawCommand,
					Arguments: []any{string(p.TextDocument.URI), at.Name.Name}},
			})
		}
	}
	return out, nil
}

// isGenerated reports whether the block runs a generated kernel.
func isGenerated(dec *classify.Decision) bool { return dec.Pattern == classify.PatternGenerated }

// lensTitle is the call, with its preconditions, or `generated: reason`.
func lensTitle(dec *classify.Decision) string {
	if isGenerated(dec) {
		return "generated: " + dec.Reason
	}
	title := dec.Call()
	if len(dec.Preconditions) > 0 {
		title += " if " + strings.Join(dec.Preconditions, " and ") + ", else " + fallback(dec)
	}
	return title
}

// decisionSummary is a one-line plain-text description, e.g.
// "causal → flash_attn_func(causal=True, window_size=(-1, -1))".
func decisionSummary(dec *classify.Decision) string {
	if isGenerated(dec) {
		return "generated: " + dec.Reason
	}
	return dec.Pattern + " → " + dec.Call()
}

// decisionSummaryMarkdown is decisionSummary in Markdown, with the
// preconditions.
func decisionSummaryMarkdown(dec *classify.Decision) string {
	if isGenerated(dec) {
		return "**generated**: " + dec.Reason
	}
	s := fmt.Sprintf("**%s** → `%s`", dec.Pattern, dec.Call())
	if len(dec.Preconditions) > 0 {
		s += ", precondition " + strings.Join(dec.Preconditions, ", ")
	}
	return s
}

// decisionMarkdown is the full hover text of a decision.
func decisionMarkdown(dec *classify.Decision) string {
	var b strings.Builder
	b.WriteString(decisionSummaryMarkdown(dec))
	b.WriteString("\n")
	if len(dec.Preconditions) > 0 {
		fmt.Fprintf(&b, "\notherwise: %s kernel\n", fallback(dec))
	}
	if isGenerated(dec) {
		fmt.Fprintf(&b, "\nkernel: `%s`\n", dec.Call())
	} else if dec.Reason != "" {
		fmt.Fprintf(&b, "\nwhy: %s\n", dec.Reason)
	}
	if dec.Score != "" && dec.Score != classify.ScoreNone {
		fmt.Fprintf(&b, "\nscore: %s\n", dec.Score)
	}
	if dec.Segments != "" {
		fmt.Fprintf(&b, "\ncu_seqlens: from the boundaries of segments buffer `%s`, per batch\n", dec.Segments)
	}
	if dec.Canonical != "" {
		fmt.Fprintf(&b, "\nmask: `%s`\n", dec.Canonical)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func fallback(dec *classify.Decision) string {
	if dec.Fallback != "" {
		return dec.Fallback
	}
	return "generated"
}
