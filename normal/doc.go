// Package normal owns the one normal form of a mask that the classifier
// and the code generator read (dsl below it; classify and codegen above).
//
// Canon rewrites a lowered mask into a Form: a disjunction of Terms, each a
// conjunction of
//
//   - Bounds lo <= Dir <= hi on integer linear forms over the index
//     variables b, h, q, kv, the sizes B, H, HKV, Q, KV and the form's
//     extra variables;
//   - segment equalities `doc[q] == doc[kv]` (Atom of kind AtomSegment);
//   - opaque atoms that carry the reason they are not linear (AtomOpaque).
//
// Extra variables (Form.Extras) are functions of the point, never free
// choices: a floor quotient n // d of a linear form by a positive constant
// is an integer x with d*x <= n <= d*x + d - 1, and n % d is n - d*x; an
// integer expression that reads neither q nor kv (`prefix_len[b]`,
// `b * h`) is a symbol. Negation is pushed to the leaves, conditionals,
// where(), abs, min, max and clamp become guarded pieces (a comparison
// whose operand is a min, max, abs or clamp goes through the lattice
// identities instead: `min(q, 40) >= kv` is `kv <= q and kv <= 40`, one
// term, lattice.go), and the result is
// simplified once, here: domain facts true for every length (indices at
// least 0 and below their size, sizes at least 1, a quotient within its
// dividend's range divided, a remainder in 0..d-1), subsumption, merging of
// touching intervals and of `X and A` with `X and not A`, and exact
// elimination of a quotient a term bounds only directly (`(q - kv) // 1024
// == 0` is `0 <= q - kv <= 1023`).
//
// Form.Interval is the query side for code generators (codegen's block
// sparsity reads it): per disjunct, the interval an index variable lies in
// once the others are fixed, with block-index sides in closed form and a
// flag saying whether it is exact; Form.Monotone says how a linear form
// moves as q or kv grows (a bound on a monotone form holds over a tile when
// it holds at the tile's corners); Bound.Remainder reads a bound back as
// one on n % d.
//
// Package normaltest holds the random-expression generator, buffer filler
// and form evaluator that the property tests of normal and classify share;
// they check every form against the reference evaluator (package eval).
package normal
