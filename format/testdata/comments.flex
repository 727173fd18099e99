# leading comment

# second paragraph
param A = 1  # trailing A
# between
param B = 2

mask m(b, h, q, kv) {  # header
    # before let
    let d = q - kv  # after let
    d >= 0  # after result
    # before brace
}  # after brace
attention a {  # after open
    # before setting
    mask = m  # after setting
}
# trailing file comment
