package parser

import "github.com/maskc/maskc/dsl"

// Syntax diagnostic codes. Their meaning never changes once released.
const (
	// CodeInvalidChar is a character that cannot start any token.
	CodeInvalidChar dsl.Code = "E001"
	// CodeMalformedNumber is a number literal with bad syntax, e.g. `1e` or `12ab`.
	CodeMalformedNumber dsl.Code = "E002"
	// CodeNumberRange is a number literal too large to represent.
	CodeNumberRange dsl.Code = "E003"
	// CodeBinaryInput is a NUL byte or invalid UTF-8.
	CodeBinaryInput dsl.Code = "E004"
	// CodeFileTooLarge is a file over MaxFileSize bytes.
	CodeFileTooLarge dsl.Code = "E005"
	// CodeNestingTooDeep is more than MaxNesting nested brackets.
	CodeNestingTooDeep dsl.Code = "E006"
	// CodeOperatorChain is more than MaxPrefixRun prefix operators in a row.
	CodeOperatorChain dsl.Code = "E007"
	// CodeUnclosedBracket is an opening bracket that is never closed.
	CodeUnclosedBracket dsl.Code = "E008"
	// CodeUnmatchedBracket is a closing bracket that closes nothing, or the wrong kind.
	CodeUnmatchedBracket dsl.Code = "E009"
	// CodeExpectedDecl is a top-level line that does not start a declaration.
	CodeExpectedDecl dsl.Code = "E010"
	// CodeUnexpectedToken is a token where the grammar expects something else,
	// most often a missing expression.
	CodeUnexpectedToken dsl.Code = "E011"
	// CodeMissingBody is a declaration or setting without its `=`, `:` or body.
	CodeMissingBody dsl.Code = "E012"
	// CodeExpectedEndOfLine is extra text after a complete declaration or statement.
	CodeExpectedEndOfLine dsl.Code = "E013"
	// CodeMissingResult is a block body that does not end with an expression.
	CodeMissingResult dsl.Code = "E014"
	// CodeKeywordAsName is a keyword written where a name is expected.
	CodeKeywordAsName dsl.Code = "E015"
	// CodeParamLists is a mod with more than two parameter lists.
	CodeParamLists dsl.Code = "E016"
	// CodeForeignOperator is an operator from C or JavaScript: `&&`, `||`, `!`.
	CodeForeignOperator dsl.Code = "E017"
	// CodeTooManyErrors ends parsing after MaxErrors syntax errors.
	CodeTooManyErrors dsl.Code = "E018"
	// CodeBadString is a string literal that is not closed or uses an escape.
	CodeBadString dsl.Code = "E070"
	// CodeDefIndent is a def body whose statements are not indented under
	// the def, or not all alike.
	CodeDefIndent dsl.Code = "E071"
	// CodeDefShape is a def that is not a mask_mod, a score_mod or a factory
	// returning one: wrong parameter count, a factory returning another name,
	// or a keyword argument or annotation where Python has none.
	CodeDefShape dsl.Code = "E072"
	// CodeDecorator is a decorator: a note when maskc reads past it (it
	// does not change the function), an error otherwise.
	CodeDecorator dsl.Code = "E019"
	// CodeTensorWork is work on whole tensors that a mod cannot do (it
	// computes one value per (q, kv) pair): assigning into a tensor, a
	// slice; the checker reports a factory computing with a whole buffer
	// under it too.
	CodeTensorWork dsl.Code = "E079"
	// CodeImport is the note on a Python import of a module .flex does not
	// mirror (the line is read past; imports of torch, math, functools and
	// the annotation modules are read past silently).
	CodeImport dsl.Code = "E080"
	// CodeDeletedName is a name read after a `del` statement unbound it
	// (Python raises NameError there).
	CodeDeletedName dsl.Code = "E081"
)

// Codes describes every diagnostic code the parser emits, one line each.
var Codes = map[dsl.Code]string{
	CodeInvalidChar:       "invalid character",
	CodeMalformedNumber:   "malformed number literal",
	CodeNumberRange:       "number literal out of range",
	CodeBinaryInput:       "binary input: NUL byte or invalid UTF-8",
	CodeFileTooLarge:      "file too large",
	CodeNestingTooDeep:    "brackets nested too deeply",
	CodeOperatorChain:     "too many prefix operators in a row",
	CodeUnclosedBracket:   "unclosed bracket",
	CodeUnmatchedBracket:  "closing bracket without a matching opening one",
	CodeExpectedDecl:      "expected a declaration",
	CodeUnexpectedToken:   "unexpected token",
	CodeMissingBody:       "missing `=`, `:` or body",
	CodeExpectedEndOfLine: "expected end of line",
	CodeMissingResult:     "block body without a result expression",
	CodeKeywordAsName:     "keyword used as a name",
	CodeParamLists:        "too many parameter lists",
	CodeForeignOperator:   "operator from another language",
	CodeTooManyErrors:     "too many syntax errors; the rest of the file was not parsed",
	CodeBadString:         "unterminated string, or a string with an escape",
	CodeDefIndent:         "def body indented wrongly",
	CodeDefShape:          "def that is not a mask_mod, score_mod or factory of one",
	CodeDecorator:         "a decorator: read past with a note when it leaves the function unchanged, an error otherwise",
	CodeTensorWork:        "work on a whole tensor (an assignment into it, a slice, a whole-buffer computation in a factory), which belongs before the call",
	CodeImport:            "a Python import of a module .flex does not mirror: read past with a note",
	CodeDeletedName:       "a name read after `del` unbound it",
}
