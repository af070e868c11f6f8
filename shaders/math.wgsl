// Arithmetic-only substitutes for the transcendental functions the model needs.
// SPIR-V's GLSL.std.450 sin/cos/atan/exp/log are defined for 16/32-bit floats only:
// applied to f64 they compile and return garbage, so the f64 kernel never calls them
// on `real` (src/gpu/shader.rs, `f64_transcendentals`: a unit test fails if one slips in).

const PIO2_HI: real = 1.5707963267948966;
const PIO2_LO: real = 6.123233995736766e-17;
const TWO_OVER_PI: real = 0.6366197723675814;

// (sin x, cos x): reduction by π/2 (Cody–Waite, two parts), Taylor to r¹⁷ on |r| ≤ π/4
// (truncation < 1e-19, below f64 round-off).
fn sincos(x: real) -> vec2<real> {
    let k = round(x * TWO_OVER_PI);
    let r = (x - k * PIO2_HI) - k * PIO2_LO;
    let r2 = r * r;
    let s = r * (1.0 + r2 * (-1.0 / 6.0 + r2 * (1.0 / 120.0 + r2 * (-1.0 / 5040.0
        + r2 * (1.0 / 362880.0 + r2 * (-1.0 / 39916800.0 + r2 * (1.0 / 6227020800.0
        + r2 * (-1.0 / 1307674368000.0 + r2 * (1.0 / 355687428096000.0)))))))));
    let c = 1.0 + r2 * (-0.5 + r2 * (1.0 / 24.0 + r2 * (-1.0 / 720.0 + r2 * (1.0 / 40320.0
        + r2 * (-1.0 / 3628800.0 + r2 * (1.0 / 479001600.0 + r2 * (-1.0 / 87178291200.0
        + r2 * (1.0 / 20922789888000.0))))))));
    let quadrant = i32(k) & 3;
    switch quadrant {
        case 0: { return vec2<real>(s, c); }
        case 1: { return vec2<real>(c, -s); }
        case 2: { return vec2<real>(-s, -c); }
        default: { return vec2<real>(-c, s); }
    }
}

// The angle of (d, c) = r(cos θ, sin θ) in (−π, π]: an f32 atan2 refined by one Newton
// step in `real` (error of the f32 guess ~1e-7 → ~1e-21 after the step).
fn angle_of(c: real, d: real) -> real {
    let t0 = real(atan2(f32(c), f32(d)));
    let sc = sincos(t0);
    let r = sqrt(c * c + d * d);
    return t0 + (c * sc.y - d * sc.x) / r;
}
