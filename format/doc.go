// Package format prints .flex syntax canonically: whole files for
// `maskc fmt` (Source) and single expressions for messages, hovers and
// generated-code comments (Expr).
//
// The canonical style: four-space indentation in blocks, one space around
// binary operators, comparisons and `=`, `, ` between list elements,
// parentheses exactly where the user wrote them (and, for trees built by the
// compiler, exactly where precedence requires them), literals as written,
// comments kept (own-line comments above what follows them, trailing
// comments two spaces after the code), runs of blank lines collapsed to one,
// and exactly one final newline.
package format
