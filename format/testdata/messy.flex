# A file written carelessly: the printer must tidy it and keep every comment.



param   WINDOW=1024      # window
param CAP = 30.0
buffer  doc :i32[ KV ]segments
buffer bias: f32[H,2*KV-1]   # table


# Masks.
mask causal(b,h,q,kv)=q>=kv
mask   local( b , h , q , kv ) = causal(b,h,q,kv)&(q-kv<=WINDOW)   # composed
mask sliding(W)(b, h, q, kv) = q >= kv and q - kv <= W
mask dilated(b, h, q, kv) {   # block body
  let d=abs(q-kv)  # distance
  # only even distances

  d<=2048 and d%2==0
}
mask semi(b, h, q, kv) { let d = q - kv; d >= 0 }
score softcap(score,b,h,q,kv)=CAP*tanh(score/CAP)
score tricky(score, b, h, q, kv) = -2**2 + 2** -1 - (score) if not q==kv else -score
mask multi(b, h, q, kv) = (q >= kv and   # inside brackets
    doc[q] == doc[kv])

attention doc_layer{
  mask=and_masks(causal,same_doc)
  score = softcap;layout=bshd


  window=( 1023,0 )  # a tuple
  one = (1,)
  # last words
}
attention empty {
}
# the end


