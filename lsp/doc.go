// Package lsp is maskc's language server: `maskc lsp` runs Serve on
// standard input and output for editors that speak the Language Server
// Protocol (VS Code, Neovim, ...; see editors/).
//
// It is built on go.lsp.dev/protocol (the LSP types) and go.lsp.dev/jsonrpc2
// (the transport). The server keeps every open document's latest text and
// its analysis: the parse (reusing the unchanged declarations of the
// previous version), the check and the classification onto Turbo's kernels.
// From them it answers:
//
//	publishDiagnostics   every diagnostic of parse, check and classify, with
//	                     its code, severity and hint, on open and on change
//	                     (while a declaration has a syntax error, the check
//	                     errors that only its absence causes are left out)
//	hover                what a name denotes (param value, buffer type,
//	                     built-in and standard-library docs); on an attention
//	                     block the exact Turbo call it becomes, its
//	                     preconditions, or `generated` and why; on a mod the
//	                     classification of the blocks that use it
//	definition           the declaration of a name
//	documentSymbol       declarations, with lets and settings as children
//	formatting           the text `maskc fmt` writes, as one edit
//	semanticTokens/full  keywords, comments, numbers, operators, and names
//	                     by what they resolve to
//	codeLens             the Turbo call of each attention block
//
// Files are organised by job: server.go (transport, dispatch, lifecycle),
// documents.go (text sync), analysis.go (running the compiler stages),
// reparse.go (incremental parsing), position.go (byte offsets <-> UTF-16
// LSP positions), and one file per feature.
package lsp
