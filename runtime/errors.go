package runtime

import (
	"fmt"

	"github.com/maskc/maskc/dsl"
	"github.com/maskc/maskc/runtime/jitlog"
)

// Diagnostic codes of the runtime (E400-E499).
const (
	// CodeNoRuntime: no GPU runtime could be loaded or no device found.
	CodeNoRuntime dsl.Code = "E400"
	// CodeCompileFlex: the GPU compiler rejected code generated from a
	// .flex line (the diagnostic points at that line).
	CodeCompileFlex = jitlog.CodeFlexError
	// CodeCompileKernel: the GPU compiler failed outside generated code.
	CodeCompileKernel = jitlog.CodeKernelError
	// CodeNoCompiler: the run-time compiler library (NVRTC, hiprtc) is
	// missing.
	CodeNoCompiler dsl.Code = "E403"
	// CodeModule: a compiled module could not be loaded or lacks a kernel.
	CodeModule dsl.Code = "E404"
	// CodeLaunch: the backend refused a kernel launch.
	CodeLaunch dsl.Code = "E405"
	// CodeShape: the attention shape or strides are invalid.
	CodeShape dsl.Code = "E406"
	// CodeBuffers: wrong number of captured buffers, a null pointer, or a
	// buffer extent that is not positive.
	CodeBuffers dsl.Code = "E407"
	// CodeSpec: the attention kernel description is inconsistent with the
	// ABI or the device (block sizes, shared memory, buffer count).
	CodeSpec dsl.Code = "E408"
	// CodeBackendName: MASKC_BACKEND or Options.Backend names no backend.
	CodeBackendName dsl.Code = "E409"
	// CodeReadRange: a buffer read of the mask or score would fall outside
	// its buffer's extents at the call's sizes (hipsrc.CheckRead); the call
	// is refused before anything is launched.
	CodeReadRange dsl.Code = "E410"
)

// Codes describes every code the runtime emits, including those of
// runtime/jitlog.
var Codes = map[dsl.Code]string{
	CodeNoRuntime:     "no GPU runtime library could be loaded, or it found no device",
	CodeCompileFlex:   jitlog.Codes[jitlog.CodeFlexError],
	CodeCompileKernel: jitlog.Codes[jitlog.CodeKernelError],
	CodeNoCompiler:    "the run-time compiler library (NVRTC or hiprtc) could not be loaded",
	CodeModule:        "a compiled kernel could not be loaded, or lacks an entry point",
	CodeLaunch:        "the GPU runtime refused a kernel launch",
	CodeShape:         "invalid attention shape or strides",
	CodeBuffers:       "wrong number of captured buffers, a null buffer, or a non-positive buffer extent",
	CodeSpec:          "the attention kernel description does not fit the ABI or the device",
	CodeBackendName:   "unknown backend name in MASKC_BACKEND or Options.Backend",
	CodeReadRange:     "a buffer read would fall outside its buffer's extents at the call's sizes",
}

// Error is a runtime failure that has no position in a .flex file. Compiler
// errors in generated code are returned as dsl.Diagnostics instead.
type Error struct {
	// Code classifies the failure, e.g. "E400".
	Code dsl.Code
	// Msg says what failed, lower case.
	Msg string
	// Err is the underlying error, if any (a *dl.NotFoundError listing the
	// libraries searched, a *cuda.Error, ...).
	Err error
}

// Error formats as "error[E400]: msg: cause".
func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("error[%s]: %s: %v", e.Code, e.Msg, e.Err)
	}
	return fmt.Sprintf("error[%s]: %s", e.Code, e.Msg)
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Diagnostic converts e into a position-less diagnostic for uniform
// reporting alongside compile diagnostics.
func (e *Error) Diagnostic() *dsl.Diagnostic {
	msg := e.Msg
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return &dsl.Diagnostic{Span: dsl.NoSpan, Code: e.Code, Severity: dsl.SeverityError, Message: msg}
}

func errorf(code dsl.Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Msg: fmt.Sprintf(format, args...), Err: cause}
}
