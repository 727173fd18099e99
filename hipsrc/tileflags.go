package hipsrc

// TileFlag is one byte of the pre-pass's flag buffer: what maskc_tile_flags
// found for one (b', h', q tile, kv tile), and what maskc_attn_fwd does with
// the tile.
type TileFlag uint8

// The values maskc_tile_flags writes (attn_fwd.h).
const (
	// FlagEmpty: no (q, kv) of the tile is kept; the tile is skipped.
	FlagEmpty TileFlag = 0
	// FlagPartial: some pairs are kept; the tile is visited with the mask.
	FlagPartial TileFlag = 1
	// FlagFull: every pair is kept; the tile is visited without the mask.
	FlagFull TileFlag = 2
)
