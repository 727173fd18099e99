package runtime

import (
	"errors"
	"os"
	"sync"

	"github.com/maskc/maskc/runtime/backend"
	"github.com/maskc/maskc/runtime/cuda"
	"github.com/maskc/maskc/runtime/hip"
	"github.com/maskc/maskc/runtime/kcache"
)

// BackendEnv selects the backend: "cuda", "hip", or empty for automatic.
const BackendEnv = "MASKC_BACKEND"

// Aliases of the backend handle types, so that embedders need not import
// runtime/backend.
type (
	// DevicePtr is an address in device memory.
	DevicePtr = backend.DevicePtr
	// Stream is a queue of device work; zero is the default stream.
	Stream = backend.Stream
	// Dim3 is a grid or block extent.
	Dim3 = backend.Dim3
)

// Options configure Open.
type Options struct {
	// Backend is "cuda", "hip" or "" (read BackendEnv; if that is empty
	// too, CUDA when libcuda loads and has a device, else HIP).
	Backend string
	// Ordinal is the device index.
	Ordinal int
	// CacheDir is the kernel cache directory; "" means
	// $MASKC_CACHE_DIR, else the user cache directory + "/maskc".
	CacheDir string
	// DisableCache compiles every time and writes nothing to disk.
	DisableCache bool
}

// Device is an opened GPU (or fake) device: the backend's operations
// (Alloc, CopyHtoD, NewStream, ...) plus cached compilation and launchers.
// It is safe for concurrent use.
type Device struct {
	backend.Backend

	cache    *kcache.Cache
	cacheErr error

	compilerOnce sync.Once
	compiler     backend.Compiler
	compilerErr  error
}

// Open opens a device as opts say. With no usable GPU runtime the error is
// an *Error with code E400 whose cause lists every library searched and why
// each failed.
func Open(opts Options) (*Device, error) {
	name := opts.Backend
	if name == "" {
		name = os.Getenv(BackendEnv)
	}
	var b backend.Backend
	var err error
	switch name {
	case "cuda":
		b, err = cuda.Open(opts.Ordinal)
	case "hip":
		b, err = hip.Open(opts.Ordinal)
	case "", "auto":
		var cudaErr, hipErr error
		if b, cudaErr = cuda.Open(opts.Ordinal); cudaErr != nil {
			if b, hipErr = hip.Open(opts.Ordinal); hipErr != nil {
				err = errors.Join(cudaErr, hipErr)
			}
		}
	default:
		return nil, errorf(CodeBackendName, nil, "unknown backend %q (from %s or Options.Backend); want cuda or hip", name, BackendEnv)
	}
	if err != nil {
		return nil, errorf(CodeNoRuntime, err, "no GPU runtime available")
	}
	return NewDevice(b, opts), nil
}

// NewDevice wraps an already opened backend, e.g. a fake.Backend in tests.
// A cache directory that cannot be created disables the cache; CacheError
// says why.
func NewDevice(b backend.Backend, opts Options) *Device {
	d := &Device{Backend: b}
	if !opts.DisableCache {
		d.cache, d.cacheErr = kcache.Open(opts.CacheDir)
	}
	return d
}

// Info describes the device.
func (d *Device) Info() backend.DeviceInfo { return d.Device() }

// CacheDir is the kernel cache directory, or "" when caching is off.
func (d *Device) CacheDir() string {
	if d.cache == nil {
		return ""
	}
	return d.cache.Dir()
}

// CacheError is why the cache is off when it was asked for, else nil.
func (d *Device) CacheError() error { return d.cacheErr }

// Compiler returns the device's run-time compiler, loading it on first use.
func (d *Device) Compiler() (backend.Compiler, error) {
	d.compilerOnce.Do(func() {
		d.compiler, d.compilerErr = d.Backend.Compiler()
		if d.compilerErr != nil {
			d.compilerErr = errorf(CodeNoCompiler, d.compilerErr, "no run-time compiler for %s", d.Info().Backend)
		}
	})
	return d.compiler, d.compilerErr
}

// TimeMs runs fn, which enqueues work on stream s, between two events and
// returns the device time it took in milliseconds.
func (d *Device) TimeMs(s Stream, fn func() error) (float32, error) {
	start, err := d.NewEvent()
	if err != nil {
		return 0, err
	}
	defer d.DestroyEvent(start)
	end, err := d.NewEvent()
	if err != nil {
		return 0, err
	}
	defer d.DestroyEvent(end)
	if err := d.RecordEvent(start, s); err != nil {
		return 0, err
	}
	if err := fn(); err != nil {
		return 0, err
	}
	if err := d.RecordEvent(end, s); err != nil {
		return 0, err
	}
	if err := d.SynchronizeEvent(end); err != nil {
		return 0, err
	}
	return d.ElapsedMs(start, end)
}
