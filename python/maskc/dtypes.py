"""maskc's buffer element types, generated from buftype/buftype.go (the one table of them)
by `go test ./buftype -update`; do not edit."""

# TORCH maps each buffer element type to the torch dtype's attribute name.
TORCH = {
    "u8": "uint8",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "bool": "bool",
}

# SIZE is the size of one element in bytes.
SIZE = {"u8": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "f16": 2, "bf16": 2, "f32": 4, "f64": 8, "bool": 1}

# KIND is what a read gives in a mod: int, float or bool.
KIND = {"u8": "int", "i8": "int", "i16": "int", "i32": "int", "i64": "int", "f16": "float", "bf16": "float", "f32": "float", "f64": "float", "bool": "bool"}

# SEGMENTS are the types a `segments` buffer (document ids) may have.
SEGMENTS = ("i32", "i64")
