// Package classify decides, for every attention block of a checked .flex
// program, whether it runs on an AMD Primus-Turbo kernel and with exactly
// which arguments, or on a maskc generated kernel, and why; and it enforces
// the configuration rules that Turbo's trainer integration got silently
// wrong.
//
// The decision is symbolic, never sampled:
//
//   - Canon (package normal) rewrites a lowered mask into a canonical Form,
//     a disjunction of conjunctions of integer bounds on linear forms
//     (`0 <= q - kv <= 1023`, also over floor quotients and symbols free of
//     q and kv), document equalities (`doc[q] == doc[kv]`) and opaque
//     atoms. Every spelling of causal, a window, a band or a document mask,
//     `//` and `%` spellings included, reaches the same Form.
//   - The patterns of turbo-contract.md (full, causal,
//     sliding_window_causal, sliding_window, document, document_causal,
//     document_windowed; ALiBi, softcap and scale scores) are read off the
//     Form with exact parameters, in Turbo's own keyword names. A mapping
//     exact only when Sq == Skv (the kernels align causal bottom-right,
//     FlexAttention top-left) carries that precondition.
//   - A Profile describes what one Turbo build can run; Classify never
//     assumes a capability its target does not list.
//
// The result is a Plan (plan.json, schema in PLAN.md) plus positioned
// diagnostics: rule errors E200-E299, never-true masks E100, empty-row
// warnings W100-W101. The reference evaluator (package eval) is used only by
// the tests, as the oracle the classification is checked against.
package classify
