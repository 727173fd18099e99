package classify

import "github.com/maskc/maskc/dsl"

// Diagnostic codes of the classifier (E100-E199, W100-W149) and of the
// attention configuration rules (E200-E299). The rule numbers refer to the
// list in turbo-contract.md.
const (
	CodeNeverTrue       dsl.Code = "E100"
	CodeEmptyFirstRows  dsl.Code = "W100"
	CodeEmptyLastRows   dsl.Code = "W101"
	CodeSinkCast        dsl.Code = "W102"
	CodeMaskAndWindow   dsl.Code = "E200"
	CodeMaskAndCausal   dsl.Code = "E201"
	CodeWindowNoCausal  dsl.Code = "E202"
	CodeRightWindow     dsl.Code = "E203"
	CodeBias            dsl.Code = "E204"
	CodePackedMask      dsl.Code = "E205"
	CodeSinkEntry       dsl.Code = "E206"
	CodeSinkBand        dsl.Code = "E207"
	CodeSinkDeterminism dsl.Code = "E208"
	CodeDeterministic   dsl.Code = "E209"
	CodeFP8Combination  dsl.Code = "E210"
	CodeContextParallel dsl.Code = "E211"
	CodeAttnProbs       dsl.Code = "E212"
	CodeAlibiAndScore   dsl.Code = "E213"
	CodeFP8Entry        dsl.Code = "E214"
	CodeCausalRight     dsl.Code = "E215"
	CodeWindowRange     dsl.Code = "E216"
)

// Codes describes every code Classify reports, one line each; the tests
// iterate it and fail on a code without a pinned example.
var Codes = map[dsl.Code]string{
	CodeNeverTrue:       "the mask is never true: every pair is masked for every length",
	CodeEmptyFirstRows:  "the first rows of every sequence see no key (fully masked rows output zeros)",
	CodeEmptyLastRows:   "the last rows see no key when Q == KV",
	CodeSinkCast:        "a sink buffer that is not f32 is cast to f32 (rule 11)",
	CodeMaskAndWindow:   "a mask together with a window setting: two sources for one quantity (rule 1)",
	CodeMaskAndCausal:   "a mask together with causal = true: two sources for one quantity (rule 1)",
	CodeWindowNoCausal:  "a window without causal = true on the dense path (rule 2)",
	CodeRightWindow:     "a right window bound > 0 on a target that takes only a left bound (rule 3)",
	CodeBias:            "a bias setting, which the trainer accepts and ignores (rule 4)",
	CodePackedMask:      "thd layout with a mask or score that is not a document pattern (rule 5)",
	CodeSinkEntry:       "a sink on an entry that takes no sink on this target (rule 10)",
	CodeSinkBand:        "a sink with a bidirectional window",
	CodeSinkDeterminism: "sink together with deterministic on the dense route",
	CodeDeterministic:   "deterministic on a target whose entries have no deterministic parameter (rule 9)",
	CodeFP8Combination:  "fp8 with sink, bias, window, dropout, deterministic, return_lse, documents or a dtype other than bf16 (rule 13)",
	CodeContextParallel: "context_parallel on the flex path (rule 8)",
	CodeAttnProbs:       "return_attn_probs on the flex path (rule 8)",
	CodeAlibiAndScore:   "alibi slopes together with a non-trivial score mod: ambiguous (rule 12)",
	CodeFP8Entry:        "fp8 on a target without the fp8 entry, or with a mask the fp8 entry cannot run",
	CodeCausalRight:     "causal = true with a right window bound > 0: causal already hides every key right of the diagonal",
	CodeWindowRange:     "a window bound beyond the 32-bit int Turbo's window_size takes",
}
