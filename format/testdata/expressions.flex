# Every expression form, written loosely.
param P=2**-1**2
param N=-2**2
param T=(1023,0)
param ONE=(1,)
param BIG=1_000_000+0x7f+0o17+0b101
param F=1e-4*.5/1.
mask band(b,h,q,kv)=0<=q-kv<=P
mask cond(b,h,q,kv)=q>=kv if not b else q<=kv
mask nested(b,h,q,kv)=(q>=kv)and(not(q<kv)or~(q==kv))
mask bits(b,h,q,kv)=(q>=kv)&(q-kv<=4)|(kv==0)
score arith(score,b,h,q,kv)=score//2%3-score*-1+(+score)
score calls(score,b,h,q,kv)=torch.where(q>=kv,torch.tanh(score/30.0)*30.0,-math.inf)
mask fact(W)(b,h,q,kv)=q>=kv and q-kv<=W
mask use(b,h,q,kv)=fact(16)(b,h,q,kv,)
mask multi(b, h, q, kv) = and_masks(
    band,     # first
    cond,
)(b, h, q, kv)

# Lambdas written in place: the mask itself, an argument, the score.
attention inline {
    mask = or_masks(causal,   lambda b, h, q_idx, kv_idx:  kv_idx < 64)
    score = lambda score, b, h, q_idx, kv_idx: score*2
}
