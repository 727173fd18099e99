package codegen

import (
	"fmt"

	"github.com/maskc/maskc/dsl"
)

// Diagnostic codes reported by the code generator (range E300-E399, W300-W399).
const (
	// CodeHeadDim: the head dimension has no kernel configuration.
	CodeHeadDim dsl.Code = "E300"
	// CodeDType: the element type has no kernel configuration.
	CodeDType dsl.Code = "E301"
	// CodeLayout: the tensor layout is not bshd or bhsd.
	CodeLayout dsl.Code = "E302"
	// CodeTooManyBuffers: more captured buffers than MaskcBuffers holds.
	CodeTooManyBuffers dsl.Code = "E303"
	// CodeBufferRank: a captured buffer with more dimensions than the ABI carries.
	CodeBufferRank dsl.Code = "E304"
	// CodeUnsupported: an expression construct the generator cannot express.
	CodeUnsupported dsl.Code = "E305"
	// CodePowExponent: an int power whose exponent is not a non-negative constant.
	CodePowExponent dsl.Code = "E306"
	// CodeBufferIndex: a buffer read with the wrong number of indices or an unknown buffer.
	CodeBufferIndex dsl.Code = "E307"
	// CodeBufferDType: a captured buffer of an element type the generator cannot read.
	CodeBufferDType dsl.Code = "E308"
	// CodeSetting: an attention setting the generated kernel does not implement.
	CodeSetting dsl.Code = "E309"
	// CodeGradient: a score whose derivative cannot be generated.
	CodeGradient dsl.Code = "E310"
	// CodeIntOverflow: int arithmetic the range analysis cannot prove stays in int64.
	CodeIntOverflow dsl.Code = "E311"
	// CodeReadRange: a read of a buffer of constant extents that stays
	// inside only up to some sizes (a note) or at none (a warning).
	CodeReadRange dsl.Code = "W320"
	// CodeReadValues: a read whose index is computed from buffer values
	// that the dtype does not keep inside the buffer.
	CodeReadValues dsl.Code = "W321"
)

// Codes describes every diagnostic code of this package in one line.
var Codes = map[dsl.Code]string{
	CodeHeadDim:        "head dimension without a generated-kernel configuration (64, 128 or 256)",
	CodeDType:          "element type without a generated-kernel configuration (bf16 or fp16)",
	CodeLayout:         "tensor layout other than bshd or bhsd",
	CodeTooManyBuffers: fmt.Sprintf("more captured buffers than a generated kernel takes (%d)", MaxBuffers),
	CodeBufferRank:     fmt.Sprintf("captured buffer with more dimensions than a generated kernel reads (%d)", MaxBufferRank),
	CodeUnsupported:    "expression construct the code generator cannot express",
	CodePowExponent:    "int ** with an exponent that is not a non-negative constant",
	CodeBufferIndex:    "buffer read with the wrong number of indices, or of an undeclared buffer",
	CodeBufferDType:    "captured buffer element type the generator cannot read",
	CodeSetting:        "attention setting (causal, window, alibi, bias, dropout, ...) a generated kernel does not implement",
	CodeGradient:       "score whose derivative (maskc_score_grad) is too large to generate",
	CodeIntOverflow:    "int arithmetic the range analysis cannot prove stays within int64",
	CodeReadRange:      "buffer read that stays inside its constant extents only up to some sizes; larger calls are refused",
	CodeReadValues:     "buffer read whose index comes from buffer values; an out-of-range value is flagged by the kernel",
}
