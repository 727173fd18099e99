# 2-D neighbourhood attention over a WIDTH-wide image flattened row-major:
# a pixel sees the pixels within R rows and R columns of it.

param WIDTH = 64
param R = 4

mask nat(b, h, q, kv) = abs(q // WIDTH - kv // WIDTH) <= R and abs(q % WIDTH - kv % WIDTH) <= R

attention neighbourhood_2d {
    mask = nat
    layout = bhsd
    dtype = bf16
    head_dim = 128
}
