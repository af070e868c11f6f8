// Error-free transformations for the compensated f32 kernel (src/gpu/kernel.rs,
// `Arith::Compensated`): a double-f32 number is a vec2 (hi, lo) with hi + lo its value.
//
// `one` is 1, read from the matrix buffer at run time. naga marks no operation
// NoContraction, and shader compilers (Mesa's NIR, NVIDIA's) may treat float addition
// as associative: they can prove (a + b) − a = b and cancel an error term to 0.
// Multiplying intermediates by `one` did not stop lavapipe's compiler (measured: the
// two-sum of −2.4000008 and 7.2000003 lost its error inside the kernel). `opaque`
// passes a value through an integer XOR with a run-time zero derived from `one`: the
// value is the same, but no compiler can relate it to the expression it came from.
fn opaque(x: real, one: real) -> real {
    return bitcast<real>(bitcast<u32>(x) ^ (bitcast<u32>(one) ^ 0x3f800000u));
}

// s + e = a + b exactly, s = fl(a + b) (Knuth's two-sum: no ordering of |a|, |b|).
fn two_sum(a: real, b: real, one: real) -> vec2<real> {
    let s = opaque(a + b, one);
    let bb = opaque(s - a, one);
    return vec2<real>(s, (a - (s - bb)) + (b - bb));
}

// hi + lo = a exactly, each with at most 12 significant bits, so that products of
// halves are exact in f32. hi keeps a's sign, exponent and top 11 stored bits: a bit
// mask, which no compiler rewrites (Dekker's 4097·a split did not survive lavapipe's
// compiler, which fuses the 4097·a − a it contains).
fn split(a: real) -> vec2<real> {
    let hi = bitcast<real>(bitcast<u32>(a) & 0xfffff000u);
    return vec2<real>(hi, a - hi);
}

// p + e = a·b exactly, p = fl(a·b) (Dekker's product from the halves; not a fused
// multiply-add, which Vulkan lets a driver compute as a multiply and an add).
fn two_prod(a: real, b: real, one: real) -> vec2<real> {
    let p = opaque(a * b, one);
    let x = split(a);
    let y = split(b);
    let e1 = opaque(x.x * y.x - p, one);
    let e2 = opaque(e1 + x.x * y.y, one);
    let e3 = opaque(e2 + x.y * y.x, one);
    return vec2<real>(p, e3 + x.y * y.y);
}

// x + y in double-f32: the high words' sum exact, the low words added in f32.
fn df_add(x: vec2<real>, y: vec2<real>, one: real) -> vec2<real> {
    let s = two_sum(x.x, y.x, one);
    return vec2<real>(s.x, s.y + (x.y + y.y));
}

// x·f in double-f32 for a double-f32 x and an f32 f.
fn df_mul_f(x: vec2<real>, f: real, one: real) -> vec2<real> {
    let p = two_prod(x.x, f, one);
    return vec2<real>(p.x, p.y + x.y * f);
}
