//! The terrain x = X_t − h(y) (docs/model.md (T1)–(T4)): a profile h_p that starts at
//! y₀ and blends in from flat ground over L_b,
//!
//!   h(y) = S((y − y₀)/L_b)·h_p(y − y₀),  S(w) = 3w² − 2w³ on [0, 1] (0 before, 1 after),
//!
//! and the frame of a contact point on it: depth d = x − X_t + h(y), outward normal
//! n = c(−1, −σ) and forward tangent t = c(−σ, 1), σ = h′(y), c = 1/√(1 + σ²).
//!
//! Every kind is one form, h_p(u) = s·u + Σₘ Aₘ sin(m k u + φₘ), m = 1..M: flat has no
//! term, the slope only s = tan(angle), the sine one harmonic, the rough M =
//! `terrain_modes`; the sine and the rough profile are tilted by the same s. The batch
//! kernels evaluate that form in every lane alike (branch-free: lanes on different kinds
//! share a block), the m-th harmonic from the first by the angle-addition recurrence;
//! [`Profile::height`] evaluates each sine directly.

use crate::params::{Params, TerrainKind};

/// Harmonics the batch kernels keep among their per-instance constants (the rough
/// profile's default `terrain_modes`); modes beyond these travel with the instance's
/// matrix set (src/integrate/record.rs).
pub const HARMONICS: usize = 8;

/// A terrain profile in the one form every kind shares.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// s = tan(angle): the slope, and the tilt of the sine and the rough profile (0 on
    /// flat ground).
    pub slope: f64,
    /// k = 2π/wavelength of the first harmonic.
    pub k: f64,
    /// Amplitude Aₘ and phase φₘ of harmonic m = 1..M (M = 0 on flat ground and on a
    /// slope, 1 for a sine, `terrain_modes` for the rough profile).
    pub amp: Vec<f64>,
    pub phase: Vec<f64>,
    /// y₀: where the profile starts.
    pub start: f64,
    /// L_b: the blend's length.
    pub blend: f64,
}

/// The height h and slope h′ = dh/dy of the terrain at one y.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Height {
    pub h: f64,
    pub slope: f64,
}

impl Profile {
    /// The profile of `p.terrain` with its parameters.
    pub fn new(p: &Params) -> Profile {
        let mut profile = Profile {
            slope: 0.0,
            k: std::f64::consts::TAU / p.terrain_wavelength,
            amp: Vec::new(),
            phase: Vec::new(),
            start: p.terrain_start,
            blend: p.terrain_blend,
        };
        if p.terrain != TerrainKind::Flat {
            profile.slope = p.terrain_angle.tan();
        }
        match p.terrain {
            TerrainKind::Flat | TerrainKind::Slope => {}
            TerrainKind::Sine => {
                profile.amp = vec![p.terrain_height];
                profile.phase = vec![p.terrain_phase];
            }
            TerrainKind::Rough => {
                let modes = p.terrain_modes;
                let norm = (1..=modes)
                    .map(|m| 1.0 / (2.0 * (m * m) as f64))
                    .sum::<f64>()
                    .sqrt();
                profile.amp = (0..modes)
                    .map(|m| p.terrain_height / ((m + 1) as f64 * norm))
                    .collect();
                profile.phase = rough_phases(p.terrain_seed as u64, modes);
            }
        }
        profile
    }

    /// Whether h ≡ 0 (the paper's flat line).
    pub fn is_flat(&self) -> bool {
        self.slope == 0.0 && self.amp.iter().all(|&a| a == 0.0)
    }

    /// Harmonics a kernel evaluates: the highest m with Aₘ ≠ 0 (0 for flat ground and
    /// for a slope). The batch kernels' one rule for it.
    pub fn harmonics(&self) -> usize {
        self.amp
            .iter()
            .rposition(|&a| a != 0.0)
            .map_or(0, |m| m + 1)
    }

    /// h_p(u) and h_p′(u), each harmonic's sine evaluated directly.
    pub fn raw(&self, u: f64) -> Height {
        let mut hp = Height {
            h: self.slope * u,
            slope: self.slope,
        };
        for m in 0..self.amp.len() {
            if self.amp[m] != 0.0 {
                let mk = (m + 1) as f64 * self.k;
                let arg = mk * u + self.phase[m];
                hp.h += self.amp[m] * arg.sin();
                hp.slope += self.amp[m] * mk * arg.cos();
            }
        }
        hp
    }

    /// h(y) and h′(y): the profile blended in from flat ground (C¹ at both ends).
    pub fn height(&self, y: f64) -> Height {
        let u = y - self.start;
        let w = (u / self.blend).clamp(0.0, 1.0);
        let s = w * w * (3.0 - 2.0 * w);
        if s == 0.0 {
            return Height { h: 0.0, slope: 0.0 };
        }
        let ds = 6.0 * w * (1.0 - w) / self.blend;
        let hp = self.raw(u);
        Height {
            h: s * hp.h,
            slope: ds * hp.h + s * hp.slope,
        }
    }

    /// The contact frame of a point (x, y): its depth and the profile's normal and
    /// tangent there.
    pub fn frame(&self, x: f64, y: f64, x_t: f64) -> Frame {
        let hy = self.height(y);
        let c = 1.0 / (1.0 + hy.slope * hy.slope).sqrt();
        Frame {
            depth: x - x_t + hy.h,
            normal: [-c, -hy.slope * c],
            tangent: [-hy.slope * c, c],
            c,
        }
    }
}

/// Where a contact point stands against the terrain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    /// d = x − X_t + h(y): ≥ 0 is contact.
    pub depth: f64,
    /// Outward unit normal n = c(−1, −σ) and forward unit tangent t = c(−σ, 1).
    pub normal: [f64; 2],
    pub tangent: [f64; 2],
    /// c = 1/√(1 + σ²).
    pub c: f64,
}

impl Frame {
    /// The normal force ε·c·d·n. It acts while the contact does: the caller applies the
    /// rule (d ≥ 0, or a mode an event-locating solver holds).
    pub fn normal_force(&self, epsilon: f64) -> [f64; 2] {
        let f_n = epsilon * self.c * self.depth;
        [f_n * self.normal[0], f_n * self.normal[1]]
    }

    /// The tip's tangential force F_T = −ν v_t − μ_C F_N tanh(v_t/v_C) for the tip
    /// velocity `v` while in contact (F_N = ε·c·d).
    pub fn friction(&self, p: &Params, v: [f64; 2]) -> f64 {
        let vt = v[0] * self.tangent[0] + v[1] * self.tangent[1];
        let viscous = -p.nu * vt;
        if p.mu_c == 0.0 {
            return viscous;
        }
        viscous - p.mu_c * (p.epsilon * self.c * self.depth) * (vt / p.v_c).tanh()
    }

    /// The penalty's stored energy ½ε c² d² where d ≥ 0 (the potential of the normal
    /// force where the ground is straight: flat or a constant slope).
    pub fn energy(&self, epsilon: f64) -> f64 {
        if self.depth >= 0.0 {
            0.5 * epsilon * (self.c * self.depth).powi(2)
        } else {
            0.0
        }
    }
}

/// The phases φₘ = 2π·((zₘ >> 11)·2⁻⁵³) of the `rough` profile, zₘ the SplitMix64 output
/// for the state seed + m·0x9E3779B97F4A7C15 (wrapping), m = 1..modes.
pub fn rough_phases(seed: u64, modes: usize) -> Vec<f64> {
    (1..=modes as u64)
        .map(|m| {
            let mut z = seed.wrapping_add(m.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            std::f64::consts::TAU * ((z >> 11) as f64 * 2f64.powi(-53))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rough profile's phases for terrain_seed = 1, computed outside this code
    /// (SplitMix64 written anew).
    const SEED_1_PHASES: [f64; 8] = [
        3.559811364734998,
        4.685884979595577,
        6.100990234567479,
        2.7919913037146515,
        2.7913974407307074,
        4.793406834189682,
        5.512544377949957,
        3.2865280191075485,
    ];

    fn profile(kind: TerrainKind) -> Profile {
        Profile::new(&Params {
            terrain: kind,
            terrain_angle: 0.1,
            ..Params::default()
        })
    }

    /// h and h′ are continuous at both ends of the blend, and h′ is the derivative of h.
    #[test]
    fn the_blend_is_c1_at_both_ends_and_slope_is_the_derivative() {
        for kind in TerrainKind::ALL {
            let pr = profile(kind);
            for y in [pr.start, pr.start + pr.blend] {
                let (a, b) = (pr.height(y - 1e-9), pr.height(y + 1e-9));
                assert!((a.h - b.h).abs() < 1e-8, "{kind:?} h jumps at {y}");
                assert!(
                    (a.slope - b.slope).abs() < 1e-7,
                    "{kind:?} h' jumps at {y}: {} vs {}",
                    a.slope,
                    b.slope
                );
            }
            for y in [4.0, 5.3, 5.9, 6.4, 9.7] {
                let e = 1e-6;
                let fd = (pr.height(y + e).h - pr.height(y - e).h) / (2.0 * e);
                assert!((fd - pr.height(y).slope).abs() < 1e-7, "{kind:?} at {y}");
            }
            assert_eq!(pr.height(pr.start - 0.5), Height { h: 0.0, slope: 0.0 });
        }
    }

    /// The rough profile's RMS over one wavelength is terrain_height whatever M: the
    /// mean of N equispaced samples of its square is exact for N > 2M (the harmonics
    /// are orthogonal on that grid).
    #[test]
    fn rough_rms_is_the_height_for_any_number_of_modes() {
        for modes in [1, 2, 8, 13, 256] {
            let pr = Profile::new(&Params {
                terrain: TerrainKind::Rough,
                terrain_modes: modes,
                terrain_height: 0.07,
                terrain_wavelength: 3.0,
                ..Params::default()
            });
            assert_eq!(pr.harmonics(), modes);
            let n = 4096;
            let ms = (0..n)
                .map(|i| pr.raw(3.0 * i as f64 / n as f64).h.powi(2))
                .sum::<f64>()
                / n as f64;
            assert!(
                (ms.sqrt() - 0.07).abs() < 1e-12,
                "{modes}: rms {}",
                ms.sqrt()
            );
        }
    }

    /// The default rough ground is eight modes of amplitude H/(m·√(Σ 1/(2m²))) with the
    /// SplitMix64 phases, evaluated as the sum written out (bit for bit): the norm
    /// 0.8739056162292914 and the seed-1 phases computed independently (Python).
    #[test]
    fn default_rough_ground_is_eight_modes_bit_for_bit() {
        let p = Params {
            terrain: TerrainKind::Rough,
            ..Params::default()
        };
        assert_eq!(p.terrain_modes, 8);
        let pr = Profile::new(&p);
        let norm = 0.8739056162292914;
        let phases = SEED_1_PHASES;
        let k = std::f64::consts::TAU / p.terrain_wavelength;
        for u in [0.0, 0.37, 1.9, 5.5, 41.0] {
            let mut h = 0.0 * u;
            for (m, phase) in phases.iter().enumerate() {
                let mk = (m + 1) as f64 * k;
                h += p.terrain_height / ((m + 1) as f64 * norm) * (mk * u + phase).sin();
            }
            assert_eq!(pr.raw(u).h, h, "at u = {u}");
        }
    }

    /// terrain_angle tilts the sine and the rough profile by tan(angle)·u and changes
    /// nothing else; at angle 0 they are untilted.
    #[test]
    fn the_angle_tilts_sine_and_rough() {
        for kind in [TerrainKind::Sine, TerrainKind::Rough] {
            let at = |angle: f64| {
                Profile::new(&Params {
                    terrain: kind,
                    terrain_angle: angle,
                    ..Params::default()
                })
            };
            let (level, tilted) = (at(0.0), at(0.2));
            assert_eq!(level.slope, 0.0);
            for u in [-1.0, 0.0, 0.8, 3.3] {
                let (a, b) = (level.raw(u), tilted.raw(u));
                assert!((b.h - a.h - 0.2f64.tan() * u).abs() < 1e-15, "{kind:?} {u}");
                assert!(
                    (b.slope - a.slope - 0.2f64.tan()).abs() < 1e-14,
                    "{kind:?} {u}"
                );
            }
        }
    }

    #[test]
    fn the_frame_is_orthonormal_and_flat_is_the_papers() {
        let flat = profile(TerrainKind::Flat).frame(1.01, 7.0, 1.0);
        assert_eq!(flat.normal, [-1.0, 0.0]);
        assert_eq!(flat.tangent[1], 1.0);
        assert_eq!(flat.normal_force(1000.0)[0], 1000.0 * (1.0 - 1.01));
        let f = profile(TerrainKind::Slope).frame(0.9, 8.0, 1.0);
        let [n, t] = [f.normal, f.tangent];
        assert!((n[0] * t[0] + n[1] * t[1]).abs() < 1e-15);
        assert!((t[0] * t[0] + t[1] * t[1] - 1.0).abs() < 1e-15);
        // Uphill towards +y: the ground rises (x falls) ahead, d = x − X_t + h.
        assert!((f.depth - (0.9 - 1.0 + 0.1f64.tan() * 3.0)).abs() < 1e-15);
    }

    /// SplitMix64 phases against values computed independently (Python's integers:
    /// `z = (seed + m*0x9E3779B97F4A7C15) & (2**64-1)`, the three mixing steps, then
    /// `2*pi*((z >> 11) * 2**-53)`).
    #[test]
    fn rough_phases_match_an_independent_computation() {
        let expect: [(u64, [f64; 8]); 2] = [
            (1, SEED_1_PHASES),
            (
                4294967295,
                [
                    2.8395166460883954,
                    2.3838312437697953,
                    5.848569150775899,
                    0.4652690746612309,
                    4.493050958778557,
                    6.168301541675101,
                    2.841328492151527,
                    4.673070144712795,
                ],
            ),
        ];
        for (seed, phases) in expect {
            assert_eq!(rough_phases(seed, 8), phases, "seed {seed}");
            // More modes extend the sequence: the first eight stay.
            assert_eq!(rough_phases(seed, 20)[..8], phases, "seed {seed}");
        }
    }
}
