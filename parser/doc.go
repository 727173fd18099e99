// Package parser turns the text of a .flex file into the dsl AST.
//
// The work is done in layers, each in its own file:
//
//	parser.go   ParseFile and ParseExpr
//	limits.go   refuse input that is too large or not UTF-8 text
//	split.go    cut a file into top-level declarations for error recovery
//	lexer.go    hand-written tokenizer: implicit line joining inside ( ) and
//	            [ ], bracket matching, nesting and operator-run limits
//	grammar.go  the participle/v2 grammar over those tokens
//	convert.go  grammar structs -> dsl nodes with exact byte spans, and
//	            Python's operator precedence (a Pratt parser over the flat
//	            operand/operator lists the grammar produces)
//	def.go      Python `def` declarations: factories, annotations,
//	            docstrings, and Python's indentation rules checked from the
//	            tokens' columns
//	errors.go   participle failures -> positioned diagnostics in words
//
// Every syntax problem is a dsl.Diagnostic with a code from Codes
// (E001-E019, E070-E072 for strings and defs, E079 for work on whole
// tensors and the note E080 on an import read past), a message that says what was expected, and a hint. A broken
// declaration yields one diagnostic and does not hide problems in the
// declarations after it. Bracket nesting is bounded by MaxNesting and runs
// of prefix operators by MaxPrefixRun, and input by MaxFileSize, so hostile
// input ends quickly with a diagnostic instead of exhausting the stack.
package parser
