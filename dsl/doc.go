// Package dsl is the bottom layer of maskc: the source text of a .flex file
// and positions in it, the typed abstract syntax tree every later stage
// consumes, the value and type model, and diagnostics.
//
// Layering, bottom up (each package imports only those below it):
//
//	dsl       source, positions, AST, types, values, diagnostics
//	parser    .flex text -> *dsl.File (participle grammar), and the printer
//	check     name resolution, types, constant folding, -D overrides
//	grad      symbolic derivatives of a lowered score
//	eval      float64 reference evaluator and reference attention
//	classify  canonical form, Turbo patterns, compile-time rules, plan
//	codegen   HIP source for generated kernels
//	runtime   purego bindings, JIT, cache, launch
//	cmd/maskc the command line and the language server
//
// Every node carries byte-offset spans into its Source, so diagnostics from
// every stage point at the text the user wrote.
package dsl
