package check

import "github.com/maskc/maskc/dsl"

// Diagnostic codes reported by the checker (E020-E099 but E079-E081, the parser's; W001-W049).
const (
	CodeUnknownName       dsl.Code = "E020"
	CodeDuplicate         dsl.Code = "E021"
	CodeModParamCount     dsl.Code = "E022"
	CodeArgCount          dsl.Code = "E023"
	CodeMaskNotBool       dsl.Code = "E024"
	CodeScoreNotFloat     dsl.Code = "E025"
	CodeLogicalNotBool    dsl.Code = "E026"
	CodeBitwiseOperand    dsl.Code = "E027"
	CodeNotAValue         dsl.Code = "E028"
	CodeConditionNotBool  dsl.Code = "E029"
	CodeIndexCount        dsl.Code = "E030"
	CodeIndexNotInt       dsl.Code = "E031"
	CodeNotABuffer        dsl.Code = "E032"
	CodeBadDim            dsl.Code = "E033"
	CodeUnknownDType      dsl.Code = "E034"
	CodeUnknownProperty   dsl.Code = "E035"
	CodeBadSegments       dsl.Code = "E036"
	CodeDivisionByZero    dsl.Code = "E037"
	CodeFoldError         dsl.Code = "E038"
	CodeRecursion         dsl.Code = "E039"
	CodeModKindMismatch   dsl.Code = "E040"
	CodeParamNotConst     dsl.Code = "E041"
	CodeParamType         dsl.Code = "E042"
	CodeDefineUnknown     dsl.Code = "E043"
	CodeDefineValue       dsl.Code = "E044"
	CodeFactoryArg        dsl.Code = "E045"
	CodeFactoryNoArgs     dsl.Code = "E046"
	CodeNotCallable       dsl.Code = "E047"
	CodeUnknownSetting    dsl.Code = "E048"
	CodeDuplicateSetting  dsl.Code = "E049"
	CodeSettingType       dsl.Code = "E050"
	CodeSettingRange      dsl.Code = "E051"
	CodeUnknownWord       dsl.Code = "E052"
	CodeReservedName      dsl.Code = "E053"
	CodeNotAMod           dsl.Code = "E054"
	CodeTooLarge          dsl.Code = "E055"
	CodeArgType           dsl.Code = "E056"
	CodeSettingBuffer     dsl.Code = "E057"
	CodeStringValue       dsl.Code = "E073"
	CodeMethod            dsl.Code = "E074"
	CodeKeywordArg        dsl.Code = "E075"
	CodeConversion        dsl.Code = "E076"
	CodeUnboundLocal      dsl.Code = "E077"
	CodeStatement         dsl.Code = "E078"
	CodeSetupTensor       dsl.Code = "E082"
	CodeInPlaceShared     dsl.Code = "E083"
	CodeIntPower          dsl.Code = "E090"
	CodeUnusedParam       dsl.Code = "W001"
	CodeUnusedBuffer      dsl.Code = "W002"
	CodeUnusedMod         dsl.Code = "W003"
	CodeUnusedLet         dsl.Code = "W004"
	CodeShadow            dsl.Code = "W005"
	CodeBitwisePrecedence dsl.Code = "W006"
	CodeRebound           dsl.Code = "W007"
	CodeNoGradient        dsl.Code = "W010"
	CodeTorchBool         dsl.Code = "W030"
	CodeFloat32Range      dsl.Code = "E091" // W020 until issue 31: now an error
)

// Codes describes every code the checker reports, one line each; tests
// iterate it to make sure each code has a pinned example.
var Codes = map[dsl.Code]string{
	CodeUnknownName:       "a name that is not declared (with a did-you-mean hint)",
	CodeDuplicate:         "a name declared twice in the same scope",
	CodeModParamCount:     "a mod declared with the wrong number of index parameters",
	CodeArgCount:          "a call with the wrong number of arguments (mod, factory, built-in or combinator)",
	CodeMaskNotBool:       "a mask body that is not bool",
	CodeScoreNotFloat:     "a score body that is not a number",
	CodeLogicalNotBool:    "`and`, `or` or `not` applied to a non-bool",
	CodeBitwiseOperand:    "`&`, `|`, `^`, `~`, `<<` or `>>` on floats, or `&`, `|`, `^` mixing bool and int",
	CodeNotAValue:         "a mod, buffer, function or tuple used where a scalar is needed, or arithmetic on a non-number",
	CodeConditionNotBool:  "the condition of `where` or `if else` is not bool",
	CodeIndexCount:        "a buffer read with a number of indices different from its dimensions",
	CodeIndexNotInt:       "a buffer index that is not an int",
	CodeNotABuffer:        "indexing something that is not a buffer",
	CodeBadDim:            "a buffer dimension that is not a positive int constant, linear in B H HKV Q KV, or such a form floor-divided by a positive int constant",
	CodeUnknownDType:      "an unknown buffer element type",
	CodeUnknownProperty:   "an unknown buffer property",
	CodeBadSegments:       "`segments` on a buffer that is not a 1-D integer buffer over Q or KV",
	CodeDivisionByZero:    "division or modulo by a constant zero",
	CodeFoldError:         "constant folding failed (int64 overflow, domain error)",
	CodeRecursion:         "a mod that calls itself, directly or through other mods",
	CodeModKindMismatch:   "a score used where a mask is expected, or the reverse",
	CodeParamNotConst:     "a param whose value is not a compile-time constant",
	CodeParamType:         "a param whose value is not an int, float or bool",
	CodeDefineUnknown:     "a -D override of a param that is not declared",
	CodeDefineValue:       "a -D override whose value does not fit the param's type",
	CodeFactoryArg:        "a factory argument that is not a constant (or a buffer where the factory indexes it)",
	CodeFactoryNoArgs:     "a factory used without its arguments",
	CodeNotCallable:       "calling something that is not a function or mod",
	CodeUnknownSetting:    "an unknown attention setting",
	CodeDuplicateSetting:  "an attention setting given twice",
	CodeSettingType:       "an attention setting whose value has the wrong type",
	CodeSettingRange:      "an attention setting whose value is out of range",
	CodeUnknownWord:       "an unknown word for layout or dtype",
	CodeReservedName:      "a declaration named like a size symbol or a combinator",
	CodeNotAMod:           "a value where a mask or score mod is expected",
	CodeTooLarge:          "an expression that grows too large when inlined",
	CodeArgType:           "a mod or built-in argument of the wrong type",
	CodeSettingBuffer:     "a sink/alibi/bias buffer with the wrong shape or element type",
	CodeIntPower:          "an int power whose exponent is not a constant in [0, 2**20] (a negative one makes it a float)",
	CodeUnusedParam:       "a param that is never used",
	CodeUnusedBuffer:      "a buffer that is never used",
	CodeUnusedMod:         "a mod that is never used (files with attention blocks only)",
	CodeUnusedLet:         "a let binding that is never used",
	CodeShadow:            "a mod parameter or let that shadows a param, buffer, mod or built-in",
	CodeRebound:           "a Python module constant assigned again: the mods read its last value",
	CodeBitwisePrecedence: "`&` or `|` between two comparisons of a chain, where Python makes it bitwise on ints",
	CodeNoGradient:        "an attention's score depends on the score or a float buffer only through floor, ceil, `//` or a comparison used as a number, where no gradient flows (the forward is exact: a warning)",
	CodeTorchBool:         "`and`, `or`, `not`, a chained comparison or `if else` on tensors in a def, where torch raises",
	CodeStringValue:       "a string used as a value (strings appear only in float(\"inf\") and keyword values)",
	CodeMethod:            "a tensor method that is unknown, not called, or called with the wrong arguments",
	CodeKeywordArg:        "a keyword argument that the function does not take, or a bad keyword value",
	CodeUnboundLocal:      "a def's local read before its first assignment (Python's UnboundLocalError)",
	CodeStatement:         "an `if` or `assert` on a run-time value (decided at compile time only), a failing assert, a def that ends without return, or `is` not against None",
	CodeInPlaceShared:     "an augmented assignment (`x += e`, `v &= m`) to a name whose tensor another name may share (a parameter, an alias): torch changes that tensor in place, for every name that holds it",
	CodeSetupTensor:       "a factory's set-up (or a module constant) that builds or changes a tensor (torch.rand, torch.zeros, a loop filling it, `x[a:b] = v`, `.fill_()`): compute it in Python and pass it as a buffer",
	CodeConversion:        "a conversion maskc cannot make exactly: a dtype other than int32/int64/float32/float64/bool, or float() of a bad string",
	CodeFloat32Range:      "a score constant that float32, in which kernels compute scores, rounds to inf or 0",
}
