package fake

import (
	"encoding/binary"
	"errors"

	"github.com/maskc/maskc/runtime/backend"
)

var _ backend.TensorMapEncoder = (*Backend)(nil)

// TensorMapMagic opens every tensor map the fake encodes; the map's
// address follows it (little-endian, 8 bytes), then the call's sequence
// number (8 bytes, from 1), then TensorMapFill up to the end.
const TensorMapMagic = "FAKETMAP"

// TensorMapFill is the byte that fills the rest of a fake tensor map.
const TensorMapFill = 0xA5

// TensorMapCall is one EncodeTensorMap call the fake received.
type TensorMapCall struct {
	// Map is the map asked for.
	Map backend.TiledTensorMap
	// Encoded is what the fake wrote (EncodedTensorMap), zero when it failed.
	Encoded [backend.TensorMapBytes]byte
	// Err is the error it returned.
	Err error
}

// EncodedTensorMap returns the bytes the fake encodes for a map at addr as its
// seq-th call: TensorMapMagic, addr, seq, then TensorMapFill.
func EncodedTensorMap(addr backend.DevicePtr, seq int) [backend.TensorMapBytes]byte {
	var out [backend.TensorMapBytes]byte
	n := copy(out[:], TensorMapMagic)
	binary.LittleEndian.PutUint64(out[n:], uint64(addr))
	binary.LittleEndian.PutUint64(out[n+8:], uint64(seq))
	for i := n + 16; i < len(out); i++ {
		out[i] = TensorMapFill
	}
	return out
}

// CanEncodeTensorMaps implements backend.TensorMapEncoder: true unless
// SetTensorMaps turned the encoder off.
func (b *Backend) CanEncodeTensorMaps() bool { return !b.tmOff.Load() }

// SetTensorMaps turns the encoder on (the default) or off, as a CUDA
// driver without cuTensorMapEncodeTiled is, and sets the hook that decides
// each encoding's outcome (nil: every one succeeds). A kernel handle reads
// CanEncodeTensorMaps when it is made.
func (b *Backend) SetTensorMaps(on bool, fail func(backend.TiledTensorMap) error) {
	b.tmMu.Lock()
	defer b.tmMu.Unlock()
	b.tmOff.Store(!on)
	b.tmFail = fail
}

// errNoTensorMaps is EncodeTensorMap's error with the encoder off.
var errNoTensorMaps = errors.New("fake: tensor maps are off")

// EncodeTensorMap implements backend.TensorMapEncoder: it records the call
// (TensorMapCalls) and writes EncodedTensorMap(m.Address, n) for the n-th
// call, or returns the SetTensorMaps hook's error. It checks only the rank.
func (b *Backend) EncodeTensorMap(out *[backend.TensorMapBytes]byte, m backend.TiledTensorMap) error {
	b.tmMu.Lock()
	defer b.tmMu.Unlock()
	call := TensorMapCall{Map: m}
	switch {
	case b.tmOff.Load():
		call.Err = errNoTensorMaps
	case m.Rank < 1 || m.Rank > backend.TensorMapMaxRank:
		call.Err = errors.New("fake: tensor map rank out of range")
	case b.tmFail != nil:
		call.Err = b.tmFail(m)
	}
	if call.Err == nil {
		call.Encoded = EncodedTensorMap(m.Address, len(b.tmCalls)+1)
		*out = call.Encoded
	}
	b.tmCalls = append(b.tmCalls, call)
	return call.Err
}

// TensorMapCalls returns the EncodeTensorMap calls so far, in order.
func (b *Backend) TensorMapCalls() []TensorMapCall {
	b.tmMu.Lock()
	defer b.tmMu.Unlock()
	return append([]TensorMapCall(nil), b.tmCalls...)
}
